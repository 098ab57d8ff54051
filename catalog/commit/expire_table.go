package commit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// expiredTable records table-level expiry (sidecar migration 9): per
// table, the DuckLake snapshots that no longer exist for it though the
// rest of the catalog keeps them; catalog/materialize leaves them out of
// the table's history.
const expiredTable = "duckicelake_table_expired_snapshot"

// Table-level expiry. In a shared lake most DuckLake snapshots inside a
// table's Iceberg snapshot stretch also changed other tables, so deleting
// them (DuckDB's ducklake_expire_snapshots) would rewrite those tables'
// history too. Instead the stretch expires for the table alone, for every
// reader:
//
//   - Iceberg readers: the snapshots are recorded in expiredTable and
//     left out of the table's served history (snapshots, snapshot-log,
//     parents), exactly as after a catalog-wide expiry; tags on them are
//     removed by the commit (Iceberg's semantics).
//   - Storage: the table's data and delete files no retained snapshot of
//     it sees are scheduled in ducklake_files_scheduled_for_deletion and
//     their rows deleted, as DuckDB's expiry does for the files of the
//     snapshots it expires; files a retained snapshot sees are kept.
//   - DuckDB: the begin and end snapshots of the table's remaining file
//     rows, inlined rows and inlined deletions that fall in the stretch
//     move to its end (the next retained Iceberg snapshot), as the
//     materialiser clamps them after a catalog-wide expiry. Every retained
//     snapshot sees what it saw; time travel to a snapshot of the stretch
//     sees the table's rows of its last retained snapshot before it (the
//     snapshot Iceberg's time travel by timestamp picks), not a state that
//     never was (the files only those snapshots saw are gone). The table's
//     columns are left as they are: DuckDB caches a catalog per schema
//     version, so a table must look the same at every snapshot of one.
//     Other tables read as before at every snapshot.

// expireForTable expires for table t alone the DuckLake snapshots expire
// (the stretches ranges) and reclaims the files of t that no snapshot it
// still has sees, in the commit's snapshot snap. With no snapshots to
// expire it only reclaims, which a catalog-wide expiry after a table-level
// one may leave to do; that is nothing for a table never expired alone.
func (c *Catalog) expireForTable(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, ranges []expiryRange, expire []int64) error {
	ok, err := c.reader(tx).TableExists(ctx, expiredTable)
	switch {
	case err != nil:
		return fmt.Errorf("expire snapshots for table %s: %w", t.Name, err)
	case !ok && len(expire) > 0:
		return fmt.Errorf("expire snapshots for table %s: sidecar table %s is missing (run duckicelake init to migrate the catalog)", t.Name, expiredTable)
	case !ok:
		return nil
	}
	if len(expire) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(expiredTable)+` (table_id, snapshot_id, expired_at)
			SELECT $1, unnest($2::bigint[]), $3 ON CONFLICT DO NOTHING`, t.ID, expire, snap.ID); err != nil {
			return fmt.Errorf("expire snapshots for table %s: record them: %w", t.Name, err)
		}
		switch ok, err := c.reader(tx).TableExists(ctx, statisticsTable); {
		case err != nil:
			return fmt.Errorf("expire snapshots for table %s: %w", t.Name, err)
		case ok:
			if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(statisticsTable)+` WHERE table_id = $1 AND snapshot_id = ANY($2)`, t.ID, expire); err != nil {
				return fmt.Errorf("expire snapshots for table %s: statistics files: %w", t.Name, err)
			}
		}
		// The entry tells the materialiser (and DuckDB's conflict check)
		// that the table's history changed.
		snap.change(fmt.Sprintf("altered_table:%d", t.ID))
	}
	if err := c.reclaimForTable(ctx, tx, t); err != nil {
		return err
	}
	for _, r := range ranges {
		if err := c.clampForTable(ctx, tx, t, r); err != nil {
			return err
		}
	}
	return nil
}

