package maskview_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/governance/govtest"
)

func open(t *testing.T, l *govtest.Lake) *maskview.Manager {
	t.Helper()
	m, err := maskview.Open(context.Background(), l.Pool, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func rows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rs, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// customersView is a masking view of analytics.customers as catalog/rest
// writes one: the filter on raw values, then the mask.
func customersSet(mask string) *maskview.Set {
	s := &maskview.Set{Namespace: "analytics"}
	s.Add(maskview.View{Table: "customers", SQL: `SELECT "id", ` + mask + ` AS "email", "country", "mrr" FROM (SELECT * FROM ` +
		maskview.CatalogRef + `."analytics"."customers" WHERE (country = 'EU')) AS "customers"`})
	s.Add(maskview.View{Table: "orders", SQL: `SELECT "id", "customer_id", 0.0 AS "amount" FROM ` + maskview.CatalogRef + `."analytics"."orders"`})
	return s
}

// A DuckDB session already attached sees the masking schema the catalog
// writes, reads masked rows by unqualified name once the schema is on its
// search path, and the base table by its qualified name.
func TestEnsureWritesViewsDuckDBRuns(t *testing.T) {
	l := govtest.New(t, govtest.Customers...)
	l.Exec(t, "INSERT INTO lake.analytics.orders VALUES (1, 1, 9.5)")
	m := open(t, l)
	ctx := context.Background()
	set := customersSet(`left("email", 2) || '***'`)
	until := time.Now().Add(time.Hour)
	name, err := m.Ensure(ctx, set, until)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "__mask_") || len(name) != len("__mask_")+16 {
		t.Fatalf("schema name %q", name)
	}
	if got := rows(t, l.Duck, `SELECT * FROM lake.`+name+`.customers`); !slices.Equal(got, []string{"1al***EU2400"}) {
		t.Errorf("masking view = %q", got)
	}
	l.Exec(t, "USE lake.analytics", `SET search_path = 'lake.`+name+`,lake.analytics'`)
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"al***"}) {
		t.Errorf("unqualified = %q", got)
	}
	if got := rows(t, l.Duck, `SELECT amount FROM orders`); !slices.Equal(got, []string{"0"}) {
		t.Errorf("unqualified orders = %q", got)
	}
	if got := rows(t, l.Duck, `SELECT email FROM lake.analytics.customers`); len(got) != 2 {
		t.Errorf("base = %q", got)
	}
	// New rows show through the view in the open session.
	l.Exec(t, "INSERT INTO lake.analytics.customers VALUES (3, 'carol@work.net', 'EU', 900)")
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"al***", "ca***"}) {
		t.Errorf("after insert = %q", got)
	}
	l.Exec(t, "USE lake.analytics")

	// Ensuring it again writes nothing: no new snapshot.
	var before, after int64
	if err := l.Pool.QueryRow(ctx, "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&before); err != nil {
		t.Fatal(err)
	}
	if again, err := m.Ensure(ctx, customersSet(`left("email", 2) || '***'`), until.Add(-time.Minute)); err != nil || again != name {
		t.Fatalf("Ensure again = %q, %v", again, err)
	}
	// A second process (a fresh Manager, no cache) finds it written.
	if again, err := open(t, l).Ensure(ctx, customersSet(`left("email", 2) || '***'`), until); err != nil || again != name {
		t.Fatalf("second process Ensure = %q, %v", again, err)
	}
	if err := l.Pool.QueryRow(ctx, "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("Ensure of a written schema made snapshots %d..%d", before, after)
	}

	// The change list is DuckDB's.
	var changes string
	if err := l.Pool.QueryRow(ctx, `SELECT changes_made FROM ducklake_snapshot_changes c JOIN ducklake_schema s ON s.begin_snapshot = c.snapshot_id
		WHERE s.schema_name = $1`, name).Scan(&changes); err != nil {
		t.Fatal(err)
	}
	want := `created_schema:"` + name + `",created_view:"` + name + `"."customers",created_view:"` + name + `"."orders"`
	if changes != want {
		t.Errorf("changes_made = %s, want %s", changes, want)
	}
	if ns, ok, err := m.Namespace(ctx, name); err != nil || !ok || ns != "analytics" {
		t.Errorf("Namespace = %q %v %v", ns, ok, err)
	}
}

