package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestAuditQueryAndPurge: GET …/governance/audit's filters (principal,
// table, decision, since/until), its pages (limit and the cursor, which
// neither skips nor repeats a row), and the retention purge, which takes
// only what is older than its bound.
func TestAuditQueryAndPurge(t *testing.T) {
	dsn := lakeDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t, dsn)
	s := store.New(pool, "")
	w := s.NewTrailWriter(store.TrailOptions{FlushInterval: time.Hour})
	defer w.Close()
	record := func(who, table string, d governance.Outcome) {
		t.Helper()
		ev := governance.Event{Source: governance.SourceCatalog, Action: "LoadTable", Principal: who,
			Namespace: "sales", Table: table, Decision: d, Status: 200}
		if err := governance.RecordSync(ctx, w, &ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 7; i++ {
		record("bob", "orders", governance.OutcomeAllow)
	}
	record("bob", "customers", governance.OutcomeDeny)
	record("alice", "orders", governance.OutcomeAllow)
	record("alice", "orders", governance.OutcomeDeny)

	count := func(q store.Query) int {
		t.Helper()
		recs, _, err := s.Audit(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	for _, tc := range []struct {
		name string
		q    store.Query
		want int
	}{
		{"everything", store.Query{}, 10},
		{"bob", store.Query{Principal: "bob"}, 8},
		{"orders", store.Query{Namespace: "sales", Table: "orders"}, 9},
		{"denials", store.Query{Decision: "deny"}, 2},
		{"alice's denials of orders", store.Query{Principal: "alice", Table: "orders", Decision: "deny"}, 1},
		{"since a minute ago", store.Query{Since: time.Now().Add(-time.Minute)}, 10},
		{"until a minute ago", store.Query{Until: time.Now().Add(-time.Minute)}, 0},
		{"since later", store.Query{Since: time.Now().Add(time.Minute)}, 0},
		{"nobody", store.Query{Principal: "mallory"}, 0},
	} {
		if got := count(tc.q); got != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.name, got, tc.want)
		}
	}

	// Pages of 3: every row once, in order, and the last page says so.
	var ids []int64
	q := store.Query{Limit: 3}
	for pages := 0; ; pages++ {
		recs, next, err := s.Audit(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 3 || pages > 4 {
			t.Fatalf("page %d: %d rows", pages, len(recs))
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		if next == 0 {
			break
		}
		q.After = next
	}
	if len(ids) != 10 {
		t.Fatalf("the pages held %d rows, want 10: %v", len(ids), ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("the pages repeat or reorder rows: %v", ids)
		}
	}

	// Retention: the rows made old go, the rest stay.
	if _, err := pool.Exec(ctx, `UPDATE duckicelake_audit SET ts = now() - interval '100 days' WHERE principal = 'alice'`); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeAudit(ctx, time.Now().Add(-90*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PurgeAudit = %d, %v; want alice's 2 rows", n, err)
	}
	if got := count(store.Query{}); got != 8 {
		t.Errorf("after the purge: %d rows, want bob's 8", got)
	}
	if n, err := s.PurgeAudit(ctx, time.Now().Add(-90*24*time.Hour)); err != nil || n != 0 {
		t.Errorf("a second purge = %d, %v; want nothing", n, err)
	}
}
