package pgaccess_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/internal/duckenv"
)

// lake is a catalog with analytics.customers (visible to the reader) and
// analytics.orders (hidden), written as Parquet files.
type lake struct {
	*govtest.Lake
	acc                 *pgaccess.Access
	customers, orders   int64
	dataPath            string
}

func newLake(t *testing.T) *lake {
	t.Helper()
	l := govtest.New(t, "CALL lake.set_option('data_inlining_row_limit', 0)")
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

func TestReaderSeesOnlyGrantedTables(t *testing.T) {
	l := newLake(t)
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	db := l.duck(t, readerDSN(t, l, r))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM lake.analytics.customers`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("customers: %d rows, want 2", n)
	}
	_, err := db.Exec(`SELECT count(*) FROM lake.analytics.orders`)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("orders: err %v, want does not exist", err)
	}
}