// A new mask body is a new signature, so a new schema; the old one stays
// until its lease ends, then the sweep drops it in one snapshot and DuckDB
// no longer finds it.
func TestRotationAndSweep(t *testing.T) {
	l := govtest.New(t, govtest.Customers...)
	m := open(t, l)
	ctx := context.Background()
	now := time.Now()
	old, err := m.Ensure(ctx, customersSet(`left("email", 2) || '***'`), now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := m.Ensure(ctx, customersSet(`'***'`), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if rotated == old {
		t.Fatal("a new mask body kept the signature")
	}
	if n, err := m.Sweep(ctx, now); err != nil || n != 0 {
		t.Fatalf("Sweep before any lease ends = %d, %v", n, err)
	}
	if got := rows(t, l.Duck, `SELECT email FROM lake.`+old+`.customers`); !slices.Equal(got, []string{"al***"}) {
		t.Errorf("old schema before its lease ends = %q", got)
	}
	// Past the old lease (and its slack), before the new one's end.
	if n, err := m.Sweep(ctx, now.Add(30*time.Minute)); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the old schema dropped", n, err)
	}
	if _, err := l.Duck.Exec(`SELECT * FROM lake.` + old + `.customers`); err == nil {
		t.Error("the swept schema's view still runs")
	}
	if got := rows(t, l.Duck, `SELECT email FROM lake.`+rotated+`.customers`); !slices.Equal(got, []string{"***"}) {
		t.Errorf("rotated schema = %q", got)
	}
	var live int
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM ducklake_view v JOIN ducklake_schema s USING (schema_id)
		WHERE s.schema_name = $1 AND v.end_snapshot IS NULL`, old).Scan(&live); err != nil || live != 0 {
		t.Errorf("live views of the swept schema = %d, %v", live, err)
	}
	if _, ok, _ := m.Namespace(ctx, old); ok {
		t.Error("the swept schema's lease is still recorded")
	}
	// Asking for the swept set again writes it anew.
	again, err := m.Ensure(ctx, customersSet(`left("email", 2) || '***'`), now.Add(2*time.Hour))
	if err != nil || again != old {
		t.Fatalf("Ensure after sweep = %q, %v", again, err)
	}
	if got := rows(t, l.Duck, `SELECT email FROM lake.`+old+`.customers`); !slices.Equal(got, []string{"al***"}) {
		t.Errorf("rewritten schema = %q", got)
	}
}

// Vends racing for one set make one schema; every caller gets its name.
func TestConcurrentEnsure(t *testing.T) {
	l := govtest.New(t, govtest.Customers...)
	ctx := context.Background()
	var wg sync.WaitGroup
	names := make([]string, 8)
	errs := make([]error, 8)
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := open(t, l) // one per "process": no shared cache
			names[i], errs[i] = m.Ensure(ctx, customersSet(`'x'`), time.Now().Add(time.Hour))
		}()
	}
	wg.Wait()
	for i := range names {
		if errs[i] != nil || names[i] != names[0] {
			t.Fatalf("Ensure %d = %q, %v", i, names[i], errs[i])
		}
	}
	var n int
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM ducklake_schema WHERE schema_name = $1`, names[0]).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d schema rows for one set (%v)", n, err)
	}
}

// Injection-shaped namespace and table names are data, never SQL: the
// view is written under the name and DuckDB runs it.
func TestInjectionShapedNames(t *testing.T) {
	l := govtest.New(t,
		`CREATE SCHEMA lake."we""ird'; DROP TABLE x; --"`,
		`CREATE TABLE lake."we""ird'; DROP TABLE x; --"."t"",'x" (id INT, "e""'" VARCHAR)`,
		`INSERT INTO lake."we""ird'; DROP TABLE x; --"."t"",'x" VALUES (1, 'secret')`)
	m := open(t, l)
	ns, table := `we"ird'; DROP TABLE x; --`, `t",'x`
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	set := &maskview.Set{Namespace: ns}
	set.Add(maskview.View{Table: table, SQL: `SELECT "id", '***' AS "e""'" FROM ` + maskview.CatalogRef + "." + q(ns) + "." + q(table)})
	name, err := m.Ensure(context.Background(), set, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, l.Duck, `SELECT * FROM lake.`+name+`.`+q(table)); !slices.Equal(got, []string{"1***"}) {
		t.Errorf("view = %q", got)
	}
}

// shapedSet is a set whose customers view has a shape: its SQL (here a
// constant per "export") may move while the schema keeps its name.
func shapedSet(sql string, version int64) *maskview.Set {
	s := &maskview.Set{Namespace: "analytics"}
	s.Add(maskview.View{Table: "customers", Shape: "export t1/abc", SQL: sql, Version: version})
	s.Add(maskview.View{Table: "orders", SQL: `SELECT "id" FROM ` + maskview.CatalogRef + `."analytics"."orders"`})
	return s
}

