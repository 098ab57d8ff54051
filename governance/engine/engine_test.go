package engine

import (
	"context"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// liveIndex is a fixed key → table index (the real internal/tableindex,
// built from the test catalog's tables at data/<schema>/<table>/).
type liveIndex struct{ x *tableindex.Index }

func (l *liveIndex) Index() *tableindex.Index { return l.x }

func (l *liveIndex) Observe(context.Context, int64) {}

func (l *liveIndex) Refresh(context.Context, int64) (*tableindex.Index, error) { return l.x, nil }

type env struct {
	lake *govtest.Lake
	adm  *admin.Service
	eng  *Engine
	idx  *liveIndex
	ids  map[string]model.ObjectRef
}

var author = admin.Author{Principal: governance.Principal{ID: "admin"}}

func newEnv(t *testing.T) *env {
	t.Helper()
	l := govtest.New(t, govtest.Customers...)
	check := govtest.SQLCheck(t)
	ctx := context.Background()
	ev := &env{lake: l, adm: admin.New(l.Store, check), ids: map[string]model.ObjectRef{}}
	var src tableindex.Source
	for _, name := range []string{"customers", "orders"} {
		r, err := l.Store.Resolve(ctx, store.ObjectName{Kind: model.ObjectTable, Schema: "analytics", Table: name})
		if err != nil {
			t.Fatal(err)
		}
		ev.ids[name] = r.Ref
		src.Tables = append(src.Tables, tableindex.Table{ID: r.Ref.TableID, SchemaID: r.Ref.SchemaID, Namespace: "analytics", Name: name,
			Bucket: "lake", Prefix: "data/analytics/" + name + "/"})
	}
	// orders also references a file inside customers' directory: both
	// tables claim it.
	src.Files = append(src.Files, tableindex.File{TableID: ev.ids["orders"].TableID, Kind: tableindex.DataFile, Bucket: "lake",
		Key: "data/analytics/customers/shared.parquet"})
	ev.idx = &liveIndex{x: tableindex.Build(src)}
	var err error
	ev.eng, err = New(ctx, Config{Store: l.Store, Index: ev.idx, AgentAirtight: true,
		ClientRoles: func(p string) []string {
			if p == "etl" {
				return []string{"analysts"}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (ev *env) must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func human(id string) *governance.Principal {
	return &governance.Principal{ID: id, Scopes: governance.AllScopes}
}

func TestAllowlistEverywhere(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "analysts"}))
	ev.must(t, ev.adm.PutRoleGrant(ctx, author, admin.RoleGrant{Role: "analysts", Principal: "ann"}))
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "customers", Privilege: "select", Role: "analysts"}))

	table := governance.TableResource("analytics", "customers")
	key := governance.ObjectResource([]byte("lake"), []byte("data/analytics/customers/ducklake-1.parquet"))
	meta := governance.ObjectResource([]byte("lake"), []byte("data/analytics/customers/metadata/v3.metadata.json"))
	list := governance.ObjectResource([]byte("lake"), []byte("data/analytics/"))
	other := governance.ObjectResource([]byte("lake"), []byte("data/analytics/orders/x.parquet"))
	shared := governance.ObjectResource([]byte("lake"), []byte("data/analytics/customers/shared.parquet"))
	tests := []struct {
		who    *governance.Principal
		action governance.Action
		r      governance.Resource
		allow  bool
		hidden bool
	}{
		{human("bob"), governance.ActionLoadTable, table, false, true},
		{human("bob"), governance.ActionLoadCredentials, table, false, true},
		{human("bob"), governance.ActionReadObject, key, false, false},
		{human("bob"), governance.ActionReadObject, meta, false, false},
		{human("bob"), governance.ActionDeleteObject, key, false, false},
		{human("bob"), governance.ActionListObjects, list, false, false},
		{human("bob"), governance.ActionReadObject, other, true, false},
		// orders' file inside customers' directory: every claimant decides.
		{human("bob"), governance.ActionReadObject, shared, false, false},
		{human("ann"), governance.ActionLoadTable, table, true, false},
		{human("ann"), governance.ActionReadObject, key, true, false},
		{human("ann"), governance.ActionListObjects, list, true, false},
		// Configured client roles count as the grants do.
		{human("etl"), governance.ActionReadObject, key, true, false},
		// A minted credential for bob: the same answer on the S3 path.
		{&governance.Principal{ID: "bob"}, governance.ActionReadObject, key, false, false},
	}
	for i, tt := range tests {
		d, err := ev.eng.Authorize(ctx, tt.who, tt.action, &tt.r)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if d.Allow != tt.allow || (!d.Allow && tt.hidden && !d.Hidden) {
			t.Errorf("%d: %s %s %s%s = %+v, want allow=%v hidden=%v", i, tt.who.ID, tt.action, tt.r.Table, tt.r.Key, d, tt.allow, tt.hidden)
		}
	}
	// Revoking the grant takes effect on the next decision.
	ev.must(t, ev.adm.DeleteRoleGrant(ctx, author, admin.RoleGrant{Role: "analysts", Principal: "ann"}))
	if d, _ := ev.eng.Authorize(ctx, human("ann"), governance.ActionReadObject, &key); d.Allow {
		t.Error("ann still reads after the revoke")
	}
}

