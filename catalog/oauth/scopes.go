package oauth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/duckicelake/duckicelake/governance"
)

// grantScopes decides the scopes of a new token. Scopes outside this
// catalog's grammar ("catalog", which Iceberg clients request by default,
// or DuckDB's "PRINCIPAL_ROLE:ALL") ask for nothing in particular; with no
// other scope requested the token gets everything allowed. Otherwise each
// requested scope must be covered by the allowed ones.
func grantScopes(allowed []string, requested string) ([]string, error) {
	have, err := governance.ParseScopes(allowed)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Fields(requested) {
		if !governance.IsScope(r) {
			continue
		}
		sc, err := governance.ParseScope(r)
		if err != nil {
			return nil, err
		}
		if !have.Covers(sc) {
			return nil, fmt.Errorf("scope %q is not allowed for this client", r)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return append([]string{}, allowed...), nil
	}
	return out, nil
}

// narrowScopes is the intersection of a token's scopes with what its
// client is allowed now: a token scope the client still covers stays as it
// is; one it covers only in part becomes the parts both allow (token "*",
// client "ns:a:r": "ns:a:r"; token "ns:a:rw", client "ns:*:r": "ns:a:r").
// Scopes that fail to parse are dropped: the result only ever narrows.
func narrowScopes(token, client []string) []string {
	have, err := governance.ParseScopes(client)
	if err != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, t := range token {
		ts, err := governance.ParseScope(t)
		if err != nil {
			continue
		}
		if have.Covers(ts) {
			add(t)
			continue
		}
		for _, cs := range have {
			for _, s := range intersect(ts, cs) {
				add(s)
			}
		}
	}
	return out
}

// intersect is what both scopes allow, as scope texts.
func intersect(a, b governance.Scope) []string {
	var out []string
	if c := a.Cap & b.Cap; c != 0 {
		ns, anyNS, ok := "", false, true
		switch {
		case a.AnyNamespace && b.AnyNamespace:
			anyNS = true
		case a.AnyNamespace:
			ns = b.Namespace
		case b.AnyNamespace || a.Namespace == b.Namespace:
			ns = a.Namespace
		default:
			ok = false
		}
		if ok {
			if anyNS {
				ns = "*"
			}
			out = append(out, "ns:"+ns+":"+capText(c))
		}
	}
	switch g := a.Gov & b.Gov; {
	case g&governance.GovAdmin != 0:
		out = append(out, governance.ScopeGovernanceAdmin)
	case g&governance.GovRead != 0:
		out = append(out, governance.ScopeGovernanceRead)
	}
	if a.Broker && b.Broker {
		out = append(out, governance.ScopeBroker)
	}
	return out
}

func capText(c governance.Capability) string {
	switch {
	case c&governance.CapRead != 0 && c&governance.CapWrite != 0:
		return "rw"
	case c&governance.CapWrite != 0:
		return "w"
	}
	return "r"
}

// narrowRoles keeps the token's roles the client still has.
func narrowRoles(token, client []string) []string {
	var out []string
	for _, r := range token {
		if slices.Contains(client, r) {
			out = append(out, r)
		}
	}
	return out
}
