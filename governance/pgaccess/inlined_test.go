package pgaccess_test

import (
	"context"
	"testing"

	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
)

// TestInlinedRows: rows DuckDB keeps inlined in Postgres never reach a
// reader (their tables are never granted, and the reader is told of none,
// so its scans read the Parquet files and do not fail); once flushed to
// Parquet they read like any other.
func TestInlinedRows(t *testing.T) {
	l := govtest.New(t, govtest.Customers...) // the 2 rows inserted are inlined
	ctx := context.Background()
	acc, err := pgaccess.New(ctx, l.Pool, pgaccess.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lk := &lake{Lake: l, acc: acc}
	if err := l.Pool.QueryRow(ctx, `SELECT table_id FROM ducklake_table WHERE table_name = 'customers' AND end_snapshot IS NULL`).Scan(&lk.customers); err != nil {
		t.Fatal(err)
	}
	if err := l.Pool.QueryRow(ctx, `SELECT value FROM ducklake_metadata WHERE key = 'data_path'`).Scan(&lk.dataPath); err != nil {
		t.Fatal(err)
	}
	var inlined int
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM ducklake_inlined_data_tables`).Scan(&inlined); err != nil || inlined == 0 {
		t.Fatalf("the setup inlined nothing: %d, %v", inlined, err)
	}
	r := lk.vend(t, pgaccess.TableAccess{TableID: lk.customers, Files: true})
	db := lk.duck(t, readerDSN(t, lk, r))
	count := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM lake.analytics.customers`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Errorf("inlined rows reached a reader: %d", n)
	}
	l.Exec(t, "CALL ducklake_flush_inlined_data('lake')")
	if n := count(); n != 2 {
		t.Errorf("flushed rows: %d, want 2", n)
	}
}
