package export

import (
	"context"
	"testing"

	"github.com/duckicelake/duckicelake/internal/objstore"
)

// TestShadowFilesOfOldBuildsAreRetired: each build writes its own shadow
// metadata (metadata.json, manifest list, manifests). When a newer build
// becomes current, the older build's shadow files are kept for the grace
// period — a client that loaded them may still be reading — and then
// deleted; the current build's are never due.
func TestShadowFilesOfOldBuildsAreRetired(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m, pastGrace := ev.clockedManager(t)
	first := builtExport(t, ev, m)
	ev.lake.Exec(t, "INSERT INTO lake.analytics.customers VALUES (9, 'ivan@work.net', 'EU', 100)")
	second := builtExport(t, ev, m)
	if second.MetadataLocation == first.MetadataLocation {
		t.Fatal("the second build reused the first one's metadata")
	}
	store := objstore.NewDir()
	if _, err := ev.x.Collect(ctx, store); err != nil {
		t.Fatal(err)
	}
	if !exists(t, first.MetadataLocation) {
		t.Fatal("the first build's metadata was deleted inside the grace period")
	}
	pastGrace()
	c, err := ev.x.Collect(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if exists(t, first.MetadataLocation) {
		t.Errorf("the first build's metadata %s survived the grace (collected %+v)", first.MetadataLocation, c)
	}
	if !exists(t, second.MetadataLocation) {
		t.Errorf("the current build's metadata %s was deleted", second.MetadataLocation)
	}
	var old, current int
	if err := ev.lake.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE delete_at <> 'infinity'), count(*) FILTER (WHERE delete_at = 'infinity')
		FROM duckicelake_export_retired`).Scan(&old, &current); err != nil {
		t.Fatal(err)
	}
	if old != 0 || current < 2 {
		t.Errorf("retired list: %d due, %d kept for the current build; want 0 and its metadata.json, manifest list and manifests", old, current)
	}
	// Dropping the table forgets the current build's entries: its whole
	// directory goes.
	if err := ev.x.DropTable(ctx, store, second.TableID, true); err != nil {
		t.Fatal(err)
	}
	if exists(t, second.MetadataLocation) {
		t.Error("purge left the current shadow metadata")
	}
	var left int
	if err := ev.lake.Pool.QueryRow(ctx, `SELECT count(*) FROM duckicelake_export_retired`).Scan(&left); err != nil || left != 0 {
		t.Errorf("retired list after the purge: %d rows, %v", left, err)
	}
}
