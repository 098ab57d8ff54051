package pgaccess_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/internal/duckenv"
)

// lake is a catalog with analytics.customers (visible to the reader) and
// analytics.orders (hidden), written as Parquet files.
type lake struct {
	*govtest.Lake
	acc               *pgaccess.Access
	customers, orders int64
	dataPath          string
}

func newLake(t *testing.T) *lake {
	t.Helper()
	return newLakeWith(t, "CALL lake.set_option('data_inlining_row_limit', 0)")
}

// newLakeWith is newLake after setup (DuckDB statements) ran first.
func newLakeWith(t *testing.T, setup ...string) *lake {
	t.Helper()
	l := govtest.New(t, setup...)
	l.Exec(t, govtest.Customers...)
	l.Exec(t, "INSERT INTO lake.analytics.orders VALUES (1, 1, 10.5), (2, 2, 99.0)")
	ctx := context.Background()
	acc, err := pgaccess.New(ctx, l.Pool, pgaccess.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := &lake{Lake: l, acc: acc}
	for name, id := range map[string]*int64{"customers": &out.customers, "orders": &out.orders} {
		if err := l.Pool.QueryRow(ctx, `SELECT table_id FROM ducklake_table WHERE table_name = $1 AND end_snapshot IS NULL`, name).Scan(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Pool.QueryRow(ctx, `SELECT value FROM ducklake_metadata WHERE key = 'data_path'`).Scan(&out.dataPath); err != nil {
		t.Fatal(err)
	}
	return out
}

func (l *lake) vend(t *testing.T, tables ...pgaccess.TableAccess) pgaccess.Role {
	t.Helper()
	r, err := l.acc.CreateRole(context.Background(), pgaccess.Grant{Principal: "bob", Scope: "analytics", Tables: tables, Expiry: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{r.Name}.Sanitize()) })
	return r
}

// duck attaches the catalog in a fresh DuckDB with dsn.
func (l *lake) duck(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := duckenv.Open(context.Background(), duckenv.Options{ExtensionDirectory: govtest.ExtensionDir(t), Extensions: []string{"ducklake", "postgres"}})
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	q, err := pgaccess.Attach("lake", dsn, "", l.dataPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return db
}

func readerDSN(t *testing.T, l *lake, r pgaccess.Role) string {
	dsn, err := pgaccess.ReaderDSN(l.DSN, r)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// customers counts lake.analytics.customers in db.
func customers(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM lake.analytics.customers`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReaderSeesOnlyGrantedTables(t *testing.T) {
	l := newLake(t)
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	db := l.duck(t, readerDSN(t, l, r))
	if n := customers(t, db); n != 2 {
		t.Errorf("customers: %d rows, want 2", n)
	}
	_, err := db.Exec(`SELECT count(*) FROM lake.analytics.orders`)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("orders: err %v, want does not exist", err)
	}
}

// connect logs in as r over TCP (scram: the password is checked).
func connect(t *testing.T, l *lake, r pgaccess.Role) (*pgx.Conn, error) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), readerDSN(t, l, r))
	if err == nil {
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	return c, err
}

// mustConnect is connect for a role that must log in.
func mustConnect(t *testing.T, l *lake, r pgaccess.Role) *pgx.Conn {
	t.Helper()
	c, err := connect(t, l, r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pgCode is err's SQLSTATE ("" for none).
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestReaderCatalogRows reads every ducklake_* table as a reader granted
// customers only: nothing names orders (by id or name), the tables that
// would bypass the policies and every duckicelake_* table are refused,
// and nothing can be written.
func TestReaderCatalogRows(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	c := mustConnect(t, l, r)
	rows, err := l.Pool.Query(ctx, `SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
		AND (relname LIKE 'ducklake%' OR relname LIKE 'duckicelake%') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, n := range names {
		excluded := strings.HasPrefix(n, "duckicelake_") || strings.HasPrefix(n, "ducklake_inlined_data_") && n != "ducklake_inlined_data_tables" ||
			n == "ducklake_snapshot_changes" || n == "ducklake_files_scheduled_for_deletion"
		rows, err := c.Query(ctx, `SELECT to_jsonb(t)::text FROM `+pgx.Identifier{n}.Sanitize()+` t`)
		var got []string
		if err == nil {
			got, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if excluded {
			if pgCode(err) != "42501" {
				t.Errorf("%s: err %v, want permission denied", n, err)
			}
			refused[n] = true
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		for _, row := range got {
			var m map[string]any
			if err := json.Unmarshal([]byte(row), &m); err != nil {
				t.Fatal(err)
			}
			if id, ok := m["table_id"].(float64); ok && int64(id) == l.orders {
				t.Errorf("%s: a reader sees a row of the hidden table: %s", n, row)
			}
			if strings.Contains(row, `"orders"`) || strings.Contains(row, "/orders/") || strings.Contains(row, "customer_id") {
				t.Errorf("%s: a reader sees the hidden table's name: %s", n, row)
			}
		}
	}
	for _, n := range []string{"ducklake_snapshot_changes", "duckicelake_reader_role", "duckicelake_reader_table"} {
		if !refused[n] {
			t.Errorf("%s was not among the refused tables", n)
		}
	}
	// Postgres's own catalogs: planner statistics of policed tables are
	// not shown to a role the policies bind.
	var stats int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE tablename LIKE 'ducklake%' AND most_common_vals::text LIKE '%orders%'`).Scan(&stats); err != nil {
		t.Fatal(err)
	}
	if stats != 0 {
		t.Errorf("pg_stats shows the hidden table's name to a reader (%d rows)", stats)
	}
	for _, q := range []string{
		`INSERT INTO ducklake_snapshot VALUES (999, now(), 1, 1, 1)`,
		`UPDATE ducklake_table SET table_name = 'x'`,
		`DELETE FROM ducklake_data_file`,
		`CREATE TABLE ducklake_evil (table_id bigint)`,
		`SET default_transaction_read_only = off; INSERT INTO ducklake_metadata VALUES ('k', 'v', NULL, NULL)`,
	} {
		// The simple protocol, so the SET and the INSERT run as one
		// script (the read-only default is a setting, not the only guard).
		if _, err := c.PgConn().Exec(ctx, q).ReadAll(); err == nil {
			t.Errorf("a reader ran %q", q)
		}
	}
}

// TestPolicyPlansAsHashedSubplan: the policy's membership test is a
// hashed subplan Postgres runs once per scan, not a call per row.
func TestPolicyPlansAsHashedSubplan(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	c := mustConnect(t, l, r)
	for _, table := range []string{"ducklake_table", "ducklake_column", "ducklake_data_file"} {
		rows, err := c.Query(ctx, `EXPLAIN SELECT * FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "hashed SubPlan") {
			t.Errorf("%s: the policy is not a hashed subplan:\n%s", table, plan)
		}
		for _, ln := range lines {
			if strings.Contains(ln, "Filter:") && strings.Contains(ln, "duckicelake_rls_") {
				t.Errorf("%s: the policy function is called in the row filter:\n%s", table, plan)
			}
		}
	}
}

// TestFilesHidden: a table readable only masked shows its schema, never
// its base files or statistics: it reads as empty by name.
func TestFilesHidden(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: false})
	db := l.duck(t, readerDSN(t, l, r))
	if n := customers(t, db); n != 0 {
		t.Errorf("customers: %d rows through hidden files, want 0", n)
	}
	c := mustConnect(t, l, r)
	for _, table := range []string{"ducklake_data_file", "ducklake_file_column_stats", "ducklake_table_column_stats", "ducklake_table_stats"} {
		var k int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k != 0 {
			t.Errorf("%s: %d rows visible, want 0", table, k)
		}
	}
}

// TestOwnerInsertShowsInOpenSession: a session attached before an owner's
// INSERT reads the new rows without reattaching.
func TestOwnerInsertShowsInOpenSession(t *testing.T) {
	l := newLake(t)
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	db := l.duck(t, readerDSN(t, l, r))
	count := func() int { return customers(t, db) }
	if n := count(); n != 2 {
		t.Fatalf("before: %d rows", n)
	}
	l.Exec(t, "INSERT INTO lake.analytics.customers VALUES (3, 'carol@example.com', 'EU', 10)")
	deadline := time.Now().Add(30 * time.Second)
	for count() != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the owner's insert never showed in the open session")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConcurrentVends: ten simultaneous vends for one principal yield ten
// roles that all log in with their own password (and not another's).
func TestConcurrentVends(t *testing.T) {
	l := newLake(t)
	const n = 10
	roles := make([]pgaccess.Role, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roles[i], errs[i] = l.acc.CreateRole(context.Background(), pgaccess.Grant{Principal: "bob", Scope: "analytics",
				Tables: []pgaccess.TableAccess{{TableID: l.customers, Files: true}}, Expiry: time.Now().Add(time.Hour)})
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("vend %d: %v", i, errs[i])
		}
		r := roles[i]
		t.Cleanup(func() { l.Pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{r.Name}.Sanitize()) })
		if seen[r.Name] {
			t.Fatalf("two vends share role %s", r.Name)
		}
		seen[r.Name] = true
		if !strings.HasPrefix(r.Name, "duckicelake_p_bob_") {
			t.Errorf("role name %s", r.Name)
		}
	}
	for i := range n {
		if _, err := connect(t, l, roles[i]); err != nil {
			t.Errorf("vend %d does not log in: %v", i, err)
		}
		wrong := roles[i]
		wrong.Password = roles[(i+1)%n].Password
		if _, err := connect(t, l, wrong); pgCode(err) != "28P01" {
			t.Errorf("vend %d logs in with another vend's password: %v", i, err)
		}
	}
}

// TestExpiredRole: past VALID UNTIL a role cannot log in, and the sweep
// drops it.
func TestExpiredRole(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	exp := time.Now().Add(2 * time.Second)
	r, err := l.acc.CreateRole(ctx, pgaccess.Grant{Principal: "bob", Scope: "analytics", Expiry: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{r.Name}.Sanitize()) })
	if n, err := l.acc.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v", n, err)
	}
	time.Sleep(time.Until(r.Expiry.Add(time.Second)))
	if _, err := connect(t, l, r); pgCode(err) != "28P01" {
		t.Fatalf("an expired role logs in: %v", err)
	}
	if n, err := l.acc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after expiry: %d, %v", n, err)
	}
	var exists bool
	if err := l.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, r.Name).Scan(&exists); err != nil || exists {
		t.Fatalf("role after the sweep: exists %v, %v", exists, err)
	}
	if _, err := l.acc.CreateRole(ctx, pgaccess.Grant{Principal: "bob", Expiry: time.Now().Add(-time.Minute)}); !errors.Is(err, pgaccess.ErrNoExpiry) {
		t.Errorf("a vend expiring in the past: %v", err)
	}
}

