package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestRecordSyncIsOnTheTrailAtOnce: an event recorded with RecordSync is
// in Postgres when the call returns — what the catalog relies on to write
// a LoadTable's, a vend's or a denial's decision before it answers — also
// through a Tee, which records in every sink.
func TestRecordSyncIsOnTheTrailAtOnce(t *testing.T) {
	dsn := lakeDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t, dsn)
	s := store.New(pool, "")
	// A long flush interval: only RecordSync can have written the rows the
	// queries below see.
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: time.Hour})
	defer w.Close()
	for i, tt := range []struct {
		sink governance.Sink
		d    governance.Outcome
	}{
		{w, governance.OutcomeAllow},
		{governance.Tee(governance.Discard, w), governance.OutcomeDeny},
	} {
		ev := governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: "bob",
			Namespace: "sales", Table: "orders", Decision: tt.d, Status: 200}
		if err := governance.RecordSync(ctx, tt.sink, &ev); err != nil {
			t.Fatal(err)
		}
		recs, _, err := s.Audit(ctx, store.Query{Principal: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != i+1 || recs[len(recs)-1].Table != "orders" {
			t.Fatalf("after RecordSync %d the trail holds %+v", i, recs)
		}
	}
	// A failed write is reported, not swallowed.
	dead, cancelDead := context.WithCancel(ctx)
	cancelDead()
	if err := w.RecordSync(dead, &governance.Event{Source: governance.SourceCatalog, Principal: "bob"}); err == nil {
		t.Error("RecordSync under a cancelled context reported success")
	}
}

// TestRecordSyncGroupCommits: concurrent durable events share the writer's
// transactions (group commit) and each caller returns only once its own
// row is on the trail; after Close, RecordSync fails instead of waiting.
func TestRecordSyncGroupCommits(t *testing.T) {
	s := lakeStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: time.Hour})
	const n = 64
	errs := make(chan error, n)
	for i := range n {
		go func() {
			ev := governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: "carol",
				Namespace: "sales", Table: fmt.Sprintf("t%d", i), Decision: governance.OutcomeAllow, Status: 200}
			err := w.RecordSync(ctx, &ev)
			if err == nil {
				// Its own row is there when the call returns.
				var recs []store.Record
				recs, _, err = s.Audit(ctx, store.Query{Principal: "carol", Namespace: "sales", Table: ev.Table})
				if err == nil && len(recs) != 1 {
					err = fmt.Errorf("after RecordSync of %s the trail holds %d rows of it", ev.Table, len(recs))
				}
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	recs, _, err := s.Audit(ctx, store.Query{Principal: "carol", Limit: 1000})
	if err != nil || len(recs) != n {
		t.Fatalf("the trail holds %d of %d events (%v)", len(recs), n, err)
	}
	w.Close()
	if err := w.RecordSync(ctx, &governance.Event{Source: governance.SourceCatalog, Principal: "carol"}); err == nil {
		t.Error("RecordSync after Close reported success")
	}
}

// TestTrailRowsAsRecorded: the batched writer's rows read back as the
// events were recorded — every column, a list's prefix as its key, the
// policy ids (none: the empty array), and a key that is not valid UTF-8
// or holds a NUL (which text cannot store) made storable instead of
// failing its batch.
func TestTrailRowsAsRecorded(t *testing.T) {
	s := lakeStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: 10 * time.Millisecond})
	evs := []governance.Event{
		{Source: governance.SourceS3, RequestID: []byte("18C0A1B2"), Action: "GetObject", Principal: "bob", Actor: "agent",
			Channel: "mcp", Delegator: "broker", Bucket: []byte("lake"), Key: []byte("data/t/f.parquet"),
			Decision: governance.OutcomeAllow, Reason: "allowed by governance", PolicyIDs: []string{"mask_email", "rows_eu"},
			Status: 200, BytesIn: 7, BytesOut: 1 << 40, Latency: 1500 * time.Microsecond},
		{Source: governance.SourceS3, Action: "ListObjectsV2", Principal: "bob", Bucket: []byte("lake"), IsList: true,
			Key: []byte("ignored"), Prefix: []byte("data/t/"), Decision: governance.OutcomeDeny, Status: 403, Error: "AccessDenied"},
		{Source: governance.SourceCatalog, Action: "LoadTable", Principal: "bob", Namespace: "sales", Table: "örders",
			Key: []byte("bad\xff\x00key"), Decision: governance.OutcomeNone, Status: 503},
	}
	for i := range evs {
		w.Record(&evs[i])
	}
	w.Close()
	recs, _, err := s.Audit(ctx, store.Query{Principal: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(evs) {
		t.Fatalf("%d rows, want %d: %+v", len(recs), len(evs), recs)
	}
	r := recs[0]
	r.ID, r.Time = 0, time.Time{}
	want := store.Record{Source: "s3", RequestID: "18C0A1B2", Principal: "bob", Actor: "agent", Channel: "mcp", Delegator: "broker",
		Action: "GetObject", Bucket: "lake", Key: "data/t/f.parquet", Decision: "allow", Reason: "allowed by governance",
		PolicyIDs: []string{"mask_email", "rows_eu"}, Status: 200, BytesIn: 7, BytesOut: 1 << 40, LatencyMS: 1.5, Count: 1}
	if fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("row 0:\n got %+v\nwant %+v", r, want)
	}
	if since := time.Since(recs[0].Time); since < 0 || since > time.Minute {
		t.Errorf("row 0's ts is %v, %v from now", recs[0].Time, since)
	}
	if r := recs[1]; r.Key != "data/t/" || r.Decision != "deny" || r.Error != "AccessDenied" || r.PolicyIDs == nil || len(r.PolicyIDs) != 0 {
		t.Errorf("row 1 (a listing): %+v", r)
	}
	if r := recs[2]; r.Key != "bad\uFFFD\uFFFDkey" || r.Table != "örders" || r.Decision != "none" || r.Status != 503 {
		t.Errorf("row 2: %+v", r)
	}
}

