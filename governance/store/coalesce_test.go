package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/store"
)

// TestTrailCoalescesIdenticalReads: identical events marked Coalesce
// written in one batch become one row whose count is theirs, whose time
// span covers them, whose bytes are their sum and whose latency the
// worst; events that differ in any stored column (principal, table,
// decision, policy ids…) keep rows of their own, and unmarked events are
// never folded. No event is lost: the counts add up to what was recorded.
func TestTrailCoalescesIdenticalReads(t *testing.T) {
	s := lakeStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// One batch: nothing is flushed before Close.
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: time.Hour, Batch: 10000})
	load := func(principal, table string, policies ...string) governance.Event {
		return governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: principal, Actor: "human",
			Channel: "rest", Namespace: "sales", Table: table, Decision: governance.OutcomeAllow, Status: 200,
			PolicyIDs: policies, BytesOut: 10, Latency: time.Millisecond, Coalesce: true}
	}
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := load("bob", "orders", "mask_email")
			ev.RequestID = []byte("req-bob")
			if i == 7 {
				ev.Latency = 9 * time.Millisecond
			}
			if err := w.RecordChecked(ctx, &ev); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	others := []governance.Event{
		load("alice", "orders", "mask_email"),    // another principal
		load("bob", "customers", "mask_email"),   // another table
		load("bob", "orders"),                    // other policies
		load("bob", "orders", "mask_email", "x"), // more policies
	}
	deny := load("bob", "orders", "mask_email")
	deny.Decision, deny.Status = governance.OutcomeDeny, 403
	others = append(others, deny)
	plain := load("bob", "orders", "mask_email")
	plain.Coalesce = false // not marked: a row of its own, twice
	others = append(others, plain, plain)
	for i := range others {
		if err := w.RecordChecked(ctx, &others[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	recs, _, err := s.Audit(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	total, folded := 0, 0
	for _, r := range recs {
		total += r.Count
		if r.Count > 1 {
			folded++
			if r.Count != n || r.Principal != "bob" || r.Table != "orders" || r.Decision != "allow" ||
				len(r.PolicyIDs) != 1 || r.RequestID != "req-bob" {
				t.Errorf("folded row %+v", r)
			}
			if r.BytesOut != 10*n || r.LatencyMS != 9 {
				t.Errorf("folded row: bytes out %d (want %d), latency %.1f ms (want the worst, 9)", r.BytesOut, 10*n, r.LatencyMS)
			}
			if r.LastTime == nil || r.LastTime.Before(r.Time) {
				t.Errorf("folded row's span: %v … %v", r.Time, r.LastTime)
			}
		} else if r.LastTime != nil {
			t.Errorf("a row of one with a last time: %+v", r)
		}
	}
	if folded != 1 || len(recs) != 1+len(others) || total != n+len(others) {
		t.Errorf("%d rows (%d folded) counting %d events; want %d rows (1 folded) counting %d", len(recs), folded, total,
			1+len(others), n+len(others))
	}
}

// TestRecordCheckedRefusesWhenFull: an event the buffer cannot take is
// refused (ErrTrailFull) and counted (OnRefuse), never silently dropped;
// events that fit are written.
func TestRecordCheckedRefusesWhenFull(t *testing.T) {
	s := lakeStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var refused atomic.Int64
	// A buffer of 4 and a writer that drains only at Close or when half
	// the buffer waits: fill it faster than it drains.
	w := s.NewTrailWriter(store.TrailOptions{Buffer: 4, FlushInterval: time.Hour, OnRefuse: func(n int) { refused.Add(int64(n)) }})
	accepted, full := 0, 0
	for range 1000 {
		ev := governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: "eve", Status: 200, Coalesce: true}
		switch err := w.RecordChecked(ctx, &ev); {
		case err == nil:
			accepted++
		case errors.Is(err, store.ErrTrailFull):
			full++
		default:
			t.Fatal(err)
		}
	}
	w.Close()
	if full == 0 || refused.Load() != int64(full) {
		t.Errorf("%d refused, OnRefuse counted %d; want some refused, all counted", full, refused.Load())
	}
	recs, _, err := s.Audit(ctx, store.Query{Principal: "eve"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range recs {
		total += r.Count
	}
	if total != accepted {
		t.Errorf("%d events on the trail, %d accepted", total, accepted)
	}
}
