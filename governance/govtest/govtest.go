// Package govtest gives governance tests a real DuckLake catalog: a fresh
// Postgres database (catalog/ducklake/pgtest) initialised as DuckLake,
// with an embedded DuckDB attached to it (ducklake and postgres extensions
// from the pinned venv) to create, rename and drop tables the way users
// do, and the governance store over it. Test-only.
package govtest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the embedded DuckDB
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// ExtensionDir is where the pinned DuckDB extensions are installed:
// $DUCKICELAKE_DUCKDB_EXTENSIONS, else <repo>/.venv/duckdb-extensions.
// Without them the test skips, or fails under CI.
func ExtensionDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("DUCKICELAKE_DUCKDB_EXTENSIONS"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	d := filepath.Join(filepath.Dir(file), "..", "..", ".venv", "duckdb-extensions")
	if _, err := os.Stat(d); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no DuckDB extensions at %s (scripts/venv.sh installs them)", d)
		}
		t.Skipf("no DuckDB extensions at %s; run scripts/venv.sh", d)
	}
	return d
}

// Lake is a DuckLake catalog for one test.
type Lake struct {
	DSN   string
	Pool  *pgxpool.Pool
	Store *store.Store
	// Duck is an embedded DuckDB with the catalog attached as "lake".
	Duck *sql.DB
}

// New creates the catalog, runs setup in DuckDB (statements against
// "lake.…") and returns it; everything is closed when t ends.
func New(t testing.TB, setup ...string) *Lake {
	t.Helper()
	ext := ExtensionDir(t)
	dsn := pgtest.Database(t)
	ctx := context.Background()
	data := t.TempDir() + "/"
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: data}); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	duck.SetMaxOpenConns(1)
	t.Cleanup(func() { duck.Close() })
	l := &Lake{DSN: dsn, Pool: pool, Store: store.New(pool, ""), Duck: duck}
	l.Exec(t, "SET extension_directory = '"+ext+"'", "SET autoinstall_known_extensions = false",
		"LOAD ducklake", "LOAD postgres", "ATTACH 'ducklake:postgres:"+dsn+"' AS lake (DATA_PATH '"+data+"')")
	l.Exec(t, setup...)
	return l
}

// Exec runs statements in the attached DuckDB, failing t on an error.
func (l *Lake) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := l.Duck.Exec(q); err != nil {
			t.Fatalf("DuckDB: %s: %v", q, err)
		}
	}
}

// Customers is the seeds' sample: analytics.customers and
// analytics.orders.
var Customers = []string{
	"CREATE SCHEMA lake.analytics",
	"CREATE TABLE lake.analytics.customers (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER)",
	"INSERT INTO lake.analytics.customers VALUES (1, 'alice@example.com', 'EU', 2400), (2, 'bob@personal.io', 'US', 1800)",
	"CREATE TABLE lake.analytics.orders (id BIGINT, customer_id BIGINT, amount DOUBLE)",
}

// SQLCheck opens the authoring-time SQL checker (governance/sqlcheck) that
// admin.New takes, closed when t ends.
func SQLCheck(t testing.TB) *sqlcheck.Checker {
	t.Helper()
	check, err := sqlcheck.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check.Close() })
	return check
}
