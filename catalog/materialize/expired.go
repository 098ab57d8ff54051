package materialize

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// expiredTable is the sidecar of table-level expiry (sidecar migration 9):
// DuckLake snapshots that no longer exist for one table, though the rest
// of the catalog keeps them (catalog/commit's remove-snapshots of a
// snapshot that also changed another table).
const expiredTable = "duckicelake_table_expired_snapshot"

// withoutExpired leaves out of snaps the snapshots expired for table
// tableID alone. To the table's history they are gone as if expired for the
// whole catalog: its rows' begin and end snapshots are clamped onto the
// next snapshot it has, so a retained snapshot shows exactly the state it
// showed before.
func (s *PGSource) withoutExpired(ctx context.Context, tableID int64, snaps []ducklake.Snapshot) ([]ducklake.Snapshot, error) {
	ok, err := s.sidecarExists(ctx, expiredTable)
	if err != nil || !ok {
		return snaps, err
	}
	rows, err := s.db.Query(ctx, `SELECT snapshot_id FROM `+s.t(expiredTable)+` WHERE table_id = $1 ORDER BY snapshot_id`, tableID)
	if err != nil {
		return nil, fmt.Errorf("read the snapshots expired for table %d: %w", tableID, err)
	}
	expired, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read the snapshots expired for table %d: %w", tableID, err)
	}
	if len(expired) == 0 {
		return snaps, nil
	}
	return slices.DeleteFunc(snaps, func(sn ducklake.Snapshot) bool {
		_, found := slices.BinarySearch(expired, sn.ID)
		return found
	}), nil
}
