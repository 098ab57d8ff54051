package admin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/store"
)

type fixture struct {
	*govtest.Lake
	svc *Service
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	l := govtest.New(t, govtest.Customers...)
	check := govtest.SQLCheck(t)
	return &fixture{Lake: l, svc: New(l.Store, check)}
}

func (f *fixture) duckExec(t *testing.T, q string) { t.Helper(); f.Exec(t, q) }

var admin = Author{Principal: governance.Principal{ID: "admin"}, RequestID: "r1"}

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// seedGoverned authors the seeds' README example.
func seedGoverned(t testing.TB, f *fixture) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.svc.PutTag(ctx, admin, Tag{Namespace: "pii", Name: "email"}))
	must(f.svc.PutObjectTag(ctx, admin, ObjectTag{ObjectKind: "column", Schema: "analytics", Object: "customers", Column: "email", TagNamespace: "pii", TagName: "email"}))
	must(f.svc.PutMaskingPolicy(ctx, admin, MaskingPolicy{Name: "mask_email", Signature: "(val VARCHAR)", Body: "left(val, 2) || '***'", UnmaskedRoles: []string{"pii_reader"}}))
	must(f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "tag", TagNamespace: "pii", TagName: "email"}))
	must(f.svc.PutRole(ctx, admin, Role{Name: "pii_reader"}))
	must(f.svc.PutRoleGrant(ctx, admin, RoleGrant{Role: "pii_reader", Principal: "alice"}))
}