// TestRecordCheckedFailsClosed: RecordChecked's events are buffered like
// the gateway's, and every one it accepted is on the trail in the end,
// through a Postgres outage (the writer keeps its batch and writes it
// again); once the writer has seen the trail fail, RecordChecked writes
// synchronously, so it fails — and its caller refuses — until Postgres
// is back.
func TestRecordCheckedFailsClosed(t *testing.T) {
	dsn := lakeDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool, relay := pgtest.RelayedPool(t, cfg)
	s := store.New(pool, "")
	var dropped atomic.Int64
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: 10 * time.Millisecond,
		OnDrop: func(n int) { dropped.Add(int64(n)) }})
	accepted := 0
	record := func(i int) error {
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		defer rcancel()
		ev := governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: "dave",
			Namespace: "sales", Table: fmt.Sprintf("t%d", i), Decision: governance.OutcomeAllow, Status: 200}
		err := governance.RecordChecked(rctx, governance.Tee(governance.Discard, w), &ev)
		if err == nil {
			accepted++
		}
		return err
	}
	onTrail := func() int {
		recs, _, err := store.New(pgtest.Pool(t, dsn), "").Audit(ctx, store.Query{Principal: "dave"})
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	if err := record(0); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "the first event on the trail", func() bool { return onTrail() == 1 })

	relay.Cut()
	i := 1
	// Until the writer has seen a write fail, events are accepted (and
	// must reach the trail later); from then on they are refused.
	testsupport.WaitFor(t, "RecordChecked to refuse while Postgres is down", func() bool {
		i++
		return record(i) != nil
	})
	for range 3 {
		i++
		if err := record(i); err == nil {
			t.Fatal("RecordChecked accepted an event while the trail is down")
		}
	}

	relay.Restore()
	testsupport.WaitFor(t, "RecordChecked to accept again once Postgres is back", func() bool {
		i++
		return record(i) == nil
	})
	testsupport.WaitFor(t, "every accepted event on the trail", func() bool { return onTrail() == accepted })
	w.Close()
	if n := onTrail(); n != accepted || dropped.Load() != 0 {
		t.Errorf("%d of %d accepted events on the trail, %d dropped", n, accepted, dropped.Load())
	}
}

// lakeStore is a store on a fresh database holding a DuckLake catalog.
func lakeStore(t *testing.T) *store.Store {
	t.Helper()
	return store.New(pgtest.Pool(t, lakeDatabase(t)), "")
}

// lakeDatabase is a fresh database holding an initialised DuckLake
// catalog, which the store's tables sit beside.
func lakeDatabase(t *testing.T) string {
	t.Helper()
	dsn := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	return dsn
}
