package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestRecordSyncIsOnTheTrailAtOnce: an event recorded with RecordSync is
// in Postgres when the call returns — what the catalog relies on to write
// a LoadTable's, a vend's or a denial's decision before it answers — also
// through a Tee, which records in every sink.
func TestRecordSyncIsOnTheTrailAtOnce(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
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
	dsn := pgtest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	s := store.New(pgtest.Pool(t, dsn), "")
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
