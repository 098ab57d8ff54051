package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestLoadTableAuditFailsClosed: a LoadTable that hands out metadata and
// no credential is audited through the trail's buffer and is on the trail
// in the end; while the trail is down (its Postgres connection cut, the
// catalog's own still up) LoadTable is refused with 503 — with vended
// credentials or without — and every LoadTable answered 200, before,
// during the moments before the writer saw the outage, and after, is on
// the trail once Postgres is back.
func TestLoadTableAuditFailsClosed(t *testing.T) {
	var trail *store.TrailWriter
	var direct *store.Store
	var relay *testsupport.Relay
	env := newRestEnv(t, func(_ *rest.Config, d *rest.Deps) {
		pool := d.DB.(*pgxpool.Pool)
		direct = store.New(pool, "")
		cfg := pool.Config().Copy()
		var rp *pgxpool.Pool
		rp, relay = pgtest.RelayedPool(t, cfg)
		trail = store.New(rp, "").NewTrailWriter(store.TrailOptions{FlushInterval: 10 * time.Millisecond})
		t.Cleanup(trail.Close)
		d.Audit = trail
	})
	env.duck("CREATE SCHEMA l.audit", "CREATE TABLE l.audit.t (x INTEGER)")
	tok := env.token("admin")
	const path = "/v1/lake/namespaces/audit/tables/t"
	vending := withHeader("X-Iceberg-Access-Delegation", "vended-credentials")
	answered := 0
	load := func(opts ...reqOpt) int {
		r := env.do("GET", path, tok, nil, opts...)
		if r.code == 200 {
			answered++
		} else if r.code != 503 {
			t.Fatalf("LoadTable: %d %s", r.code, r.body)
		}
		return r.code
	}
	onTrail := func() int {
		recs, _, err := direct.Audit(context.Background(), store.Query{Namespace: "audit", Table: "t"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Action == "LoadTable" && r.Status == 200 {
				n += r.Count // identical metadata-only reads share a row
			}
		}
		return n
	}
	if c := load(); c != 200 {
		t.Fatalf("LoadTable: %d", c)
	}
	testsupport.WaitFor(t, "the LoadTable on the trail", func() bool { return onTrail() == 1 })

	relay.Cut()
	testsupport.WaitFor(t, "LoadTable refused while the trail is down", func() bool { return load() == 503 })
	if c := load(); c != 503 {
		t.Errorf("LoadTable while the trail is down: %d, want 503", c)
	}
	if c := load(vending); c != 503 {
		t.Errorf("LoadTable with vended credentials while the trail is down: %d, want 503", c)
	}

	relay.Restore()
	testsupport.WaitFor(t, "LoadTable served once the trail is back", func() bool { return load() == 200 })
	if c := load(vending); c != 200 {
		t.Errorf("LoadTable with vended credentials after the outage: %d", c)
	}
	// A burst: identical reads may share rows, and their counts still add
	// up to every read answered.
	for range 50 {
		load()
	}
	testsupport.WaitFor(t, "every LoadTable answered 200 on the trail", func() bool { return onTrail() == answered })
}
