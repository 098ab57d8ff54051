package rest

import (
	"fmt"
	"strings"
)

// capability is what a scope allows on a namespace.
type capability uint8

const (
	capRead capability = 1 << iota
	capWrite

	capAll = capRead | capWrite
)

// scope is one parsed scope string.
type scope struct {
	ns    string // namespace name; "" with anyNS
	anyNS bool
	cap   capability
}

// parseScope parses "*" or "ns:<namespace>:<r|w|rw|*>". The namespace is
// everything between "ns:" and the last ':', so it may itself contain ':';
// "*" as the namespace means every namespace.
func parseScope(s string) (scope, error) {
	if s == "*" {
		return scope{anyNS: true, cap: capAll}, nil
	}
	rest, ok := strings.CutPrefix(s, "ns:")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return scope{}, fmt.Errorf("scope %q: want * or ns:<namespace>:<r|w|rw|*>", s)
	}
	sc := scope{ns: rest[:i]}
	switch rest[i+1:] {
	case "r":
		sc.cap = capRead
	case "w":
		sc.cap = capWrite
	case "rw", "wr", "*":
		sc.cap = capAll
	default:
		return scope{}, fmt.Errorf("scope %q: capability %q: want r, w, rw or *", s, rest[i+1:])
	}
	if sc.ns == "*" {
		sc.ns, sc.anyNS = "", true
	}
	return sc, nil
}

// scopeSet is a token's parsed scopes.
type scopeSet []scope

func parseScopes(list []string) (scopeSet, error) {
	out := make(scopeSet, 0, len(list))
	for _, s := range list {
		sc, err := parseScope(s)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// allows reports whether the set grants every bit of need on namespace ns;
// ns "" asks about every namespace at once (catalog-level operations).
func (set scopeSet) allows(ns string, need capability) bool {
	var have capability
	for _, s := range set {
		if s.anyNS || ns != "" && s.ns == ns {
			have |= s.cap
		}
	}
	return have&need == need
}

// covers reports whether the set grants everything o grants.
func (set scopeSet) covers(o scope) bool {
	// Capabilities may come from several scopes (ns:a:r and ns:a:w cover
	// ns:a:rw), so check each bit.
	for _, bit := range []capability{capRead, capWrite} {
		if o.cap&bit == 0 {
			continue
		}
		ok := false
		for _, s := range set {
			if s.cap&bit != 0 && (s.anyNS || !o.anyNS && s.ns == o.ns) {
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
