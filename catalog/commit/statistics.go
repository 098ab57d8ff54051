package commit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// statisticsTable holds the statistics files engines register, per table,
// snapshot and kind (sidecar migration 8); catalog/materialize serves them.
const statisticsTable = "duckicelake_table_statistics"

// Kinds of statistics file (statisticsTable.kind).
const (
	statsTable     = "table"     // set-statistics: a Puffin file
	statsPartition = "partition" // set-partition-statistics
)

// statsKey names one statistics file of a table: its kind and the
// snapshot it is about, as the client names it.
type statsKey struct {
	kind     string
	snapshot int64
}

// statsUpdate is what a commit leaves of a statistics file: the file to
// register (path and entry), or nothing (entry nil) to remove it.
type statsUpdate struct {
	path  string
	entry any // *iceberg.StatisticsFile or *iceberg.PartitionStatisticsFile
}

// foldStatistics folds one set-/remove-(partition-)statistics update into
// p. A statistics file must be about a snapshot of this table — one it has
// or one this commit adds — else it is refused: a snapshot of another table
// is no snapshot of this one, and its NDV sketches would describe other
// data. Removing one the table does not have is a no-op, as in Iceberg.
func (p *plan) foldStatistics(u *Update, base *iceberg.TableMetadata, added, removed map[int64]bool) error {
	var (
		key   statsKey
		up    statsUpdate
		entry any
	)
	switch {
	case (u.Action == ActionSetStatistics && u.Statistics == nil) || (u.Action == ActionSetPartitionStatistics && u.PartitionStatistics == nil):
		return invalid("%s needs the file to set", u.Action)
	case (u.Action == ActionRemoveStatistics || u.Action == ActionRemovePartitionStatistics) && u.SnapshotID == nil:
		return invalid("%s needs snapshot-id", u.Action)
	}
	switch u.Action {
	case ActionSetStatistics:
		f := *u.Statistics
		if f.BlobMetadata == nil {
			f.BlobMetadata = []iceberg.BlobMetadata{}
		}
		key, up.path, entry = statsKey{statsTable, f.SnapshotID}, f.StatisticsPath, &f
	case ActionSetPartitionStatistics:
		f := *u.PartitionStatistics
		key, up.path, entry = statsKey{statsPartition, f.SnapshotID}, f.StatisticsPath, &f
	case ActionRemoveStatistics:
		key = statsKey{statsTable, *u.SnapshotID}
	case ActionRemovePartitionStatistics:
		key = statsKey{statsPartition, *u.SnapshotID}
	}
	if entry != nil {
		id := key.snapshot
		switch {
		case removed[id]:
			return invalid("%s: snapshot %d was removed by this commit", u.Action, id)
		case !added[id] && (base == nil || base.SnapshotByID(id) == nil):
			return invalid("%s: snapshot %d is not a snapshot of this table", u.Action, id)
		}
		up.entry = entry
	}
	if p.statistics == nil {
		p.statistics = map[statsKey]statsUpdate{}
	}
	p.statistics[key] = up
	return nil
}

// applyStatistics registers and removes the statistics files of the plan
// in the table's sidecar rows, as of snapshot snap. A file must be inside
// the table's location (the rule every file a client names follows): a
// statistics file is served to every reader of the table, and one naming
// another table's files would point them there.
func (c *Catalog) applyStatistics(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, base *iceberg.TableMetadata, p *plan) error {
	if len(p.statistics) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(p.statistics), func(a, b statsKey) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.snapshot, b.snapshot))
	})
	var dir TableDir
	for _, k := range keys {
		u := p.statistics[k]
		id := k.snapshot
		if base == nil || base.SnapshotByID(id) == nil {
			id = snap.ID // a snapshot this commit added: it becomes ours
		}
		if u.entry == nil {
			if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(statisticsTable)+` WHERE table_id = $1 AND snapshot_id = $2 AND kind = $3`,
				t.ID, id, k.kind); err != nil {
				return fmt.Errorf("remove the %s statistics of snapshot %d: %w", k.kind, id, err)
			}
			continue
		}
		if dir == (TableDir{}) {
			var err error
			if dir, err = tableDirOf(t.Path); err != nil {
				return err
			}
		}
		what := "statistics file"
		switch f := u.entry.(type) {
		case *iceberg.StatisticsFile:
			f.SnapshotID = id
		case *iceberg.PartitionStatisticsFile:
			f.SnapshotID = id
			what = "partition statistics file"
		}
		if _, err := dir.inside(what, u.path); err != nil {
			return err
		}
		body, err := json.Marshal(u.entry)
		if err != nil {
			return fmt.Errorf("encode the %s of snapshot %d: %w", what, id, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(statisticsTable)+` (table_id, snapshot_id, kind, file, set_snapshot)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (table_id, snapshot_id, kind) DO UPDATE SET file = excluded.file, set_snapshot = excluded.set_snapshot`,
			t.ID, id, k.kind, body, snap.ID); err != nil {
			return fmt.Errorf("set the %s of snapshot %d: %w", what, id, err)
		}
	}
	// The metadata changes though DuckLake's rows do not (see applyMetadata).
	snap.change(fmt.Sprintf("altered_table:%d", t.ID))
	return nil
}

// DropStatistics removes the statistics files registered for table
// tableID, in tx: a dropped table's go with it (they are Iceberg state the
// catalog keeps beside DuckLake's rows, which a drop only ends).
func (c *Catalog) DropStatistics(ctx context.Context, tx pgx.Tx, tableID int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(statisticsTable)+` WHERE table_id = $1`, tableID); err != nil {
		return fmt.Errorf("remove the statistics files of table %d: %w", tableID, err)
	}
	return nil
}
