package pgaccess_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/duckicelake/duckicelake/governance/pgaccess"
)

// TestInlinedRows: rows DuckDB keeps inlined in Postgres never reach a
// reader (their tables are never granted, and the reader is told of none,
// so its scans read the Parquet files and do not fail); once flushed to
// Parquet they read like any other.
func TestInlinedRows(t *testing.T) {
	l := newLakeWith(t) // DuckDB's default: the small inserts are inlined
	ctx := context.Background()
	var inlined int
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM ducklake_inlined_data_tables`).Scan(&inlined); err != nil || inlined == 0 {
		t.Fatalf("the setup inlined nothing: %d, %v", inlined, err)
	}
	r := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	db := l.duck(t, readerDSN(t, l, r))
	if n := customers(t, db); n != 0 {
		t.Errorf("inlined rows reached a reader: %d", n)
	}
	l.Exec(t, "CALL ducklake_flush_inlined_data('lake')")
	if n := customers(t, db); n != 2 {
		t.Errorf("flushed rows: %d, want 2", n)
	}
}

// TestInlinedDeletions: a deletion DuckDB keeps inlined in Postgres
// (ducklake_inlined_delete_<table id>, made by the first small DELETE) is
// granted to the readers of that table's files, so they read the table
// right — it once failed their every scan with "permission denied" — and
// hidden from the others; the next Ensure arms the new table.
func TestInlinedDeletions(t *testing.T) {
	l := newLake(t) // the rows in Parquet files
	ctx := context.Background()
	reader := l.vend(t, pgaccess.TableAccess{TableID: l.customers, Files: true})
	other := l.vend(t, pgaccess.TableAccess{TableID: l.orders, Files: true}, pgaccess.TableAccess{TableID: l.customers, Files: false})
	l.Exec(t, "CALL lake.set_option('data_inlining_row_limit', 10)", "DELETE FROM lake.analytics.customers WHERE id = 1")
	var tables int
	if err := l.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = $1`, fmt.Sprintf("ducklake_inlined_delete_%d", l.customers)).Scan(&tables); err != nil || tables != 1 {
		t.Fatalf("the DELETE inlined nothing: %d tables, %v", tables, err)
	}
	if err := l.acc.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	db := l.duck(t, readerDSN(t, l, reader))
	if n := customers(t, db); n != 1 {
		t.Errorf("reader: %d customers, want 1 (the inlined deletion applied)", n)
	}
	c, err := connect(t, l, other)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM ducklake_inlined_delete_%d`, l.customers)).Scan(&n); err != nil || n != 0 {
		t.Errorf("a reader without the table's files sees %d inlined deletions (%v)", n, err)
	}
}