// planFor plans table ns.name for principal with the stored state.
func planFor(t *testing.T, f *fixture, principal, ns, name string) plan.Plan {
	t.Helper()
	ctx := context.Background()
	st, err := f.Store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Store.Resolve(ctx, store.ObjectName{Kind: model.ObjectTable, Schema: ns, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	tb := plan.TableOf(ns, ducklakeTable(r), r.Columns)
	tb.Name = name
	return plan.Build(st, plan.Principal{Roles: model.NewRoleSet(st.GrantedRoles(principal))}, tb, plan.Options{})
}

func ducklakeTable(r store.Resolved) ducklake.Table {
	return ducklake.Table{ID: r.Ref.TableID, SchemaID: r.Ref.SchemaID}
}

func TestSeedsExampleAuthored(t *testing.T) {
	f := newFixture(t)
	seedGoverned(t, f)
	bob := planFor(t, f, "bob", "analytics", "customers")
	if len(bob.Masks) != 1 || bob.Masks[0].Column != "email" {
		t.Fatalf("bob: %+v", bob)
	}
	if alice := planFor(t, f, "alice", "analytics", "customers"); alice.Governed() {
		t.Fatalf("alice: %+v", alice)
	}
	// Re-POST rotates: a new body, a new signature.
	if err := f.svc.PutMaskingPolicy(context.Background(), admin, MaskingPolicy{Name: "mask_email", Signature: "(val VARCHAR)",
		Body: "regexp_replace(val, '[^@]+', '***')", UnmaskedRoles: []string{"pii_reader", "support"}}); err != nil {
		t.Fatal(err)
	}
	bob2 := planFor(t, f, "bob", "analytics", "customers")
	if bob2.Signature == bob.Signature || !strings.Contains(bob2.ViewSQL, "regexp_replace") {
		t.Errorf("upsert did not rotate: %s vs %s", bob2.Signature, bob.Signature)
	}
	// Every change is in the audit trail with its author.
	recs, _, err := f.Store.Audit(context.Background(), store.Query{Principal: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 || recs[0].Reason != "upsert tag pii.email" || recs[6].Reason != "upsert masking policy mask_email" {
		t.Errorf("audit: %d records %+v", len(recs), recs)
	}
}

func TestRenameAndDropCarry(t *testing.T) {
	f := newFixture(t)
	seedGoverned(t, f)
	ctx := context.Background()
	f.duckExec(t, "ALTER TABLE lake.analytics.customers RENAME COLUMN email TO mail")
	f.duckExec(t, "ALTER TABLE lake.analytics.customers RENAME TO clients")
	p := planFor(t, f, "bob", "analytics", "clients")
	if len(p.Masks) != 1 || p.Masks[0].Column != "mail" {
		t.Fatalf("mask lost in DuckDB's rename: %+v", p)
	}
	f.duckExec(t, "DROP TABLE lake.analytics.clients")
	f.duckExec(t, "CREATE TABLE lake.analytics.clients (id BIGINT, mail VARCHAR)")
	n, err := f.Store.Purge(ctx, store.Change{Author: governance.Principal{ID: "system"}})
	if err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want the one object tag", n, err)
	}
	if p := planFor(t, f, "bob", "analytics", "clients"); p.Governed() {
		t.Errorf("a table recreated under the old name inherited: %+v", p)
	}
	// The tag is free now: it can be deleted once detached.
	if err := f.svc.DeleteTag(ctx, admin, "pii", "email"); kindOf(err) != Conflict {
		t.Errorf("delete of an attached tag: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	seedGoverned(t, f)
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		kind Kind
		msg  string
	}{
		{"delete an attached policy", f.svc.DeleteMaskingPolicy(ctx, admin, "mask_email"), Conflict, "still attached"},
		{"delete an assigned tag", f.svc.DeleteTag(ctx, admin, "pii", "email"), Conflict, "still assigned"},
		{"delete a granted role", f.svc.DeleteRole(ctx, admin, "pii_reader"), Conflict, "still granted"},
		{"mask on a table", f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "table",
			Schema: "analytics", Object: "customers"}), Invalid, "not to a table"},
		{"row-access on a column", f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "row-access", PolicyName: "x", TargetKind: "column",
			Schema: "analytics", Object: "customers", Column: "email"}), Invalid, "not to a column"},
		{"DuckDB's message", f.svc.PutMaskingPolicy(ctx, admin, MaskingPolicy{Name: "m2", Signature: "(val VARCHAR)", Body: "val + 1"}),
			Invalid, "No function matches"},
		{"bad signature type", f.svc.PutMaskingPolicy(ctx, admin, MaskingPolicy{Name: "m2", Signature: "(val NOPE)", Body: "val"}), Invalid, "NOPE"},
		{"unknown action", f.svc.PutMaskingPolicy(ctx, admin, MaskingPolicy{Name: "m2", Action: "mask-everything"}), Invalid, "standard action"},
		{"missing table", f.svc.PutObjectTag(ctx, admin, ObjectTag{ObjectKind: "table", Schema: "analytics", Object: "nope", TagNamespace: "pii", TagName: "email"}),
			NotFound, "does not exist"},
		{"missing tag", f.svc.PutObjectTag(ctx, admin, ObjectTag{ObjectKind: "table", Schema: "analytics", Object: "orders", TagNamespace: "pii", TagName: "nope"}),
			NotFound, "create it first"},
		{"synthetic role", f.svc.PutRole(ctx, admin, Role{Name: "actor:agent"}), Invalid, "session-context"},
		{"mask type mismatch", f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "column",
			Schema: "analytics", Object: "orders", Column: "amount"}), Invalid, "takes VARCHAR"},
		{"detach what is not attached", f.svc.DeleteAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "column",
			Schema: "analytics", Object: "customers", Column: "country"}), NotFound, "not attached"},
		{"privilege", f.svc.PutObjectGrant(ctx, admin, ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "orders", Privilege: "insert", Role: "pii_reader"}),
			Invalid, "select"},
		{"NUL in a name", f.svc.PutTag(ctx, admin, Tag{Namespace: "p\x00ii", Name: "x"}), Invalid, "control"},
	}
	for _, tt := range tests {
		if kindOf(tt.err) != tt.kind || tt.err == nil || !strings.Contains(tt.err.Error(), tt.msg) {
			t.Errorf("%s: %v (kind %d), want kind %d with %q", tt.name, tt.err, kindOf(tt.err), tt.kind, tt.msg)
		}
	}
	// A second mask reaching email, directly or through another tag: 409.
	secondMaskOnEmail(t, f, "second mask on a column")
	if err := f.svc.PutTag(ctx, admin, Tag{Namespace: "pii", Name: "all"}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "nullify", TargetKind: "tag", TagNamespace: "pii", TagName: "all"}); err != nil {
		t.Fatal(err)
	}
	err := f.svc.PutObjectTag(ctx, admin, ObjectTag{ObjectKind: "table", Schema: "analytics", Object: "customers", TagNamespace: "pii", TagName: "all"})
	if kindOf(err) != Conflict {
		t.Errorf("a tag bringing a second mask to email: %v", err)
	}
	// Nothing of the refused changes was written.
	st, _ := f.Store.Load(ctx)
	if len(st.ObjectTags) != 1 || len(st.Attachments) != 2 || len(st.Masks) != 2 {
		t.Errorf("refused changes left rows: %d object tags, %d attachments, %d masks", len(st.ObjectTags), len(st.Attachments), len(st.Masks))
	}
}

