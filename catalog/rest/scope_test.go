package rest

import (
	"slices"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		in   string
		want scope
		err  string
	}{
		{in: "*", want: scope{anyNS: true, cap: capAll}},
		{in: "ns:sales:r", want: scope{ns: "sales", cap: capRead}},
		{in: "ns:sales:w", want: scope{ns: "sales", cap: capWrite}},
		{in: "ns:sales:rw", want: scope{ns: "sales", cap: capAll}},
		{in: "ns:sales:*", want: scope{ns: "sales", cap: capAll}},
		{in: "ns:*:r", want: scope{anyNS: true, cap: capRead}},
		{in: "ns:a:b:r", want: scope{ns: "a:b", cap: capRead}},
		{in: "ns::r", err: "want * or"},
		{in: "ns:sales", err: "want * or"},
		{in: "ns:sales:x", err: "capability"},
		{in: "ns:sales:", err: "capability"},
		{in: "sales:r", err: "want * or"},
		{in: "catalog", err: "want * or"},
		{in: "", err: "want * or"},
	}
	for _, tt := range tests {
		got, err := parseScope(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseScope(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseScope(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestScopeSetAllows(t *testing.T) {
	tests := []struct {
		scopes []string
		ns     string
		need   capability
		want   bool
	}{
		{[]string{"*"}, "sales", capAll, true},
		{[]string{"*"}, "", capWrite, true},
		{[]string{"ns:sales:r"}, "sales", capRead, true},
		{[]string{"ns:sales:r"}, "sales", capWrite, false},
		{[]string{"ns:sales:r"}, "hr", capRead, false},
		{[]string{"ns:sales:r"}, "", capRead, false}, // catalog-level needs a wildcard
		{[]string{"ns:sales:r", "ns:sales:w"}, "sales", capAll, true},
		{[]string{"ns:*:r"}, "anything", capRead, true},
		{[]string{"ns:*:r"}, "anything", capWrite, false},
		{[]string{"ns:*:w"}, "", capWrite, true},
		{[]string{"ns:*:r", "ns:sales:w"}, "sales", capAll, true},
		{[]string{"ns:*:r", "ns:sales:w"}, "hr", capWrite, false},
		{[]string{"ns:sales:rw"}, "Sales", capRead, false}, // names are case-sensitive
		{nil, "sales", capRead, false},
	}
	for _, tt := range tests {
		set, err := parseScopes(tt.scopes)
		if err != nil {
			t.Fatal(err)
		}
		if got := set.allows(tt.ns, tt.need); got != tt.want {
			t.Errorf("%v allows(%q, %b) = %v, want %v", tt.scopes, tt.ns, tt.need, got, tt.want)
		}
	}
}

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
		{[]string{"ns:*:rw"}, "*", []string{"*"}, ""},
		{[]string{"ns:sales:rw"}, "*", nil, "not allowed"},
		{[]string{"ns:sales:rw"}, "PRINCIPAL_ROLE:ALL", []string{"ns:sales:rw"}, ""},
		{[]string{"ns:sales:rw"}, "ns:sales", nil, "want * or"},
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
	if !c.secretMatches("right") || c.secretMatches("wrong") || c.secretMatches("") || c.secretMatches("right ") {
		t.Error("secretMatches compares wrongly")
	}
}
