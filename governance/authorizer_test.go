package governance

import (
	"context"
	"errors"
	"testing"
)

func TestScopeDecision(t *testing.T) {
	read, _ := ParseScopes([]string{"ns:a:r"})
	write, _ := ParseScopes([]string{"ns:a:w"})
	every, _ := ParseScopes([]string{"ns:*:rw"})
	tests := []struct {
		name   string
		scopes Scopes
		action Action
		ns     string
		allow  bool
		reason string
	}{
		{"s3 action: grants decide", nil, ActionReadObject, "", true, reasonScope},
		{"minted credential at the catalog", nil, ActionLoadTable, "a", false, reasonNoScopes},
		{"read scope loads", read, ActionLoadTable, "a", true, reasonScope},
		{"read scope elsewhere", read, ActionLoadTable, "b", false, reasonNoRead},
		{"read scope cannot commit", read, ActionCommitTable, "a", false, reasonNoWrite},
		{"write-only cannot load", write, ActionLoadTable, "a", false, reasonNoRead},
		{"write-only commits", write, ActionCommitTable, "a", true, reasonScope},
		{"namespace writer cannot create namespaces", write, ActionCreateNamespace, "a", false, reasonNoAdmin},
		{"every-namespace writer creates namespaces", every, ActionCreateNamespace, "new", true, reasonScope},
		{"signing: the handler decides by operation", read, ActionSignRequest, "a", true, reasonScope},
		{"unknown action", AllScopes, ActionUnknown, "a", false, reasonUnknownVerb},
		{"governance read without the scope", every, ActionReadGovernance, "", false, reasonNoGovernance},
		{"governance admin with *", AllScopes, ActionAdminGovernance, "", true, reasonScope},
		{"out of range", AllScopes, actionEnd + 3, "a", false, reasonUnknownVerb},
	}
	for _, tt := range tests {
		p := &Principal{ID: "p", Scopes: tt.scopes}
		r := NamespaceResource(tt.ns)
		d, err := ScopeOnly{}.Authorize(context.Background(), p, tt.action, &r)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if d.Allow != tt.allow || d.Reason != tt.reason {
			t.Errorf("%s: %s on %q = %+v, want allow=%v reason %q", tt.name, tt.action, tt.ns, d, tt.allow, tt.reason)
		}
	}
}

type failing struct{ ScopeOnly }

func (failing) Authorize(context.Context, *Principal, Action, *Resource) (Decision, error) {
	return Decision{Allow: true}, errors.New("boom")
}

func TestAuthorizeEach(t *testing.T) {
	ctx := context.Background()
	p := &Principal{ID: "p", Scopes: AllScopes}
	rs := []Resource{ObjectResource([]byte("b"), []byte("k1")), ObjectResource([]byte("b"), []byte("k2"))}
	out := make([]Decision, 2)
	if err := (ScopeOnly{}).AuthorizeBatch(ctx, p, ActionDeleteObject, rs, out); err != nil {
		t.Fatal(err)
	}
	for i, d := range out {
		if !d.Allow {
			t.Errorf("out[%d] = %+v", i, d)
		}
	}
	if err := AuthorizeEach(ctx, ScopeOnly{}, p, ActionDeleteObject, rs, out[:1]); !errors.Is(err, ErrShortOutput) {
		t.Errorf("short out: %v", err)
	}
	if err := AuthorizeEach(ctx, failing{}, p, ActionDeleteObject, rs, out); err == nil {
		t.Error("an Authorizer error must surface (and deny)")
	}
}

func TestActionNames(t *testing.T) {
	seen := map[string]Action{}
	for a := ActionUnknown; a < actionEnd; a++ {
		n := a.String()
		if n == "" {
			t.Errorf("action %d has no name", a)
		}
		if b, dup := seen[n]; dup {
			t.Errorf("actions %d and %d are both %q", a, b, n)
		}
		seen[n] = a
		if a.IsS3() {
			if c, _ := a.Needs(); c != 0 {
				t.Errorf("%s is an S3 action with a scope need", a)
			}
		}
	}
	if (actionEnd+1).String() != "Unknown" || (actionEnd + 1).IsWrite() {
		t.Error("out-of-range actions must be Unknown and not writes")
	}
}
