package store_test

import (
	"context"
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