// A shaped view's SQL moving keeps the schema's name and rewrites the view
// in place, in one snapshot that ends the old row and begins the new: a
// session already reading the schema by its search path reads the new SQL
// without a new vend; the unshaped view is left as it was. Replace does
// the same for every schema this process wrote the shape into. Neither
// goes back to an older version.
func TestShapedViewRewrittenInPlace(t *testing.T) {
	l := govtest.New(t, govtest.Customers...)
	m := open(t, l)
	ctx := context.Background()
	until := time.Now().Add(time.Hour)
	name, err := m.Ensure(ctx, shapedSet(`SELECT 'first' AS "email"`, 1), until)
	if err != nil {
		t.Fatal(err)
	}
	l.Exec(t, "USE lake.analytics", `SET search_path = 'lake.`+name+`,lake.analytics'`)
	defer l.Exec(t, "USE lake.analytics")
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("first = %q", got)
	}
	var ordersID int64
	if err := l.Pool.QueryRow(ctx, `SELECT view_id FROM ducklake_view WHERE view_name = 'orders' AND end_snapshot IS NULL`).Scan(&ordersID); err != nil {
		t.Fatal(err)
	}

	again, err := m.Ensure(ctx, shapedSet(`SELECT 'second' AS "email"`, 2), until)
	if err != nil || again != name {
		t.Fatalf("Ensure with moved SQL = %q, %v; want %q", again, err, name)
	}
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"second"}) {
		t.Errorf("open session after the rewrite = %q", got)
	}
	var live, ended int
	var oid int64
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE end_snapshot IS NULL), count(*) FILTER (WHERE end_snapshot IS NOT NULL)
		FROM ducklake_view WHERE view_name = 'customers'`).Scan(&live, &ended); err != nil {
		t.Fatal(err)
	}
	if live != 1 || ended != 1 {
		t.Errorf("customers view rows: %d live, %d ended; want 1 and 1", live, ended)
	}
	if err := l.Pool.QueryRow(ctx, `SELECT view_id FROM ducklake_view WHERE view_name = 'orders' AND end_snapshot IS NULL`).Scan(&oid); err != nil || oid != ordersID {
		t.Errorf("orders view = %d, %v; want untouched %d", oid, err, ordersID)
	}

	// The same SQL again: nothing written.
	var before, after int64
	if err := l.Pool.QueryRow(ctx, "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, l).Ensure(ctx, shapedSet(`SELECT 'second' AS "email"`, 2), until); err != nil {
		t.Fatal(err)
	}
	if err := l.Pool.QueryRow(ctx, "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("Ensure of an unchanged shaped set made snapshots %d..%d", before, after)
	}

	// Replace: the refresh hook's path.
	if n, err := m.Replace(ctx, "export t1/abc", `SELECT 'third' AS "email"`, 3); err != nil || n != 1 {
		t.Fatalf("Replace = %d, %v; want 1 schema", n, err)
	}
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"third"}) {
		t.Errorf("open session after Replace = %q", got)
	}
	if n, err := m.Replace(ctx, "export t1/other", `SELECT 'x' AS "email"`, 9); err != nil || n != 0 {
		t.Errorf("Replace of an unknown shape = %d, %v", n, err)
	}
	// An Ensure that planned before the refresh (an older version) does
	// not undo it, in this process or another; a newer one rewrites.
	for _, mm := range []*maskview.Manager{m, open(t, l)} {
		if _, err := mm.Ensure(ctx, shapedSet(`SELECT 'second' AS "email"`, 2), until); err != nil {
			t.Fatal(err)
		}
		if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"third"}) {
			t.Errorf("after an older Ensure following Replace = %q", got)
		}
	}
	if _, err := m.Ensure(ctx, shapedSet(`SELECT 'fourth' AS "email"`, 4), until); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, l.Duck, `SELECT email FROM customers`); !slices.Equal(got, []string{"fourth"}) {
		t.Errorf("after a newer Ensure = %q", got)
	}
	if n, err := m.Replace(ctx, "export t1/abc", `SELECT 'third' AS "email"`, 3); err != nil || n != 0 {
		t.Errorf("Replace with an older version = %d, %v; want nothing rewritten", n, err)
	}
}
