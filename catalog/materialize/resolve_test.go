package materialize_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestMaterializerResolves runs the DuckDB scenario (then DuckDB's flush,
// which rewrites history) and asks a Materializer for every table at every
// snapshot, in format versions 2 and 3. Each answer must be byte for byte
// what Materialise builds at the snapshot asked for, while the Materializer
// builds once per snapshot at which the table changed: a commit to another
// table costs none.
func TestMaterializerResolves(t *testing.T) {
	ctx := context.Background()
	dsn, data, conn := newLake(t)
	src := materialize.NewPGSource(conn, "")
	r := ducklake.NewReader(conn, "")
	tableID := func(name string, snap int64) int64 {
		t.Helper()
		tbl, err := r.TableByName(ctx, snap, "main", name)
		if err != nil {
			t.Fatal(err)
		}
		return tbl.ID
	}

	// check compares every (table, snapshot) of rep with a fresh
	// Materializer and returns the snapshot each resolved to.
	check := func(phase string, rep duckReport, version int) map[string]map[int64]int64 {
		t.Helper()
		opts := materialize.Options{FormatVersion: version, Objects: materialize.NewPositionCache(objstore.NewDir(), 0)}
		mat := materialize.NewMaterializer(materialize.Config{Source: src, Writer: objstore.NewDir(), Options: opts})
		resolvedAt := map[string]map[int64]int64{}
		keys := map[[2]int64]bool{}
		pairs, failed := 0, 0
		for _, s := range rep.Snapshots {
			for name := range s.Tables {
				id := tableID(name, s.ID)
				what := fmt.Sprintf("%s, v%d: %s at %d", phase, version, name, s.ID)
				pairs++
				want, werr := materialize.Materialise(ctx, src, id, s.ID, opts)
				got, err := mat.Materialize(ctx, id, s.ID)
				if werr != nil {
					failed++
					if !errors.Is(werr, materialize.ErrUnrepresentable) || !errors.Is(err, materialize.ErrUnrepresentable) {
						t.Errorf("%s: Materialise: %v; Materializer: %v", what, werr, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if string(got.MetadataJSON) != string(want.MetadataJSON) || got.MetadataLocation != want.MetadataLocation {
					t.Errorf("%s: the Materializer serves %s, Materialise builds %s", what, got.MetadataLocation, want.MetadataLocation)
				}
				res, err := src.Resolve(ctx, id, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if res.Snapshot > s.ID || res.FormatVersion != 0 {
					t.Errorf("%s: resolved %+v", what, res)
				}
				keys[[2]int64{id, res.Snapshot}] = true
				if resolvedAt[name] == nil {
					resolvedAt[name] = map[int64]int64{}
				}
				resolvedAt[name][s.ID] = res.Snapshot
			}
		}
		// Errors are not cached: each failed request built.
		if want := len(keys) + failed; mat.Builds() != want {
			t.Errorf("%s, v%d: %d builds for %d distinct resolved snapshots and %d refusals", phase, version, mat.Builds(), len(keys), failed)
		}
		t.Logf("%s, v%d: %d (table, snapshot) pairs, %d builds", phase, version, pairs, mat.Builds())
		return resolvedAt
	}

	var rep duckReport
	scenario(t, &rep, "write", dsn, data)
	first, last := rep.Snapshots[0].ID, rep.Snapshots[len(rep.Snapshots)-1].ID
	idpCreated := int64(-1)
	for _, s := range rep.Snapshots {
		if _, ok := s.Tables["idp"]; ok && idpCreated < 0 {
			idpCreated = s.ID
		}
	}
	for _, version := range []int{2, 3} {
		at := check("write", rep, version)
		// The statements after ev's last are on other tables: ev is built
		// once for all of them, as of a snapshot before they began.
		ev := at["ev"]
		if ev[last] != ev[idpCreated] || ev[last] >= idpCreated {
			t.Errorf("v%d: ev resolves to %d at %d (idp created) and %d at %d", version, ev[idpCreated], idpCreated, ev[last], last)
		}
		distinct := map[int64]bool{}
		for _, r := range ev {
			distinct[r] = true
		}
		if len(distinct) >= len(ev) {
			t.Errorf("v%d: ev resolves to %d snapshots at %d", version, len(distinct), len(ev))
		}
	}

	var after duckReport
	scenario(t, &after, "flush", dsn, data)
	newest := after.Snapshots[len(after.Snapshots)-1].ID
	for _, version := range []int{2, 3} {
		at := check("flush", after, version)
		// The flush rewrote ev's history with begin snapshots before it:
		// the snapshot that wrote it counts.
		if at["ev"][newest] != newest {
			t.Errorf("v%d: after the flush, ev at %d resolves to %d", version, newest, at["ev"][newest])
		}
	}

	t.Run("format version property", func(t *testing.T) {
		mat := materialize.NewMaterializer(materialize.Config{Source: src, Writer: objstore.NewDir(),
			Options: materialize.Options{Objects: materialize.NewPositionCache(objstore.NewDir(), 0)}})
		ev, idp := tableID("ev", newest), tableID("idp", newest)
		v2, err := mat.Materialize(ctx, ev, newest)
		if err != nil || v2.Metadata.FormatVersion != 2 {
			t.Fatalf("before the upgrade: %v", err)
		}
		setVersion := func(v string) {
			t.Helper()
			if _, err := conn.Exec(ctx, `INSERT INTO duckicelake_table_property (table_id, key, value) VALUES ($1, $2, $3)
				ON CONFLICT (table_id, key) DO UPDATE SET value = excluded.value`, ev, materialize.FormatVersionProperty, v); err != nil {
				t.Fatal(err)
			}
		}
		setVersion("3")
		v3, err := mat.Materialize(ctx, ev, newest)
		if err != nil {
			t.Fatal(err)
		}
		if v3.Metadata.FormatVersion != 3 || v3.Metadata.NextRowID == nil || mat.Builds() != 2 {
			t.Fatalf("after the upgrade: format version %d, %d builds", v3.Metadata.FormatVersion, mat.Builds())
		}
		checkDeletionVectors(t, v3)
		want, _ := after.ids(newest, "ev")
		readers(t, []readRequest{{Metadata: v3.MetadataLocation, Snapshot: v3.Metadata.CurrentSnapshot().SnapshotID, want: want, what: "ev upgraded to v3"}})
		if other, err := mat.Materialize(ctx, idp, newest); err != nil || other.Metadata.FormatVersion != 2 {
			t.Errorf("idp, not upgraded: %v", err)
		}
		setVersion("2")
		if again, err := mat.Materialize(ctx, ev, newest); err != nil || again != v2 {
			t.Errorf("back to 2: %v, cached result %v", err, again == v2)
		}
		setVersion("x")
		if _, err := mat.Materialize(ctx, ev, newest); !errors.Is(err, materialize.ErrUnsupported) {
			t.Errorf("format version x: %v, want ErrUnsupported", err)
		}
		if _, err := conn.Exec(ctx, `DELETE FROM duckicelake_table_property WHERE table_id = $1`, ev); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("expired snapshot", func(t *testing.T) {
		mat := materialize.NewMaterializer(materialize.Config{Source: src, Writer: objstore.NewDir(), Options: materialize.Options{Objects: objstore.NewDir()}})
		ev := tableID("ev", newest)
		before, err := mat.Materialize(ctx, ev, newest)
		if err != nil {
			t.Fatal(err)
		}
		// Expiring a snapshot inside the history changes it without a new
		// snapshot: the cached result is stale.
		expired := before.Metadata.Snapshots[1].SnapshotID
		if _, err := conn.Exec(ctx, `DELETE FROM ducklake_snapshot WHERE snapshot_id = $1`, expired); err != nil {
			t.Fatal(err)
		}
		got, err := mat.Materialize(ctx, ev, newest)
		if err != nil {
			t.Fatal(err)
		}
		want, err := materialize.Materialise(ctx, src, ev, newest, materialize.Options{Objects: objstore.NewDir()})
		if err != nil {
			t.Fatal(err)
		}
		if mat.Builds() != 2 || string(got.MetadataJSON) != string(want.MetadataJSON) || got.Metadata.SnapshotByID(expired) != nil {
			t.Errorf("after expiring snapshot %d: %d builds, fresh metadata %v", expired, mat.Builds(), string(got.MetadataJSON) == string(want.MetadataJSON))
		}
	})

	t.Run("not found", func(t *testing.T) {
		for _, tc := range []struct{ table, snap int64 }{{tableID("ev", newest), newest + 100}, {999, newest}, {tableID("idp", newest), first}} {
			if _, err := src.Resolve(ctx, tc.table, tc.snap); !errors.Is(err, ducklake.ErrNotFound) {
				t.Errorf("Resolve(%d, %d) = %v, want ErrNotFound", tc.table, tc.snap, err)
			}
		}
	})
}

// TestMaterializerAfterDuckDBExpiry: DuckDB's ducklake_expire_snapshots
// deletes snapshots and their change rows without making a new snapshot.
// A table whose last change was expired must still be served as of its
// current state (its files whose begin snapshot is gone show at the next
// snapshot), and a result cached before an expiry must not be served after
// it, whether the expiry removed the table's last change or an earlier one.
func TestMaterializerAfterDuckDBExpiry(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	testsupport.Python(t)
	data := filepath.Join(t.TempDir(), "lake") + "/"
	duck := func(stmts ...string) {
		t.Helper()
		testsupport.DuckDB(t, nil, dsn, data, stmts...)
	}
	duck("CALL l.set_option('data_inlining_row_limit', 0)",
		"CREATE TABLE l.t(id BIGINT)", // 1
		"CREATE TABLE l.u(id BIGINT)", // 2
		"INSERT INTO l.t VALUES (1)",  // 3
		"INSERT INTO l.t VALUES (2)",  // 4
		"INSERT INTO l.u VALUES (9)",  // 5
		"INSERT INTO l.u VALUES (10)") // 6
	conn := pgtest.Connect(t, dsn)
	src := materialize.NewPGSource(conn, "")
	tbl, err := ducklake.NewReader(conn, "").TableByName(ctx, 6, "main", "t")
	if err != nil {
		t.Fatal(err)
	}
	mat := materialize.NewMaterializer(materialize.Config{Source: src, Writer: objstore.NewDir(), Options: materialize.Options{Objects: objstore.NewDir()}})
	records := func(res *materialize.Result) string {
		md := res.Metadata
		if md.CurrentSnapshotID == nil || md.SnapshotByID(*md.CurrentSnapshotID) == nil {
			return "no current snapshot"
		}
		return md.SnapshotByID(*md.CurrentSnapshotID).Summary["total-records"]
	}
	check := func(phase string, wantRecords string, wantSnaps int) {
		t.Helper()
		got, err := mat.Materialize(ctx, tbl.ID, 6)
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		want, err := materialize.Materialise(ctx, src, tbl.ID, 6, materialize.Options{Objects: objstore.NewDir()})
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		if string(got.MetadataJSON) != string(want.MetadataJSON) {
			t.Errorf("%s: the Materializer serves %s, Materialise builds %s", phase, got.MetadataLocation, want.MetadataLocation)
		}
		if r := records(got); r != wantRecords || len(got.Metadata.Snapshots) != wantSnaps {
			t.Errorf("%s: %s records in %d snapshots, want %s in %d", phase, r, len(got.Metadata.Snapshots), wantRecords, wantSnaps)
		}
	}
	check("before", "2", 2)
	builds := mat.Builds()
	// Snapshot 4, t's last change, goes: t's second file now shows at 5.
	duck("SELECT count(*) FROM ducklake_expire_snapshots('l', versions => [4])")
	check("t's last change expired", "2", 2)
	// Snapshot 3, an earlier change of t, goes: its first file shows at 5 too.
	duck("SELECT count(*) FROM ducklake_expire_snapshots('l', versions => [3])")
	check("t's first change expired", "2", 1)
	if n := mat.Builds() - builds; n != 2 {
		t.Errorf("%d builds after two expiries, want 2", n)
	}
}
