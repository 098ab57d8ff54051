package oauth

import (
	"slices"
	"strings"
	"testing"
)

func TestGrantScopes(t *testing.T) {
	tests := []struct {
		allowed   []string
		requested string
		want      []string
		err       string
	}{
		{[]string{"ns:sales:rw"}, "", []string{"ns:sales:rw"}, ""},
		{[]string{"ns:sales:rw"}, "catalog", []string{"ns:sales:rw"}, ""},
		{[]string{"ns:sales:rw"}, "ns:sales:r", []string{"ns:sales:r"}, ""},
		{[]string{"ns:sales:rw"}, "catalog ns:sales:r", []string{"ns:sales:r"}, ""},
		{[]string{"*"}, "ns:hr:w ns:sales:r", []string{"ns:hr:w", "ns:sales:r"}, ""},
		{[]string{"ns:*:r"}, "ns:hr:r", []string{"ns:hr:r"}, ""},
		{[]string{"ns:sales:r", "ns:sales:w"}, "ns:sales:rw", []string{"ns:sales:rw"}, ""},
		{[]string{"ns:sales:r"}, "ns:sales:w", nil, "not allowed"},
		{[]string{"ns:sales:r"}, "ns:*:r", nil, "not allowed"},
		// "*" also means governance admin and broker: more than every namespace.
		{[]string{"ns:*:rw"}, "*", nil, "not allowed"},
		{[]string{"*"}, "governance:admin", []string{"governance:admin"}, ""},
		{[]string{"ns:sales:rw"}, "governance:read", nil, "not allowed"},
		{[]string{"ns:sales:rw"}, "*", nil, "not allowed"},
		{[]string{"ns:sales:rw"}, "PRINCIPAL_ROLE:ALL", []string{"ns:sales:rw"}, ""},
		{[]string{"ns:sales:rw"}, "ns:sales", nil, "want *,"},
		{nil, "", []string{}, ""},
	}
	for _, tt := range tests {
		got, err := grantScopes(tt.allowed, tt.requested)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("grantScopes(%v, %q) = %v, %v; want error containing %q", tt.allowed, tt.requested, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("grantScopes(%v, %q) = %v, %v; want %v", tt.allowed, tt.requested, got, err, tt.want)
		}
	}
}

func TestParseClients(t *testing.T) {
	got, err := ParseClients(" etl:s3cr:et|ns:sales:rw ns:hr:r|writer auditor , admin:pw|*,bare:x ")
	if err != nil {
		t.Fatal(err)
	}
	want := []Client{
		{ID: "etl", Secret: "s3cr:et", Scopes: []string{"ns:sales:rw", "ns:hr:r"}, Roles: []string{"writer", "auditor"}},
		{ID: "admin", Secret: "pw", Scopes: []string{"*"}},
		{ID: "bare", Secret: "x"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d clients, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Secret != w.Secret || !slices.Equal(g.Scopes, w.Scopes) || !slices.Equal(g.Roles, w.Roles) {
			t.Errorf("client %d = %+v, want %+v", i, g, w)
		}
	}
	if got, err := ParseClients(""); err != nil || len(got) != 0 {
		t.Errorf("ParseClients(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"noseparator|*", ":secret|*", "id:|*", "id:s|ns:x:q", "id:s|*|r|acct"} {
		if _, err := ParseClients(bad); err == nil {
			t.Errorf("ParseClients(%q) succeeded", bad)
		}
	}
}

func TestClientSecretMatches(t *testing.T) {
	c := Client{ID: "a", Secret: "right"}
	if !c.SecretMatches("right") || c.SecretMatches("wrong") || c.SecretMatches("") || c.SecretMatches("right ") {
		t.Error("SecretMatches compares wrongly")
	}
}