// TestNewCatalogTables: a ducklake_* table that appears later is covered
// by its table_id automatically; one with nothing to police fails the
// vend closed.
func TestNewCatalogTables(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true}) // armed
	if _, err := l.Pool.Exec(ctx, `CREATE TABLE ducklake_future_stats (table_id bigint, secret text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Pool.Exec(ctx, `INSERT INTO ducklake_future_stats VALUES ($1, 'visible'), ($2, 'hidden')`, l.customers, l.orders); err != nil {
		t.Fatal(err)
	}
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	c := mustConnect(t, l, r)
	rows, err := c.Query(ctx, `SELECT secret FROM ducklake_future_stats`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(got) != 1 || got[0] != "visible" {
		t.Errorf("new table through the policy: %v, %v", got, err)
	}
	if _, err := l.Pool.Exec(ctx, `CREATE TABLE ducklake_future_secrets (payload text)`); err != nil {
		t.Fatal(err)
	}
	_, err = l.acc.CreateRole(ctx, pgaccess.Grant{Principal: "bob", Expiry: time.Now().Add(time.Hour)})
	var ue *pgaccess.UnknownTableError
	if !errors.As(err, &ue) || len(ue.Tables) != 1 || ue.Tables[0] != "ducklake_future_secrets" {
		t.Fatalf("vend with an unknown table: %v", err)
	}
	if _, err := c.Exec(ctx, `SELECT * FROM ducklake_future_secrets`); pgCode(err) != "42501" {
		t.Errorf("unknown table readable: %v", err)
	}
}

// TestArmIdempotent: processes arming at once leave one consistent set of
// policies; arming again changes nothing; a dropped policy heals on the
// next vend.
func TestArmIdempotent(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc, err := pgaccess.New(ctx, l.Pool, pgaccess.Config{})
			if err == nil {
				err = acc.Arm(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	policies := func() int {
		var n int
		if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_policies WHERE policyname LIKE 'duckicelake_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := policies()
	if before == 0 {
		t.Fatal("no policies armed")
	}
	if err := l.acc.Arm(ctx); err != nil {
		t.Fatal(err)
	}
	if after := policies(); after != before {
		t.Errorf("arming again: %d policies, want %d", after, before)
	}
	if _, err := l.Pool.Exec(ctx, `DROP POLICY duckicelake_reader_v1 ON ducklake_table`); err != nil {
		t.Fatal(err)
	}
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	if after := policies(); after != before {
		t.Errorf("after self-heal: %d policies, want %d", after, before)
	}
	c := mustConnect(t, l, r)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM ducklake_table WHERE table_id = $1`, l.orders).Scan(&n); err != nil || n != 0 {
		t.Errorf("hidden table after self-heal: %d rows, %v", n, err)
	}
}
