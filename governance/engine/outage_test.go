package engine

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestPostgresOutageFailsClosed cuts the engine's connection to Postgres
// (a relay in front of it, so the pool sees a real outage) and holds the
// decisions the gateway and the signer take to the failure posture: what
// the engine cannot decide from state it may still trust is an error
// (which every caller turns into a denial), never an allow; a denial the
// state already gave stays a denial; and once Postgres is back, the engine
// catches up by itself on a change made while it was cut off (LISTEN
// reconnects and reloads, no manual Reload).
func TestPostgresOutageFailsClosed(t *testing.T) {
	ev := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev.must(t, ev.adm.PutRole(ctx, author, admin.Role{Name: "analysts"}))
	ev.must(t, ev.adm.PutRoleGrant(ctx, author, admin.RoleGrant{Role: "analysts", Principal: "ann"}))
	ev.must(t, ev.adm.PutObjectGrant(ctx, author, admin.ObjectGrant{ObjectKind: "table", Schema: "analytics", Object: "customers", Privilege: "select", Role: "analysts"}))

	cfg, err := pgxpool.ParseConfig(ev.lake.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pool, relay := pgtest.RelayedPool(t, cfg)
	const ttl = 20 * time.Millisecond
	eng, err := New(ctx, Config{Store: store.New(pool, ""), Index: ev.idx, SnapshotTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	watched := make(chan error, 1)
	go func() { watched <- eng.Watch(ctx, pgnotify.FromPool(pool), "") }()

	key := governance.ObjectResource([]byte("lake"), []byte("data/analytics/customers/ducklake-1.parquet"))
	table := governance.TableResource("analytics", "customers")
	decide := func(who string, a governance.Action, r governance.Resource) (governance.Decision, error) {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		return eng.Authorize(dctx, human(who), a, &r)
	}
	for _, who := range []string{"ann", "bob"} {
		d, err := decide(who, governance.ActionReadObject, key)
		if err != nil || d.Allow != (who == "ann") {
			t.Fatalf("before the outage, %s reads %s: %+v, %v", who, key.Key, d, err)
		}
	}

	relay.Cut()
	// Past twice the TTL the engine may no longer trust its view of the
	// catalog and must ask Postgres, which is gone.
	time.Sleep(3 * ttl)
	for _, tt := range []struct {
		who string
		a   governance.Action
		r   governance.Resource
	}{
		{"ann", governance.ActionReadObject, key},
		{"ann", governance.ActionLoadTable, table},
		{"ann", governance.ActionLoadCredentials, table},
		{"bob", governance.ActionReadObject, key},
		{"bob", governance.ActionLoadTable, table},
	} {
		d, err := decide(tt.who, tt.a, tt.r)
		if err == nil && d.Allow {
			t.Errorf("Postgres down: %s %s %s%s allowed: %+v", tt.who, tt.a, tt.r.Table, tt.r.Key, d)
		}
		if tt.who == "ann" && err == nil {
			t.Errorf("Postgres down: %s %s answered %+v without asking Postgres; want an error (the caller denies)", tt.who, tt.a, d)
		}
	}

	// A revoke made while the engine is cut off (another process
	// authored it) must reach it once Postgres is back.
	if err := ev.adm.DeleteRoleGrant(ctx, author, admin.RoleGrant{Role: "analysts", Principal: "ann"}); err != nil {
		t.Fatal(err)
	}
	relay.Restore()
	testsupport.WaitFor(t, "the engine to deny ann after the outage and the revoke", func() bool {
		d, err := decide("ann", governance.ActionReadObject, key)
		return err == nil && !d.Allow
	})
	cancel()
	if err := <-watched; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}
