package commit

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// An Iceberg snapshot of a table is a DuckLake snapshot at which the
// table's files changed (catalog/materialize emits one per such snapshot,
// under the same id). The table keeps that state through every later
// DuckLake snapshot up to its next Iceberg snapshot: snapshots that changed
// other tables, or only this table's schema or properties. Removing the
// Iceberg snapshot therefore means expiring that whole stretch of DuckLake
// snapshots; expiring the first one alone would only move the table's state
// (and the files it holds) to the next snapshot of the stretch, which the
// materialiser would then show as a snapshot of its own.

// expiryRange is the stretch of DuckLake snapshots [from, to) in which a
// table shows Iceberg snapshot from.
type expiryRange struct{ from, to int64 }

// expiryRanges maps the Iceberg snapshots ids of base to the DuckLake
// snapshots to expire, merging adjacent stretches. ids must be snapshots of
// base other than the current one (removeSnapshotIDs checks that).
func expiryRanges(base *iceberg.TableMetadata, ids []int64) []expiryRange {
	all := make([]int64, 0, len(base.Snapshots))
	for _, s := range base.Snapshots {
		all = append(all, s.SnapshotID)
	}
	slices.Sort(all)
	var out []expiryRange
	for _, id := range ids {
		i, ok := slices.BinarySearch(all, id)
		if !ok || i+1 == len(all) {
			continue // unknown, or the current one: refused before
		}
		r := expiryRange{id, all[i+1]}
		if n := len(out); n > 0 && out[n-1].to == r.from {
			out[n-1].to = r.to
			continue
		}
		out = append(out, r)
	}
	return out
}

// removeSnapshots expires the DuckLake snapshots behind the Iceberg
// snapshots ids of table t. A stretch whose DuckLake snapshots changed
// only this table expires for the whole catalog, as DuckDB's
// ducklake_expire_snapshots would expire it; a stretch with a snapshot
// that also changed another table, schema or view expires for this table
// alone (see expireForTable): removing the snapshot from the catalog would
// rewrite their history too.
func (c *Catalog) removeSnapshots(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, base *iceberg.TableMetadata, ids []int64) error {
	ranges := expiryRanges(base, ids)
	if len(ranges) == 0 {
		return nil
	}
	own, err := c.tableNames(ctx, tx, t.ID)
	if err != nil {
		return err
	}
	var (
		whole  []int64 // DuckLake snapshots to expire for the catalog
		shared []expiryRange
		alone  []int64 // DuckLake snapshots to expire for t alone
	)
	for _, r := range ranges {
		rows, err := tx.Query(ctx, `SELECT s.snapshot_id, coalesce(c.changes_made, '') FROM `+c.t("ducklake_snapshot")+` s
			LEFT JOIN `+c.t("ducklake_snapshot_changes")+` c USING (snapshot_id)
			WHERE s.snapshot_id >= $1 AND s.snapshot_id < $2 ORDER BY s.snapshot_id`, r.from, r.to)
		if err != nil {
			return fmt.Errorf("read snapshots %d to %d: %w", r.from, r.to-1, err)
		}
		type snapChanges struct {
			ID      int64
			Changes string
		}
		snaps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[snapChanges])
		if err != nil {
			return fmt.Errorf("read snapshots %d to %d: %w", r.from, r.to-1, err)
		}
		ownOnly := true
		var stretch []int64
		for _, s := range snaps {
			for _, ch := range ducklake.ParseChanges(s.Changes) {
				ownOnly = ownOnly && ownChange(ch, t.ID, own)
			}
			stretch = append(stretch, s.ID)
		}
		if ownOnly {
			whole = append(whole, stretch...)
			continue
		}
		shared = append(shared, r)
		alone = append(alone, stretch...)
	}
	// The catalog's expiry first: what is left then that only snapshots
	// expired for t (now or before) saw is t's to reclaim.
	if err := c.expireSnapshots(ctx, tx, whole); err != nil {
		return err
	}
	return c.expireForTable(ctx, tx, snap, t, shared, alone)
}

