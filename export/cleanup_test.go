package export

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestDuckLakeCleanupKeepsExportsWhole: DuckDB's own maintenance —
// compaction, snapshot expiry and ducklake_cleanup_old_files, which deletes
// the base files compaction ended — never takes a file an export needs.
// A masked copy is built from the current snapshot's base files only and
// owns its files (under the export prefix, which DuckLake never cleans),
// so the copy built before the maintenance still reads in full, and the
// next one, built from the compacted files, reads the same masked rows.
func TestDuckLakeCleanupKeepsExportsWhole(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	// More base files for compaction to merge.
	ev.lake.Exec(t, "INSERT INTO lake.analytics.customers VALUES (5, 'erin@example.com', 'EU', 700)",
		"CALL ducklake_flush_inlined_data('lake')",
		"INSERT INTO lake.analytics.customers VALUES (6, 'frank@work.net', 'EU', 600)",
		"CALL ducklake_flush_inlined_data('lake')")
	m := ev.manager(time.Hour)
	defer m.Close()
	before := builtExport(t, ev, m)
	want := emails(t, ev.lake.Duck, before)
	if len(want) == 0 || slices.ContainsFunc(want, func(s string) bool { return len(s) > 5 }) {
		t.Fatalf("masked copy reads %v", want)
	}

	ev.lake.Exec(t,
		"CALL ducklake_merge_adjacent_files('lake')",
		"CALL ducklake_expire_snapshots('lake', older_than => now() + INTERVAL 1 second)",
		"CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
	var scheduled int
	if err := ev.lake.Pool.QueryRow(ctx, "SELECT count(*) FROM ducklake_files_scheduled_for_deletion").Scan(&scheduled); err != nil {
		t.Fatal(err)
	}
	if scheduled != 0 {
		t.Fatalf("cleanup left %d files scheduled", scheduled)
	}

	for _, f := range before.Files {
		if !exists(t, f.Location) {
			t.Errorf("DuckLake's cleanup deleted masked copy %s", f.Location)
		}
	}
	if got := emails(t, ev.lake.Duck, before); !slices.Equal(got, want) {
		t.Errorf("the earlier copy reads %v after cleanup, want %v", got, want)
	}
	tb, pl := ev.planFor(t, true)
	after, err := m.Ensure(ctx, tb, &pl, ev.snapshot(t))
	if err != nil {
		t.Fatalf("export after compaction and cleanup: %v", err)
	}
	if got := emails(t, ev.lake.Duck, after); !slices.Equal(got, want) {
		t.Errorf("the copy built after cleanup reads %v, want %v", got, want)
	}
}
