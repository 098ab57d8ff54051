package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// The gateway's path into the trail (Record) never waits for Postgres:
// with the audit table locked by another session, so that the writer's
// COPY hangs, a thousand events are all handed in; what the bounded buffer
// cannot hold is counted (OnDrop, the dropped metric) and reported in the
// log with its number, and once the lock goes every event is either on the
// trail or counted — none silently lost.
func TestRecordNeverBlocksAndCountsOverflow(t *testing.T) {
	dsn := lakeDatabase(t)
	s := store.New(pgtest.Pool(t, dsn), "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Another session holds the audit table: every write waits on it.
	locker := pgtest.Connect(t, dsn)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE duckicelake_audit IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	core, logs := observer.New(zapcore.WarnLevel)
	var written, dropped atomic.Int64
	w := s.NewTrailWriter(store.TrailOptions{Buffer: 16, Batch: 4, FlushInterval: 5 * time.Millisecond, Logger: zap.New(core),
		OnWrite: func(n int) { written.Add(int64(n)) }, OnDrop: func(n int) { dropped.Add(int64(n)) }})
	const n = 1000
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for i := range n {
			// Distinct keys: nothing coalesces, every event is a row.
			ev := governance.Event{Source: governance.SourceS3, Action: "GetObject", Principal: "mallory",
				Bucket: []byte("lake"), Key: fmt.Appendf(nil, "data/t/%04d.parquet", i), Status: 200}
			w.Record(&ev)
		}
	}()
	select {
	case <-recorded:
	case <-ctx.Done():
		t.Fatal("Record blocked while Postgres held the audit table")
	}
	if dropped.Load() == 0 || written.Load() != 0 {
		t.Fatalf("with Postgres stuck: %d written, %d dropped; want none written, the overflow dropped", written.Load(), dropped.Load())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()

	if got := written.Load() + dropped.Load(); got != n {
		t.Errorf("%d written + %d dropped = %d; want every one of %d events accounted for", written.Load(), dropped.Load(), got, n)
	}
	recs, _, err := s.Audit(ctx, store.Query{Principal: "mallory", Limit: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(recs)) != written.Load() {
		t.Errorf("%d rows on the trail, OnWrite counted %d", len(recs), written.Load())
	}
	var reported int64
	for _, e := range logs.FilterMessageSnippet("were not written to Postgres").All() {
		reported += e.ContextMap()["events"].(int64)
	}
	if reported != dropped.Load() {
		t.Errorf("the log reports %d events not written, OnDrop counted %d", reported, dropped.Load())
	}
}
