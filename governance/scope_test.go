package governance

import (
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/internal/creds"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		in   string
		want Scope
		err  string
	}{
		{in: "*", want: Scope{AnyNamespace: true, Cap: CapAll, Gov: GovRead | GovAdmin, Broker: true}},
		{in: "ns:sales:r", want: Scope{Namespace: "sales", Cap: CapRead}},
		{in: "ns:sales:w", want: Scope{Namespace: "sales", Cap: CapWrite}},
		{in: "ns:sales:rw", want: Scope{Namespace: "sales", Cap: CapAll}},
		{in: "ns:sales:*", want: Scope{Namespace: "sales", Cap: CapAll}},
		{in: "ns:*:r", want: Scope{AnyNamespace: true, Cap: CapRead}},
		{in: "ns:a:b:r", want: Scope{Namespace: "a:b", Cap: CapRead}},
		{in: "governance:read", want: Scope{Gov: GovRead}},
		{in: "governance:admin", want: Scope{Gov: GovRead | GovAdmin}},
		{in: "broker", want: Scope{Broker: true}},
		{in: "governance:write", err: "want *,"},
		{in: "ns::r", err: "want *,"},
		{in: "ns:sales", err: "want *,"},
		{in: "ns:sales:x", err: "capability"},
		{in: "ns:sales:", err: "capability"},
		{in: "sales:r", err: "want *,"},
		{in: "catalog", err: "want *,"},
		{in: "", err: "want *,"},
	}
	for _, tt := range tests {
		got, err := ParseScope(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseScope(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestScopesAllows(t *testing.T) {
	tests := []struct {
		scopes []string
		ns     string
		need   Capability
		want   bool
	}{
		{[]string{"*"}, "sales", CapAll, true},
		{[]string{"*"}, "", CapWrite, true},
		{[]string{"ns:sales:r"}, "sales", CapRead, true},
		{[]string{"ns:sales:r"}, "sales", CapWrite, false},
		{[]string{"ns:sales:r"}, "hr", CapRead, false},
		{[]string{"ns:sales:r"}, "", CapRead, false}, // catalog-level needs a wildcard
		{[]string{"ns:sales:r", "ns:sales:w"}, "sales", CapAll, true},
		{[]string{"ns:*:r"}, "anything", CapRead, true},
		{[]string{"ns:*:r"}, "anything", CapWrite, false},
		{[]string{"ns:*:w"}, "", CapWrite, true},
		{[]string{"ns:*:r", "ns:sales:w"}, "sales", CapAll, true},
		{[]string{"ns:*:r", "ns:sales:w"}, "hr", CapWrite, false},
		{[]string{"ns:sales:rw"}, "Sales", CapRead, false}, // names are case-sensitive
		{nil, "sales", CapRead, false},
	}
	for _, tt := range tests {
		set, err := ParseScopes(tt.scopes)
		if err != nil {
			t.Fatal(err)
		}
		if got := set.Allows(tt.ns, tt.need); got != tt.want {
			t.Errorf("%v Allows(%q, %b) = %v, want %v", tt.scopes, tt.ns, tt.need, got, tt.want)
		}
	}
}

func TestScopesCovers(t *testing.T) {
	tests := []struct {
		have []string
		want string
		ok   bool
	}{
		{[]string{"ns:sales:rw"}, "ns:sales:r", true},
		{[]string{"ns:sales:r", "ns:sales:w"}, "ns:sales:rw", true},
		{[]string{"ns:sales:r"}, "ns:sales:w", false},
		{[]string{"ns:sales:r"}, "ns:*:r", false},
		// "*" is also governance admin and broker: every namespace is not all.
		{[]string{"ns:*:rw"}, "*", false},
		{[]string{"*"}, "governance:admin", true},
		{[]string{"governance:admin"}, "governance:read", true},
		{[]string{"governance:read"}, "governance:admin", false},
		{[]string{"ns:*:rw"}, "broker", false},
		{[]string{"ns:sales:rw"}, "*", false},
		{[]string{"*"}, "ns:hr:w", true},
	}
	for _, tt := range tests {
		have, _ := ParseScopes(tt.have)
		o, err := ParseScope(tt.want)
		if err != nil {
			t.Fatal(err)
		}
		if got := have.Covers(o); got != tt.ok {
			t.Errorf("%v Covers(%q) = %v, want %v", tt.have, tt.want, got, tt.ok)
		}
	}
}

func TestObjectAccess(t *testing.T) {
	tests := []struct {
		scopes []string
		want   creds.Access
	}{
		{[]string{"ns:a:r"}, creds.Read | creds.List},
		{[]string{"ns:a:w"}, creds.Write},
		{[]string{"ns:a:rw"}, creds.Read | creds.List | creds.Write},
		{[]string{"ns:b:rw"}, 0},
		{[]string{"*"}, creds.Read | creds.List | creds.Write},
	}
	for _, tt := range tests {
		set, _ := ParseScopes(tt.scopes)
		if got := set.ObjectAccess("a"); got != tt.want {
			t.Errorf("%v ObjectAccess(a) = %v, want %v", tt.scopes, got, tt.want)
		}
	}
}
