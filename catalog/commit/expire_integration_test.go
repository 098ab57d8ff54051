package commit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// duckSQL runs statements with DuckDB 1.5 attached to the DuckLake catalog
// at dsn (test/catalog/rest_duckdb.py) and returns each one's rows.
func duckSQL(t *testing.T, dsn, dataPath string, stmts ...string) [][][]any {
	t.Helper()
	var out [][][]any
	testsupport.DuckDB(t, &out, dsn, dataPath, stmts...)
	return out
}

// cloneDatabase copies the database of dsn (which must have no open
// connections) and returns the copy's DSN; it is dropped when t ends.
func cloneDatabase(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	src := cfg.Database
	clone := src + "_clone"
	// A template must have no connections: work from the maintenance
	// database.
	maint := strings.Replace(dsn, "dbname="+src, "dbname=postgres", 1)
	admin := pgtest.Connect(t, maint)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+clone+" TEMPLATE "+src); err != nil {
		t.Fatalf("clone %s: %v", src, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), maint)
		if err != nil {
			t.Errorf("drop %s: %v", clone, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+clone+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", clone, err)
		}
	})
	return strings.Replace(dsn, "dbname="+src, "dbname="+clone, 1)
}

// dumpCatalog renders every row of every table in the public schema,
// sorted, leaving out the times expiry stamps (schedule_start).
func dumpCatalog(t *testing.T, dsn string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	c := pgtest.Connect(t, dsn)
	rows, err := c.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, tbl := range tables {
		rows, err := c.Query(ctx, `SELECT (to_jsonb(x) - 'schedule_start')::text FROM `+pgx.Identifier{tbl}.Sanitize()+` x`)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(rs)
		out[tbl] = rs
	}
	return out
}

// TestExpireSnapshotsMatchesDuckDB: on two copies of one catalog that DuckDB
// wrote (appends, a whole-file delete, position deletes, a dropped table, a
// schema with a view created and dropped, a column added), DuckDB's
// ducklake_expire_snapshots and expireSnapshots leave the same rows, and
// the rows the expiry must have touched did change.
func TestExpireSnapshotsMatchesDuckDB(t *testing.T) {
	dsn := pgtest.Database(t)
	data := t.TempDir() + "/"
	duckSQL(t, dsn, data,
		"CALL l.set_option('data_inlining_row_limit', 0)",
		"CREATE TABLE l.t(i INT)",              // 1
		"INSERT INTO l.t VALUES (1),(2),(3)",   // 2
		"INSERT INTO l.t VALUES (4)",           // 3
		"DELETE FROM l.t WHERE i = 4",          // 4: file of 3 ends
		"DELETE FROM l.t WHERE i = 1",          // 5: delete file
		"CREATE TABLE l.d(x INT)",              // 6
		"INSERT INTO l.d VALUES (1)",           // 7
		"DROP TABLE l.d",                       // 8
		"CREATE SCHEMA l.x",                    // 9
		"CREATE VIEW l.x.v AS SELECT 1 AS one", // 10
		"DROP VIEW l.x.v",                      // 11
		"DROP SCHEMA l.x",                      // 12
		"ALTER TABLE l.t ADD COLUMN k INT",     // 13
		"INSERT INTO l.t VALUES (5, 5)",        // 14
		"UPDATE l.t SET k = 6 WHERE i = 5",     // 15
	)
	clone := cloneDatabase(t, dsn)
	before := dumpCatalog(t, dsn)
	expire := []int64{3, 4, 6, 7, 9, 10, 11, 13, 14}

	ids := make([]string, len(expire))
	for i, id := range expire {
		ids[i] = fmt.Sprint(id)
	}
	duckSQL(t, dsn, data, "SELECT count(*) FROM ducklake_expire_snapshots('l', versions => ["+strings.Join(ids, ",")+"])")

	ctx := context.Background()
	conn := pgtest.Connect(t, clone)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if err := New(Config{}).expireSnapshots(ctx, tx, expire); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	duck, ours := dumpCatalog(t, dsn), dumpCatalog(t, clone)
	for _, tbl := range slices.Sorted(func(yield func(string) bool) {
		for k := range duck {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Equal(duck[tbl], ours[tbl]) {
			t.Errorf("%s differs:\nDuckDB: %q\nours:   %q", tbl, duck[tbl], ours[tbl])
		}
	}
	if len(ours) != len(duck) {
		t.Errorf("tables: DuckDB %d, ours %d", len(duck), len(ours))
	}
	// The scenario exercises every kind of row the expiry removes.
	for _, tbl := range []string{"ducklake_snapshot", "ducklake_data_file", "ducklake_file_column_stats", "ducklake_table", "ducklake_column", "ducklake_schema", "ducklake_view"} {
		if len(duck[tbl]) >= len(before[tbl]) {
			t.Errorf("%s: %d rows before the expiry, %d after", tbl, len(before[tbl]), len(duck[tbl]))
		}
	}
	if len(duck["ducklake_files_scheduled_for_deletion"]) < 2 {
		t.Errorf("scheduled for deletion: %q", duck["ducklake_files_scheduled_for_deletion"])
	}
}
