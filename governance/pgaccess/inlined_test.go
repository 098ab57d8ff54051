package pgaccess_test

import (
	"context"
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
