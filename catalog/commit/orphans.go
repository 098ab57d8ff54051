package commit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// scheduleClientManifests schedules for deletion the manifest list of
// snapshot s and the manifests s added, in the commit's transaction: the
// table is the DuckLake table and the Iceberg metadata served for it is
// materialize's, so once the commit is durable nothing references what the
// client wrote (issue 15 item 5: without this, every engine commit left
// them behind). Only what the commit read is scheduled, so only files
// inside the table's location (TableDir.inside decided before the read)
// that parsed as Avro manifest lists and manifests, never a data or delete
// file (Parquet or Puffin). Kept all the same: a name materialize gives
// its own files (a client may name one of those as its manifest list) and
// a path the table records as a data or delete file. The deletion waits
// for the cleanup grace (Catalog.CleanupScheduled), for a client that
// retries a commit whose answer it lost and reads its manifests again.
func (c *Catalog) scheduleClientManifests(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, m *Manifests, dir TableDir, s *iceberg.Snapshot) error {
	listLoc, err := dir.inside("manifest list", s.ManifestList)
	if err != nil {
		return err
	}
	list := m.lists[listLoc]
	if list == nil {
		return nil
	}
	locs := []objstore.Location{listLoc}
	for _, mf := range list.Files {
		if mf.AddedSnapshotID != s.SnapshotID {
			continue // carried over: an earlier snapshot's, served or not ours to judge
		}
		loc, err := dir.inside("manifest", mf.Path)
		if err != nil {
			return err
		}
		locs = append(locs, loc)
	}
	var dataPath string
	for _, loc := range locs {
		p := loc.String()
		if snap.replaced[p] || materialize.Generated(p) {
			continue
		}
		switch recorded, err := c.recordsFile(ctx, tx, t, p); {
		case err != nil:
			return err
		case recorded:
			continue
		}
		if dataPath == "" {
			md, err := c.reader(tx).Metadata(ctx)
			if err != nil {
				return err
			}
			dataPath = md.DataPath
		}
		if snap.replaced == nil {
			snap.replaced = map[string]bool{}
		}
		snap.replaced[p] = true
		if err := c.scheduleDeletion(ctx, tx, dataPath, snap.fileID(), p); err != nil {
			return err
		}
	}
	return nil
}

// recordsFile reports whether table t has (or had, in any snapshot) a data
// or delete file at location.
func (c *Catalog) recordsFile(ctx context.Context, tx ducklake.Querier, t ducklake.Table, location string) (bool, error) {
	rel, isRel := relTo(t.Path, location)
	var found bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t("ducklake_data_file")+`
			WHERE table_id = $1 AND (path = $3 AND NOT coalesce(path_is_relative, true) OR $4 AND path = $2 AND coalesce(path_is_relative, true)))
		OR EXISTS (SELECT 1 FROM `+c.t("ducklake_delete_file")+`
			WHERE table_id = $1 AND (path = $3 AND NOT coalesce(path_is_relative, true) OR $4 AND path = $2 AND coalesce(path_is_relative, true)))`,
		t.ID, rel, location, isRel).Scan(&found); err != nil {
		return false, fmt.Errorf("look up %s among the files of table %d: %w", location, t.ID, err)
	}
	return found, nil
}

// unscheduleRecorded takes the files the snapshot recorded for table t off
// ducklake_files_scheduled_for_deletion: a path scheduled earlier (a
// manifest's, or an expired data file within its grace) that a commit
// records again is the table's once more, and DuckDB's
// ducklake_cleanup_old_files, which checks nothing, must not delete it.
func (c *Catalog) unscheduleRecorded(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table) error {
	md, err := c.reader(tx).Metadata(ctx)
	if err != nil {
		return err
	}
	for _, tbl := range []string{"ducklake_data_file", "ducklake_delete_file"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t("ducklake_files_scheduled_for_deletion")+` s
			WHERE EXISTS (SELECT 1 FROM `+c.t(tbl)+` f WHERE f.table_id = $1 AND f.begin_snapshot = $2
				AND CASE WHEN coalesce(f.path_is_relative, true) THEN $3 || f.path ELSE f.path END
					= CASE WHEN coalesce(s.path_is_relative, true) THEN $4 || s.path ELSE s.path END)`,
			t.ID, snap.ID, t.Path, md.DataPath); err != nil {
			return fmt.Errorf("take the files table %d records off the deletion schedule (%s): %w", t.ID, tbl, err)
		}
	}
	return nil
}