func TestAgentsReadOnly(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	agent := &governance.Principal{ID: "bot", Actor: governance.ActorAgent, Channel: governance.ChannelMCP, Scopes: governance.AllScopes}
	for _, a := range []governance.Action{governance.ActionWriteObject, governance.ActionDeleteObject, governance.ActionCommitTable,
		governance.ActionCreateTable, governance.ActionDropTable, governance.ActionCreateNamespace} {
		r := governance.TableResource("analytics", "orders")
		if d, err := ev.eng.Authorize(ctx, agent, a, &r); err != nil || d.Allow || d.Reason != governance.ReasonAgentReadOnly {
			t.Errorf("agent %s = %+v, %v", a, d, err)
		}
	}
	r := governance.TableResource("analytics", "orders")
	if d, _ := ev.eng.Authorize(ctx, agent, governance.ActionLoadTable, &r); !d.Allow {
		t.Errorf("agent read = %+v", d)
	}
}

func TestContextRoles(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	ev.must(t, ev.adm.PutMaskingPolicy(ctx, author, admin.MaskingPolicy{Name: "mask_host", Signature: "(val VARCHAR)", Body: "'***'",
		UnmaskedRoles: []string{"actor:human"}}))
	ev.must(t, ev.adm.PutAttachment(ctx, author, admin.Attachment{PolicyKind: "masking", PolicyName: "mask_host", TargetKind: "column",
		Schema: "analytics", Object: "customers", Column: "email"}))
	h, _, _, err := ev.eng.PlanTable(ctx, human("alice"), "analytics", "customers")
	if err != nil || h.Governed() {
		t.Fatalf("human plan = %+v, %v", h, err)
	}
	agent := &governance.Principal{ID: "alice", Actor: governance.ActorAgent, Channel: governance.ChannelMCP}
	a, _, _, err := ev.eng.PlanTable(ctx, agent, "analytics", "customers")
	if err != nil || len(a.Masks) != 1 || a.Tier.String() != "airtight" {
		t.Fatalf("agent plan = %+v, %v", a, err)
	}
	if got := ev.eng.Roles(agent); !got.Has("actor:agent") || !got.Has("channel:mcp") || got.Has("actor:human") {
		t.Errorf("agent roles = %v", got)
	}
}

func TestSecondProcessSeesChanges(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	other, err := New(ctx, Config{Store: ev.lake.Store, Index: ev.idx})
	if err != nil {
		t.Fatal(err)
	}
	key := governance.ObjectResource([]byte("lake"), []byte("data/analytics/orders/f.parquet"))
	if d, _ := other.Authorize(ctx, human("bob"), governance.ActionReadObject, &key); !d.Allow {
		t.Fatal("ungoverned read denied")
	}
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "finance"}))
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "schema", Schema: "analytics", Privilege: "select", Role: "finance"}))
	v, err := ev.lake.Store.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.ObserveVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	if d, _ := other.Authorize(ctx, human("bob"), governance.ActionReadObject, &key); d.Allow {
		t.Error("the second engine still allows after the schema grant")
	}
}