// tableNames are the quoted "schema"."table" names table tableID ever had,
// as created_table entries name it.
func (c *Catalog) tableNames(ctx context.Context, tx pgx.Tx, tableID int64) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT s.schema_name, t.table_name FROM `+c.t("ducklake_table")+` t
		JOIN `+c.t("ducklake_schema")+` s USING (schema_id) WHERE t.table_id = $1`, tableID)
	if err != nil {
		return nil, fmt.Errorf("read the names of table %d: %w", tableID, err)
	}
	var names []string
	var schema, name string
	_, err = pgx.ForEachRow(rows, []any{&schema, &name}, func() error {
		names = append(names, ducklake.QuoteName(schema)+"."+ducklake.QuoteName(name))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the names of table %d: %w", tableID, err)
	}
	return names, nil
}

// ownChange reports whether a ducklake_snapshot_changes entry is about table
// tableID alone. Catalog ids are unique across schemas, tables and views, so
// an entry naming the id is the table's whatever its kind.
func ownChange(ch ducklake.Change, tableID int64, names []string) bool {
	switch {
	case ch.Target == strconv.FormatInt(tableID, 10):
		return true
	case ch.Kind == "created_table":
		return slices.Contains(names, ch.Target)
	}
	return false
}

// expireSnapshots deletes DuckLake snapshots ids and what only they could
// see, statement for statement as DuckDB's ducklake extension does in
// ducklake_expire_snapshots (DuckLakeMetadataManager::DeleteSnapshots,
// DuckLake 1.0 tables): the snapshot and change rows; tables no remaining
// snapshot sees, with all their rows and inlined tables; data and delete
// files no remaining snapshot sees, their rows removed and their paths
// moved to ducklake_files_scheduled_for_deletion (relative to the data
// path where they are under it), where DuckDB's ducklake_cleanup_old_files
// deletes them from storage; schemas, views, tags and macros no remaining
// snapshot sees; orphaned macro implementations and name mappings. Like
// DuckDB it sweeps the whole catalog, so rows an earlier expiry left
// behind go too.
func (c *Catalog) expireSnapshots(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	exec := func(what, sql string, args ...any) error {
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("expire snapshots: %s: %w", what, err)
		}
		return nil
	}
	for _, tbl := range []string{"ducklake_snapshot", "ducklake_snapshot_changes"} {
		if err := exec("delete from "+tbl, `DELETE FROM `+c.t(tbl)+` WHERE snapshot_id = ANY($1)`, ids); err != nil {
			return err
		}
	}
	unseen := func(a string) string {
		return `NOT EXISTS (SELECT 1 FROM ` + c.t("ducklake_snapshot") + ` sn WHERE sn.snapshot_id >= ` + a + `begin_snapshot AND sn.snapshot_id < ` + a + `end_snapshot)`
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT table_id FROM `+c.t("ducklake_table")+` t
		WHERE end_snapshot IS NOT NULL AND `+unseen("t.")+`
		AND NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_table")+` t2 WHERE t2.table_id = t.table_id
			AND (t2.end_snapshot IS NULL OR NOT `+unseen("t2.")+`))`)
	if err != nil {
		return fmt.Errorf("expire snapshots: find dropped tables: %w", err)
	}
	dropped, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("expire snapshots: find dropped tables: %w", err)
	}
	if dropped == nil {
		dropped = []int64{}
	}
	if err := c.reclaimFiles(ctx, tx, "expire snapshots", `table_id = ANY($1) OR (end_snapshot IS NOT NULL AND `+unseen("")+`)`,
		`table_id = ANY($1) OR data_file_id = ANY($2) OR (end_snapshot IS NOT NULL AND `+unseen("")+`)`, dropped); err != nil {
		return err
	}

	if len(dropped) > 0 {
		rows, err := tx.Query(ctx, `SELECT table_name FROM `+c.t("ducklake_inlined_data_tables")+` WHERE table_id = ANY($1)`, dropped)
		if err != nil {
			return fmt.Errorf("expire snapshots: read inlined tables: %w", err)
		}
		inlined, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("expire snapshots: read inlined tables: %w", err)
		}
		for _, id := range dropped {
			inlined = append(inlined, fmt.Sprintf("ducklake_inlined_delete_%d", id))
		}
		for _, tbl := range []string{"ducklake_table", "ducklake_table_stats", "ducklake_table_column_stats", "ducklake_partition_info",
			"ducklake_partition_column", "ducklake_column", "ducklake_column_tag", "ducklake_sort_info", "ducklake_sort_expression",
			"ducklake_schema_versions", "ducklake_inlined_data_tables", "ducklake_column_mapping"} {
			if err := exec("delete from "+tbl, `DELETE FROM `+c.t(tbl)+` WHERE table_id = ANY($1)`, dropped); err != nil {
				return err
			}
		}
		for _, name := range inlined {
			if err := exec("drop "+name, `DROP TABLE IF EXISTS `+c.t(pgx.Identifier{name}.Sanitize())); err != nil {
				return err
			}
		}
	}
	// Statistics files of expired snapshots and dropped tables go with
	// them; so do those of snapshots DuckDB's ducklake_expire_snapshots
	// expired (it knows nothing of sidecars). A catalog DuckDB made has no
	// sidecar tables until serve or init migrates it.
	switch ok, err := c.reader(tx).TableExists(ctx, statisticsTable); {
	case err != nil:
		return fmt.Errorf("expire snapshots: %w", err)
	case ok:
		if err := exec("delete from "+statisticsTable, `DELETE FROM `+c.t(statisticsTable)+` x WHERE x.snapshot_id = ANY($1) OR x.table_id = ANY($2)
			OR NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_snapshot")+` sn WHERE sn.snapshot_id = x.snapshot_id)`, ids, dropped); err != nil {
			return err
		}
	}
	// Table-level expiry records of snapshots now gone for every table,
	// and of dropped tables, have nothing left to say.
	switch ok, err := c.reader(tx).TableExists(ctx, expiredTable); {
	case err != nil:
		return fmt.Errorf("expire snapshots: %w", err)
	case ok:
		if err := exec("delete from "+expiredTable, `DELETE FROM `+c.t(expiredTable)+` x WHERE x.table_id = ANY($1)
			OR NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_snapshot")+` sn WHERE sn.snapshot_id = x.snapshot_id)`, dropped); err != nil {
			return err
		}
	}
	for _, tbl := range []string{"ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro"} {
		if err := exec("delete from "+tbl, `DELETE FROM `+c.t(tbl)+` WHERE end_snapshot IS NOT NULL AND `+unseen("")); err != nil {
			return err
		}
	}
	for _, tbl := range []string{"ducklake_macro_impl", "ducklake_macro_parameters"} {
		if err := exec("delete from "+tbl, `DELETE FROM `+c.t(tbl)+` x WHERE NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_macro")+` m WHERE m.macro_id = x.macro_id)`); err != nil {
			return err
		}
	}
	return exec("delete from ducklake_name_mapping", `DELETE FROM `+c.t("ducklake_name_mapping")+` x
		WHERE NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_column_mapping")+` m WHERE m.mapping_id = x.mapping_id)`)
}

// reclaimFiles schedules for deletion, and deletes the rows of, the data
// files that match dataWhere and the delete files that match deleteWhere:
// both with arg as $1, and deleteWhere with the ids of those data files as
// $2 (their delete files go with them). what begins the errors.
func (c *Catalog) reclaimFiles(ctx context.Context, tx pgx.Tx, what, dataWhere, deleteWhere string, arg any) error {
	md, err := c.reader(tx).Metadata(ctx)
	if err != nil {
		return err
	}
	paths, err := c.tablePaths(ctx, tx, md.DataPath)
	if err != nil {
		return err
	}
	dataIDs, err := c.scheduleUnseen(ctx, tx, "ducklake_data_file", "data_file_id", dataWhere, paths, md.DataPath, arg)
	if err != nil {
		return err
	}
	if err := c.deleteDataFileRows(ctx, tx, dataIDs); err != nil {
		return err
	}
	deleteIDs, err := c.scheduleUnseen(ctx, tx, "ducklake_delete_file", "delete_file_id", deleteWhere, paths, md.DataPath, arg, dataIDs)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t("ducklake_delete_file")+` WHERE delete_file_id = ANY($1)`, deleteIDs); err != nil {
		return fmt.Errorf("%s: delete from ducklake_delete_file: %w", what, err)
	}
	return nil
}

// deleteDataFileRows deletes the rows of data files ids and of their
// statistics and partition values, as DuckDB's expiry does for the files
// it schedules for deletion.
func (c *Catalog) deleteDataFileRows(ctx context.Context, tx pgx.Tx, ids []int64) error {
	for _, tbl := range []string{"ducklake_data_file", "ducklake_file_column_stats", "ducklake_file_variant_stats", "ducklake_file_partition_value"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(tbl)+` WHERE data_file_id = ANY($1)`, ids); err != nil {
			return fmt.Errorf("expire snapshots: delete from %s: %w", tbl, err)
		}
	}
	return nil
}

// tablePaths resolves every table's path (its latest row's, within its
// schema's latest row) as DuckDB does for files: data path, schema path,
// table path.
func (c *Catalog) tablePaths(ctx context.Context, tx ducklake.Querier, dataPath string) (map[int64]string, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (t.table_id) t.table_id, coalesce(t.path, ''), coalesce(t.path_is_relative, true),
			coalesce(s.path, ''), coalesce(s.path_is_relative, true)
		FROM `+c.t("ducklake_table")+` t LEFT JOIN `+c.t("ducklake_schema")+` s USING (schema_id)
		ORDER BY t.table_id, t.begin_snapshot DESC, s.begin_snapshot DESC`)
	if err != nil {
		return nil, fmt.Errorf("read table paths: %w", err)
	}
	out := map[int64]string{}
	var (
		id           int64
		tPath, sPath string
		tRel, sRel   bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &tPath, &tRel, &sPath, &sRel}, func() error {
		out[id] = resolveUnder(resolveUnder(dataPath, sPath, sRel), tPath, tRel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read table paths: %w", err)
	}
	return out, nil
}

