package governance

import (
	"fmt"
	"strings"

	"github.com/duckicelake/duckicelake/internal/creds"
)

// Capability is what a scope allows on a namespace.
type Capability uint8

// The capabilities. CapWrite on every namespace at once ("ns:*:w" or "*")
// is what catalog-level changes (creating and dropping namespaces) need.
const (
	CapRead Capability = 1 << iota
	CapWrite

	CapAll = CapRead | CapWrite
)

// GovCapability is what a scope allows on governance itself.
type GovCapability uint8

// The governance capabilities: reading the configuration (policies,
// grants, everyone's effective policies and the whole audit trail), and
// authoring it.
const (
	GovRead GovCapability = 1 << iota
	GovAdmin
)

// Scope is one parsed OAuth scope: "*", "ns:<namespace>:<r|w|rw|*>",
// "governance:read", "governance:admin" or "broker".
type Scope struct {
	// Namespace is the namespace the scope names; empty with
	// AnyNamespace.
	Namespace string
	// AnyNamespace is set for "*" and "ns:*:…".
	AnyNamespace bool
	Cap          Capability
	// Gov is what the scope allows on governance ("governance:…", "*").
	Gov GovCapability
	// Broker may assert the principal it speaks for ("broker", "*").
	Broker bool
}

// Scope texts beside the namespace scopes.
const (
	ScopeGovernanceRead  = "governance:read"
	ScopeGovernanceAdmin = "governance:admin"
	ScopeBroker          = "broker"
)

// ParseScope parses "*", "ns:<namespace>:<r|w|rw|*>", "governance:read",
// "governance:admin" or "broker". The namespace is everything between "ns:"
// and the last ':', so it may itself contain ':'; "*" as the namespace
// means every namespace.
func ParseScope(s string) (Scope, error) {
	switch s {
	case "*":
		return Scope{AnyNamespace: true, Cap: CapAll, Gov: GovRead | GovAdmin, Broker: true}, nil
	case ScopeGovernanceRead:
		return Scope{Gov: GovRead}, nil
	case ScopeGovernanceAdmin:
		return Scope{Gov: GovRead | GovAdmin}, nil
	case ScopeBroker:
		return Scope{Broker: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "ns:")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return Scope{}, fmt.Errorf("scope %q: want *, ns:<namespace>:<r|w|rw|*>, governance:read, governance:admin or broker", s)
	}
	sc := Scope{Namespace: rest[:i]}
	switch rest[i+1:] {
	case "r":
		sc.Cap = CapRead
	case "w":
		sc.Cap = CapWrite
	case "rw", "wr", "*":
		sc.Cap = CapAll
	default:
		return Scope{}, fmt.Errorf("scope %q: capability %q: want r, w, rw or *", s, rest[i+1:])
	}
	if sc.Namespace == "*" {
		sc.Namespace, sc.AnyNamespace = "", true
	}
	return sc, nil
}

// Scopes are a token's parsed scopes.
type Scopes []Scope

// AllScopes is the scope set of "*": everything.
var AllScopes = Scopes{{AnyNamespace: true, Cap: CapAll, Gov: GovRead | GovAdmin, Broker: true}}

// IsScope reports whether s is in this catalog's scope grammar (clients
// also request scopes of other systems: "catalog", "PRINCIPAL_ROLE:ALL").
func IsScope(s string) bool {
	switch s {
	case "*", ScopeGovernanceRead, ScopeGovernanceAdmin, ScopeBroker:
		return true
	}
	return strings.HasPrefix(s, "ns:")
}

// ParseScopes parses every scope of list.
func ParseScopes(list []string) (Scopes, error) {
	out := make(Scopes, 0, len(list))
	for _, s := range list {
		sc, err := ParseScope(s)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// Allows reports whether the set grants every bit of need on namespace ns;
// ns "" asks about every namespace at once (catalog-level operations).
func (set Scopes) Allows(ns string, need Capability) bool {
	var have Capability
	for _, s := range set {
		if s.AnyNamespace || ns != "" && s.Namespace == ns {
			have |= s.Cap
		}
	}
	return have&need == need
}

// CanRead reports whether the set may read namespace ns.
func (set Scopes) CanRead(ns string) bool { return set.Allows(ns, CapRead) }

// CanWrite reports whether the set may change namespace ns.
func (set Scopes) CanWrite(ns string) bool { return set.Allows(ns, CapWrite) }

// CanAdmin reports whether the set may create or drop namespaces: write on
// every namespace.
func (set Scopes) CanAdmin() bool { return set.Allows("", CapWrite) }

// Governs reports whether the set grants every bit of need on governance.
func (set Scopes) Governs(need GovCapability) bool {
	var have GovCapability
	for _, s := range set {
		have |= s.Gov
	}
	return have&need == need
}

// IsBroker reports whether the set may assert the principal a request
// speaks for (broker delegation).
func (set Scopes) IsBroker() bool {
	for _, s := range set {
		if s.Broker {
			return true
		}
	}
	return false
}

// ObjectAccess is the access to a namespace's object keys the set allows:
// read and list with CapRead, write with CapWrite. A write-only scope gets
// no read: it may put files, not read what is there.
func (set Scopes) ObjectAccess(ns string) creds.Access {
	var a creds.Access
	if set.CanRead(ns) {
		a |= creds.Read | creds.List
	}
	if set.CanWrite(ns) {
		a |= creds.Write
	}
	return a
}

// Covers reports whether the set grants everything o grants.
func (set Scopes) Covers(o Scope) bool {
	if o.Gov != 0 && !set.Governs(o.Gov) || o.Broker && !set.IsBroker() {
		return false
	}
	// Capabilities may come from several scopes (ns:a:r and ns:a:w cover
	// ns:a:rw), so check each bit.
	for _, bit := range []Capability{CapRead, CapWrite} {
		if o.Cap&bit == 0 {
			continue
		}
		ok := false
		for _, s := range set {
			if s.Cap&bit != 0 && (s.AnyNamespace || !o.AnyNamespace && s.Namespace == o.Namespace) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