// An allowlisted table is checked like any other: nobody without the
// grant may read it, yet a second mask on its column or a mask its column
// cannot take is refused all the same (the e2e suite found this gap).
func TestRefusalsOnAllowlistedTable(t *testing.T) {
	f := newFixture(t)
	seedGoverned(t, f)
	ctx := context.Background()
	if err := f.svc.PutObjectGrant(ctx, admin, ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "customers", Privilege: "select", Role: "pii_reader"}); err != nil {
		t.Fatal(err)
	}
	secondMaskOnEmail(t, f, "second mask on an allowlisted table's column")
	err := f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "column",
		Schema: "analytics", Object: "customers", Column: "id"})
	if kindOf(err) != Invalid || !strings.Contains(err.Error(), "takes VARCHAR") {
		t.Errorf("a VARCHAR mask on an allowlisted table's BIGINT column: %v", err)
	}
	st, _ := f.Store.Load(ctx)
	if len(st.Attachments) != 1 {
		t.Errorf("refused attachments left rows: %d attachments", len(st.Attachments))
	}
}

// secondMaskOnEmail authors mask "nullify" and attaches it to
// analytics.customers.email, which seedGoverned's mask already reaches:
// the attachment must be the 409 "one mask per column".
func secondMaskOnEmail(t *testing.T, f *fixture, what string) {
	t.Helper()
	ctx := context.Background()
	if err := f.svc.PutMaskingPolicy(ctx, admin, MaskingPolicy{Name: "nullify", Action: "replace-with-null"}); err != nil {
		t.Fatal(err)
	}
	err := f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "masking", PolicyName: "nullify", TargetKind: "column",
		Schema: "analytics", Object: "customers", Column: "email"})
	if kindOf(err) != Conflict || !strings.Contains(err.Error(), "one mask per column") {
		t.Errorf("%s: %v", what, err)
	}
}

func TestRowPolicies(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.PutRowAccessPolicy(ctx, admin, RowAccessPolicy{Name: "eu_only", Body: "country = 'EU'"}); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Store.Load(ctx)
	if p := st.RowPolicy("eu_only"); p == nil || len(p.Columns) != 1 || p.Columns[0] != "country" {
		t.Fatalf("columns derived from the body: %+v", p)
	}
	// orders has no country: attaching there is refused with the reason.
	err := f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "row-access", PolicyName: "eu_only", TargetKind: "table", Schema: "analytics", Object: "orders"})
	if kindOf(err) != Invalid || !strings.Contains(err.Error(), "country") {
		t.Errorf("attach to a table without the column: %v", err)
	}
	if err := f.svc.PutAttachment(ctx, admin, Attachment{PolicyKind: "row-access", PolicyName: "eu_only", TargetKind: "table", Schema: "analytics", Object: "customers"}); err != nil {
		t.Fatal(err)
	}
	// A body that no longer types against the table it reaches is refused.
	err = f.svc.PutRowAccessPolicy(ctx, admin, RowAccessPolicy{Name: "eu_only", Body: "country > 5 AND country + 1 = 2"})
	if kindOf(err) != Invalid {
		t.Errorf("an untypeable body: %v", err)
	}
	f.duckExec(t, "ALTER TABLE lake.analytics.customers RENAME COLUMN country TO region")
	p := planFor(t, f, "bob", "analytics", "customers")
	if len(p.RowFilters) != 1 || !strings.Contains(p.Filter, `"region"`) {
		t.Errorf("filter after DuckDB's column rename: %+v", p)
	}
}