func resolveUnder(base, path string, relative bool) string {
	if relative {
		return base + path
	}
	return path
}

// scheduleUnseen moves the rows of table tbl that match where (with args)
// into ducklake_files_scheduled_for_deletion and returns their ids; the
// caller deletes the rows.
func (c *Catalog) scheduleUnseen(ctx context.Context, tx pgx.Tx, tbl, idColumn, where string, tablePaths map[int64]string, dataPath string, args ...any) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT `+idColumn+`, table_id, coalesce(path, ''), coalesce(path_is_relative, true) FROM `+c.t(tbl)+`
		WHERE `+where+` ORDER BY `+idColumn, args...)
	if err != nil {
		return nil, fmt.Errorf("expire snapshots: read %s: %w", tbl, err)
	}
	var (
		ids       = []int64{}
		locations []string
		id, table int64
		path      string
		rel       bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &table, &path, &rel}, func() error {
		ids = append(ids, id)
		locations = append(locations, resolveUnder(tablePaths[table], path, rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire snapshots: read %s: %w", tbl, err)
	}
	for i := range ids {
		if err := c.scheduleDeletion(ctx, tx, dataPath, ids[i], locations[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// scheduleDeletion adds a file to ducklake_files_scheduled_for_deletion
// under id (a data or delete file id: DuckDB's cleanup removes the row by
// it), with its path relative to the data path when it is under it.
func (c *Catalog) scheduleDeletion(ctx context.Context, tx pgx.Tx, dataPath string, id int64, location string) error {
	path, rel := relTo(dataPath, location)
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_files_scheduled_for_deletion")+` (data_file_id, path, path_is_relative, schedule_start)
		VALUES ($1, $2, $3, now())`, id, path, rel); err != nil {
		return fmt.Errorf("schedule %s for deletion: %w", location, err)
	}
	return nil
}
