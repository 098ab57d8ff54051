package export

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/objstore"
)

// builtExport makes bob's masked copy of customers (with its shadow
// metadata) and returns it.
func builtExport(t *testing.T, ev *env, m *Manager) *Export {
	t.Helper()
	tb, pl := ev.planFor(t, true)
	e, err := m.Ensure(context.Background(), tb, &pl, ev.snapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Files) == 0 || e.MetadataLocation == "" {
		t.Fatalf("export without files or metadata: %+v", e)
	}
	return e
}

func exists(t *testing.T, loc string) bool {
	t.Helper()
	_, err := os.Stat(objstore.MustParse(loc).Path())
	return err == nil
}

// TestCollectDroppedTable: DuckDB drops a table that has a masked copy; the
// sweep retires the copy with the grace period (a credential vended for
// it may still be reading), then deletes the whole export directory, and
// nothing else.
func TestCollectDroppedTable(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m, pastGrace := ev.clockedManager(t)
	e := builtExport(t, ev, m)
	store := objstore.NewDir()

	// A live table's export is not touched.
	if c, err := ev.x.Collect(ctx, store); err != nil || c != (Collected{}) {
		t.Fatalf("Collect with every table live = %+v, %v", c, err)
	}
	ev.lake.Exec(t, "DROP TABLE lake.analytics.customers")
	c, err := ev.x.Collect(ctx, store)
	if err != nil || c.Dropped != 1 || c.Deleted != 0 {
		t.Fatalf("Collect after the drop = %+v, %v; want 1 export retired, nothing deleted yet", c, err)
	}
	if !exists(t, e.Files[0].Location) || !exists(t, e.MetadataLocation) {
		t.Fatal("the copy was deleted inside the grace period")
	}
	if _, ok, _ := ev.x.Current(ctx, e.TableID, e.Signature); ok {
		t.Fatal("the dropped table's export is still current")
	}
	pastGrace()
	if c, err := ev.x.Collect(ctx, store); err != nil || c.Deleted != 1 {
		t.Fatalf("Collect after the grace = %+v, %v; want the export directory deleted", c, err)
	}
	for _, loc := range []string{e.Files[0].Location, e.MetadataLocation} {
		if exists(t, loc) {
			t.Errorf("%s survived the collection", loc)
		}
	}
	if c, err := ev.x.Collect(ctx, store); err != nil || c != (Collected{}) {
		t.Fatalf("a second Collect = %+v, %v; want nothing left to do", c, err)
	}
}

// TestDropTablePurge: a purge deletes the masked copies at once; a plain
// drop keeps them for the grace period.
func TestDropTablePurge(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m := ev.manager(time.Hour)
	defer m.Close()
	e := builtExport(t, ev, m)
	store := objstore.NewDir()
	if err := ev.x.DropTable(ctx, store, e.TableID, false); err != nil {
		t.Fatal(err)
	}
	if !exists(t, e.Files[0].Location) {
		t.Fatal("a drop without purge deleted the copy inside the grace period")
	}
	// The purge that follows (DROP … PURGE after a plain drop, or the
	// catalog's purge) deletes them at once.
	if err := ev.x.DropTable(ctx, store, e.TableID, true); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{e.Files[0].Location, e.MetadataLocation} {
		if exists(t, loc) {
			t.Errorf("%s survived the purge", loc)
		}
	}
}

// TestCollectNeverLeavesTheExportPrefix: a retired entry naming a base
// file (a corrupt or forged row) is forgotten, never deleted.
func TestCollectNeverLeavesTheExportPrefix(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	base, err := os.CreateTemp(ev.data, "base-*.parquet")
	if err != nil {
		t.Fatal(err)
	}
	base.Close()
	loc := "file://" + base.Name()
	if _, err := objstore.Parse(loc); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{loc, "file://" + ev.data} {
		if _, err := ev.lake.Pool.Exec(ctx, `INSERT INTO duckicelake_export_retired (location, delete_at) VALUES ($1, now() - interval '1 day')`, l); err != nil {
			t.Fatal(err)
		}
	}
	c, err := ev.x.Collect(ctx, objstore.NewDir())
	if err != nil || c.Deleted != 0 {
		t.Fatalf("Collect = %+v, %v; want nothing deleted", c, err)
	}
	if _, err := os.Stat(base.Name()); err != nil {
		t.Fatalf("a base file was deleted: %v", err)
	}
	var left int
	ev.lake.Pool.QueryRow(ctx, `SELECT count(*) FROM duckicelake_export_retired`).Scan(&left)
	if left != 0 {
		t.Errorf("%d forged entries kept; want them forgotten", left)
	}
}