// clampForTable moves the begin and end snapshots of table t's rows that
// fall in stretch r onto r.to, its next retained Iceberg snapshot: data
// and delete files (reclaimForTable has deleted those that began and ended
// in it), inlined rows of every schema version (a row that began and ended
// in it is deleted: no snapshot sees it) and inlined deletions.
func (c *Catalog) clampForTable(ctx context.Context, tx pgx.Tx, t ducklake.Table, r expiryRange) error {
	in := func(col string) string { return col + ` >= $1 AND ` + col + ` < $2` }
	exec := func(what, sql string, args ...any) error {
		if _, err := tx.Exec(ctx, sql, append([]any{r.from, r.to}, args...)...); err != nil {
			return fmt.Errorf("expire snapshots %d to %d for table %s: %s: %w", r.from, r.to-1, t.Name, what, err)
		}
		return nil
	}
	// clamp moves begin_snapshot (and end_snapshot, with ends) of the rows
	// of tbl that match where.
	clamp := func(tbl, where string, ends bool, args ...any) error {
		set := `begin_snapshot = CASE WHEN ` + in("begin_snapshot") + ` THEN $2 ELSE begin_snapshot END`
		cond := in("begin_snapshot")
		if ends {
			set += `, end_snapshot = CASE WHEN ` + in("end_snapshot") + ` THEN $2 ELSE end_snapshot END`
			cond += ` OR ` + in("end_snapshot")
		}
		return exec("clamp "+tbl, `UPDATE `+c.t(pgx.Identifier{tbl}.Sanitize())+` SET `+set+` WHERE (`+where+`) AND (`+cond+`)`, args...)
	}
	for _, tbl := range []string{"ducklake_data_file", "ducklake_delete_file"} {
		if err := clamp(tbl, `table_id = $3`, true, t.ID); err != nil {
			return err
		}
	}
	inlined, err := c.reader(tx).InlinedTables(ctx, t.ID)
	if err != nil {
		return err
	}
	for _, it := range inlined {
		switch ok, err := c.reader(tx).TableExists(ctx, it.Name); {
		case err != nil:
			return err
		case !ok:
			continue // flushed and dropped
		}
		if err := exec("delete from "+it.Name, `DELETE FROM `+c.t(pgx.Identifier{it.Name}.Sanitize())+`
			WHERE `+in("begin_snapshot")+` AND end_snapshot <= $2`); err != nil {
			return err
		}
		if err := clamp(it.Name, `true`, true); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("ducklake_inlined_delete_%d", t.ID)
	switch ok, err := c.reader(tx).TableExists(ctx, name); {
	case err != nil:
		return err
	case ok:
		return clamp(name, `true`, false)
	}
	return nil
}

// reclaimForTable schedules for deletion, and deletes the rows of, the data
// and delete files of table t that ended without a snapshot the table
// still has seeing them, with the delete files of those data files: the
// statements of expireSnapshots, for one table, with the snapshots expired
// for it taken as gone.
func (c *Catalog) reclaimForTable(ctx context.Context, tx pgx.Tx, t ducklake.Table) error {
	var expired bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t(expiredTable)+` WHERE table_id = $1)`, t.ID).Scan(&expired); err != nil {
		return fmt.Errorf("expire snapshots for table %s: %w", t.Name, err)
	}
	if !expired {
		return nil // a catalog-wide expiry has reclaimed all there is
	}
	unseen := `end_snapshot IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ` + c.t("ducklake_snapshot") + ` sn
		WHERE sn.snapshot_id >= begin_snapshot AND sn.snapshot_id < end_snapshot
		AND NOT EXISTS (SELECT 1 FROM ` + c.t(expiredTable) + ` x WHERE x.table_id = $1 AND x.snapshot_id = sn.snapshot_id))`
	return c.reclaimFiles(ctx, tx, "expire snapshots for table "+t.Name, `table_id = $1 AND `+unseen,
		`table_id = $1 AND (data_file_id = ANY($2) OR (`+unseen+`))`, t.ID)
}
