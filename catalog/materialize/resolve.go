package materialize

import (
	"context"
	"fmt"
	"strconv"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// A Resolver is a Source that can tell, without reading a table's history,
// what its metadata as of a snapshot is built from. [Materializer] keys its
// cache by the answer, so a commit to one table costs the others no build.
type Resolver interface {
	// Resolve fails with an error wrapping ducklake.ErrNotFound when
	// snapshot snapshotID does not exist or table tableID does not exist
	// at it.
	Resolve(ctx context.Context, tableID, snapshotID int64) (Resolved, error)
}

// Resolved is what a table's Iceberg metadata as of a snapshot depends on.
type Resolved struct {
	// Snapshot is the latest existing snapshot up to the one asked for at
	// which the table changed: the table's metadata is the same as of
	// either, so it is built (and cached) as of Snapshot.
	Snapshot int64
	// Snapshots counts the existing snapshots up to Snapshot but those
	// expired for the table alone. Expiring snapshots changes the history
	// without a new snapshot at or before Snapshot; a cached result built
	// with another count is stale.
	Snapshots int64
	// FormatVersion is the Iceberg format version the table is served in;
	// 0 means the Materializer's (Config.Options.FormatVersion).
	FormatVersion int
}

// FormatVersionProperty is the table property (in the catalog's sidecar
// table duckicelake_table_property) that chooses a table's Iceberg format
// version: "2" or "3". Iceberg's upgrade-format-version sets it; clients
// cannot set duckicelake.* properties themselves.
const FormatVersionProperty = "duckicelake.format-version"

// propertyTable is the sidecar table of table properties (sidecar
// migration 1).
const propertyTable = "duckicelake_table_property"

// Resolve implements Resolver with one query.
//
// DuckLake records every change to a table in ducklake_snapshot_changes
// under the table's id (inserted_into_table, deleted_from_table,
// altered_table, compacted_table, inlined_insert, inlined_delete,
// inline_flush, …: DuckDB's conflict detection depends on it), so the
// latest such snapshot is found by walking that table's primary key back
// from the snapshot asked for, stopping at the first match. Creating a
// table names it rather than its id, and a rename begins a new
// ducklake_table row: the begin of the table's row counts too. Changes
// DuckDB writes later with earlier begin snapshots (flushing inlined data,
// compaction) are logged under the snapshot that writes them.
//
// Expiring snapshots (DuckDB's ducklake_expire_snapshots, or an Iceberg
// remove-snapshots) deletes their change rows, so a change of the table
// may be gone from the log while its files, clamped onto the next existing
// snapshot, are not. Snapshot ids are handed out consecutively, so a
// missing id after the last logged change is such a possible change: the
// metadata is then built as of the first existing snapshot after the last
// such gap (the same metadata as at any later snapshot the table did not
// change at, so at worst one extra build per table and expiry).
func (s *PGSource) Resolve(ctx context.Context, tableID, snapshotID int64) (Resolved, error) {
	props, err := s.sidecarExists(ctx, propertyTable)
	if err != nil {
		return Resolved{}, err
	}
	property := `NULL::text`
	if props {
		property = `(SELECT value FROM ` + s.t(propertyTable) + ` WHERE table_id = $1 AND key = $4)`
	}
	// Snapshots expired for the table alone leave its history as a
	// catalog-wide expiry would: they count as gone.
	notExpired := ``
	switch ok, err := s.sidecarExists(ctx, expiredTable); {
	case err != nil:
		return Resolved{}, err
	case ok:
		notExpired = ` AND NOT EXISTS (SELECT 1 FROM ` + s.t(expiredTable) + ` x WHERE x.table_id = $1 AND x.snapshot_id = s.snapshot_id)`
	}
	// The latest matching change is an index scan backwards on the primary
	// key that stops at the first row that passes. MATERIALIZED keeps each
	// step from being inlined into, and run again by, the next.
	q := `WITH t AS MATERIALIZED (
			SELECT max(begin_snapshot) AS b FROM ` + s.t("ducklake_table") + `
			WHERE table_id = $1 AND begin_snapshot <= $2 AND (end_snapshot IS NULL OR end_snapshot > $2)
		), c AS MATERIALIZED (
			SELECT greatest(t.b, (SELECT snapshot_id FROM ` + s.t("ducklake_snapshot_changes") + `
				WHERE snapshot_id > t.b AND snapshot_id <= $2 AND changes_made ~ $3
				ORDER BY snapshot_id DESC LIMIT 1)) AS changed
			FROM t
		), g AS MATERIALIZED (
			SELECT greatest(c.changed, (SELECT s.snapshot_id FROM ` + s.t("ducklake_snapshot") + ` s
				WHERE s.snapshot_id > c.changed + 1 AND s.snapshot_id <= $2
				AND NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_snapshot") + ` p WHERE p.snapshot_id = s.snapshot_id - 1)
				ORDER BY s.snapshot_id DESC LIMIT 1)) AS changed
			FROM c
		), r AS MATERIALIZED (
			SELECT (SELECT snapshot_id FROM ` + s.t("ducklake_snapshot") + `
				WHERE snapshot_id >= g.changed AND snapshot_id <= $2 ORDER BY snapshot_id LIMIT 1) AS at
			FROM g
		)
		SELECT EXISTS (SELECT 1 FROM ` + s.t("ducklake_snapshot") + ` WHERE snapshot_id = $2), r.at,
			(SELECT count(*) FROM ` + s.t("ducklake_snapshot") + ` s WHERE s.snapshot_id <= r.at` + notExpired + `), ` + property + `
		FROM r`
	// Entries are kind:value joined by commas; names are quoted, so a bare
	// number is an id. A quoted name that looks like an entry only costs a
	// build.
	pattern := `(^|,)[a-z_]+:` + strconv.FormatInt(tableID, 10) + `(,|$)`
	var (
		exists    bool
		at        *int64
		snapshots int64
		version   *string
	)
	args := []any{tableID, snapshotID, pattern}
	if props {
		args = append(args, FormatVersionProperty)
	}
	if err := s.db.QueryRow(ctx, q, args...).Scan(&exists, &at, &snapshots, &version); err != nil {
		return Resolved{}, fmt.Errorf("resolve table %d at snapshot %d: %w", tableID, snapshotID, err)
	}
	switch {
	case !exists:
		return Resolved{}, fmt.Errorf("snapshot %d: %w", snapshotID, ducklake.ErrNotFound)
	case at == nil:
		return Resolved{}, fmt.Errorf("table %d at snapshot %d: %w", tableID, snapshotID, ducklake.ErrNotFound)
	}
	r := Resolved{Snapshot: *at, Snapshots: snapshots}
	if version != nil {
		v, err := strconv.Atoi(*version)
		if err != nil || (v != 2 && v != 3) {
			return Resolved{}, fmt.Errorf("%w: table %d has %s %q (2 and 3 are materialised)", ErrUnsupported, tableID, FormatVersionProperty, *version)
		}
		r.FormatVersion = v
	}
	return r, nil
}

// sidecarExists reports whether sidecar table name exists, asking Postgres
// only until it does (a catalog DuckDB created lacks them until a server
// migrates it).
func (s *PGSource) sidecarExists(ctx context.Context, name string) (bool, error) {
	if _, ok := s.sidecars.Load(name); ok {
		return true, nil
	}
	ok, err := s.exists(ctx, name)
	if ok {
		s.sidecars.Store(name, struct{}{})
	}
	return ok, err
}

var _ Resolver = (*PGSource)(nil)
