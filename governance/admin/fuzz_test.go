package admin

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/store"
)

// FuzzAuthoring sends authoring bodies — the JSON a client POSTs to
// …/governance/{kind} — through the service against a real DuckLake
// catalog, with the seeds' example already authored, and holds it to what
// the REST layer promises:
//
//   - a body is either applied or refused with an *Error (400, 404 or
//     409); anything else — a Postgres error over a NUL byte, DuckDB
//     rejecting something the validation let through — would be a 500;
//   - whatever was applied still loads and plans, and the plan's view SQL
//     for bob and for alice runs in DuckDB over the table (a body that
//     passes validation and fails on every read would be a mask no one can
//     read through).
//
// Inputs are (kind, body); kinds outside the list and bodies that are not
// JSON objects are the REST layer's 400 and skipped here.
func FuzzAuthoring(f *testing.F) {
	seeds := []struct {
		kind byte
		body string
	}{
		{0, `{"namespace":"pii","name":"phone"}`},
		{0, `{"namespace":"pii","name":"a\u0000b"}`},
		{1, `{"object-kind":"column","schema":"analytics","object":"customers","column":"country","tag-namespace":"pii","tag-name":"email"}`},
		{1, `{"object-kind":"table","schema":"analytics","object":"nosuch","tag-namespace":"pii","tag-name":"email"}`},
		{2, `{"name":"m2","signature":"(val VARCHAR)","body":"upper(val)","unmasked-roles":["r"]}`},
		{2, `{"name":"m3","signature":"(val VARCHAR)","body":"(SELECT 1)"}`},
		{2, `{"name":"m4","signature":"(val INTEGER)","body":"val // 0"}`},
		{2, `{"name":"m5","action":"show-last-4"}`},
		{2, `{"name":"mask_email","signature":"(val VARCHAR)","body":"'x'; DROP TABLE t"}`},
		{3, `{"name":"r1","body":"country = 'EU'","columns":["country"],"unmasked-roles":["admin"]}`},
		{3, `{"name":"r2","body":"mrr / 0 > 1","columns":["mrr"]}`},
		{3, `{"name":"r3","body":"read_csv('/etc/passwd') IS NULL"}`},
		{4, `{"policy-kind":"row-access","policy-name":"r1","target-kind":"table","schema":"analytics","object":"customers"}`},
		{4, `{"policy-kind":"masking","policy-name":"mask_email","target-kind":"table","schema":"analytics","object":"customers"}`},
		{4, `{"policy-kind":"masking","policy-name":"m2","target-kind":"column","schema":"analytics","object":"customers","column":"country"}`},
		{5, `{"name":"auditor"}`},
		{6, `{"role":"auditor","principal":"bob"}`},
		{7, `{"object-kind":"table","schema":"analytics","object":"orders","privilege":"select","role":"auditor"}`},
		{7, `{"object-kind":"table","schema":"analytics","object":"orders","privilege":"insert","role":"auditor"}`},
	}
	for _, s := range seeds {
		f.Add(s.kind, []byte(s.body))
	}
	fx := newFixture(f)
	seedGoverned(f, fx)
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err, ok := put(ctx, fx.svc, kind, body)
		if !ok {
			t.Skip()
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("kind %d %s: an untyped error (a 500): %v", kind, body, err)
		}
		if e != nil && e.Kind != Invalid && e.Kind != NotFound && e.Kind != Conflict {
			t.Fatalf("kind %d %s: refusal of kind %d", kind, body, e.Kind)
		}
		st, err := fx.Store.Load(ctx)
		if err != nil {
			t.Fatalf("the state no longer loads after %s: %v", body, err)
		}
		r, err := fx.Store.Resolve(ctx, store.ObjectName{Kind: model.ObjectTable, Schema: "analytics", Table: "customers"})
		if err != nil {
			t.Fatal(err)
		}
		tb := plan.TableOf("analytics", ducklakeTable(r), r.Columns)
		tb.Name = "customers"
		for _, who := range []string{"bob", "alice"} {
			pl := plan.Build(st, plan.Principal{Roles: model.NewRoleSet(st.GrantedRoles(who))}, tb, plan.Options{})
			if !pl.Visible || !pl.Governed() {
				continue
			}
			q := pl.SelectFrom(tb, "lake.analytics.customers")
			rows, err := fx.Duck.QueryContext(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err != nil {
				t.Fatalf("after %s, %s's plan does not run: %s: %v", body, who, q, err)
			}
		}
	})
}

// put decodes body as the kind's request and applies it; ok is false for
// what the REST layer refuses before the service (unknown kind, not JSON).
func put(ctx context.Context, svc *Service, kind byte, body []byte) (err error, ok bool) {
	dec := func(v any) bool { return json.Unmarshal(body, v) == nil }
	switch kind % 8 {
	case 0:
		var in Tag
		if !dec(&in) {
			return nil, false
		}
		return svc.PutTag(ctx, admin, in), true
	case 1:
		var in ObjectTag
		if !dec(&in) {
			return nil, false
		}
		return svc.PutObjectTag(ctx, admin, in), true
	case 2:
		var in MaskingPolicy
		if !dec(&in) {
			return nil, false
		}
		return svc.PutMaskingPolicy(ctx, admin, in), true
	case 3:
		var in RowAccessPolicy
		if !dec(&in) {
			return nil, false
		}
		return svc.PutRowAccessPolicy(ctx, admin, in), true
	case 4:
		var in Attachment
		if !dec(&in) {
			return nil, false
		}
		return svc.PutAttachment(ctx, admin, in), true
	case 5:
		var in Role
		if !dec(&in) {
			return nil, false
		}
		return svc.PutRole(ctx, admin, in), true
	case 6:
		var in RoleGrant
		if !dec(&in) {
			return nil, false
		}
		return svc.PutRoleGrant(ctx, admin, in), true
	default:
		var in ObjectGrant
		if !dec(&in) {
			return nil, false
		}
		return svc.PutObjectGrant(ctx, admin, in), true
	}
}
