package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunCommands(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{[]string{"version"}, 0, "duckicelake dev", ""},
		{[]string{"help"}, 0, "usage: duckicelake", ""},
		{[]string{"help"}, 0, "\n  init      create the DuckLake catalog", ""},
		{[]string{"help"}, 0, "revoke (by vend id or token, in the catalog)", ""},
		{[]string{"help"}, 0, "Iceberg REST catalog (/v1/…)", ""},
		{nil, 2, "", "usage: duckicelake"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"creds"}, 2, "", "usage: duckicelake creds <command>"},
		{[]string{"creds", "help"}, 0, "mint ", ""},
		{[]string{"creds", "frob"}, 2, "", `unknown command "frob"`},
		{[]string{"creds", "mint", "-h"}, 0, "usage: duckicelake creds mint", ""},
		{[]string{"help"}, 0, "creds", ""},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(tt.args, &out, &errOut)
		if code != tt.wantCode {
			t.Errorf("run(%q) = %d, want %d", tt.args, code, tt.wantCode)
		}
		if !strings.Contains(out.String(), tt.wantOut) {
			t.Errorf("run(%q) stdout = %q, want it to contain %q", tt.args, out.String(), tt.wantOut)
		}
		if !strings.Contains(errOut.String(), tt.wantErr) {
			t.Errorf("run(%q) stderr = %q, want it to contain %q", tt.args, errOut.String(), tt.wantErr)
		}
	}
}