func TestDecisionCacheHitAllocatesNothing(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "analysts"}))
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "customers", Privilege: "select", Role: "analysts"}))
	p := &governance.Principal{ID: "bob", Actor: governance.ActorHuman, Channel: governance.ChannelREST}
	key := governance.ObjectResource([]byte("lake"), []byte("data/analytics/customers/f.parquet"))
	ev.eng.Authorize(ctx, p, governance.ActionReadObject, &key)
	n := testing.AllocsPerRun(500, func() {
		if d, _ := ev.eng.Authorize(ctx, p, governance.ActionReadObject, &key); d.Allow {
			t.Fatal("allowed")
		}
	})
	// dirIndex itself allocates nothing; the engine must not either.
	if n > 0 {
		t.Errorf("a cached decision allocates %.1f times", n)
	}
}

func TestEffective(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	ev.must(t, ev.adm.PutTag(ctx, author, admin.Tag{Namespace: "pii", Name: "email"}))
	ev.must(t, ev.adm.PutObjectTag(ctx, author, admin.ObjectTag{ObjectKind: "column", Schema: "analytics", Object: "customers", Column: "email", TagNamespace: "pii", TagName: "email"}))
	ev.must(t, ev.adm.PutMaskingPolicy(ctx, author, admin.MaskingPolicy{Name: "mask_email", Signature: "(val VARCHAR)", Body: "left(val, 2) || '***'", UnmaskedRoles: []string{"pii_reader"}}))
	ev.must(t, ev.adm.PutAttachment(ctx, author, admin.Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "tag", TagNamespace: "pii", TagName: "email"}))
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "pii_reader"}))
	ev.must(t, ev.adm.PutRoleGrant(ctx, author, admin.RoleGrant{Role: "pii_reader", Principal: "alice"}))
	bob, ok, err := ev.eng.Effective(ctx, human("bob"), "analytics", "customers")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(bob.Plan.MaskedColumns) != 1 || bob.Plan.MaskedColumns[0].Column != "email" || bob.Derived.MaskingPolicies[0].Bypassed || bob.Plan.ViewSQL == "" {
		t.Errorf("bob = %+v", bob)
	}
	alice, _, _ := ev.eng.Effective(ctx, human("alice"), "analytics", "customers")
	if len(alice.Plan.MaskedColumns) != 0 || len(alice.Derived.MaskingPolicies) != 1 || !alice.Derived.MaskingPolicies[0].Bypassed {
		t.Errorf("alice = %+v", alice)
	}
	if _, ok, _ := ev.eng.Effective(ctx, human("bob"), "analytics", "nope"); ok {
		t.Error("a missing table has effective policies")
	}
	// Allowlisted: the derived set is still everything that reaches the
	// table — for alice, who holds the grant and bypasses the mask, and
	// for bob, who may not read it at all.
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "customers", Privilege: "select", Role: "pii_reader"}))
	alice, _, _ = ev.eng.Effective(ctx, human("alice"), "analytics", "customers")
	if !alice.Plan.Visible || !alice.Derived.Allowlisted || len(alice.Derived.MaskingPolicies) != 1 || !alice.Derived.MaskingPolicies[0].Bypassed {
		t.Errorf("alice on the allowlisted table = %+v", alice)
	}
	bob, _, _ = ev.eng.Effective(ctx, human("bob"), "analytics", "customers")
	if bob.Plan.Visible || len(bob.Plan.MaskedColumns) != 0 || len(bob.Derived.MaskingPolicies) != 1 || bob.Derived.MaskingPolicies[0].Bypassed {
		t.Errorf("bob on the allowlisted table = %+v", bob)
	}
}

// TestWatch: a change made through one process reaches another's engine
// by NOTIFY, without an explicit reload.
func TestWatch(t *testing.T) {
	ev := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other, err := New(ctx, Config{Store: ev.lake.Store, Index: ev.idx})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- other.Watch(ctx, pgnotify.FromPool(ev.lake.Pool), "") }()
	key := governance.ObjectResource([]byte("lake"), []byte("data/analytics/orders/f.parquet"))
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "finance"}))
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "orders", Privilege: "select", Role: "finance"}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := other.Authorize(ctx, human("bob"), governance.ActionReadObject, &key)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allow {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watching engine never saw the grant")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}
