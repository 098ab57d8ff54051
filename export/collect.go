package export

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Deleter deletes objects: objstore.Store satisfies it.
type Deleter interface {
	Delete(ctx context.Context, loc objstore.Location) error
	DeletePrefix(ctx context.Context, dir objstore.Location) error
}

// Collected is what one Collect did.
type Collected struct {
	// Dropped is the number of exports of tables the catalog no longer
	// has that were retired.
	Dropped int
	// Deleted is the number of retired copies (files or whole export
	// directories) deleted from storage.
	Deleted int
}

// maxCollect bounds the retired entries one Collect deletes, so a sweep
// after a mass drop makes progress in bounded steps.
const maxCollect = 1000

// Collect deletes what no export needs any more. Exports of a table the
// catalog no longer has — dropped through the catalog or by DuckDB — are
// retired whole (their directory) with the grace period, as replaced
// copies are at every build; retired entries whose time has come are
// deleted from storage and forgotten. Every process may collect: each step
// is idempotent, and an entry is forgotten only after its deletion
// succeeded.
func (x *Exporter) Collect(ctx context.Context, store Deleter) (Collected, error) {
	var c Collected
	rows, err := x.cfg.PG.Query(ctx, `SELECT DISTINCT e.table_id FROM `+x.t("duckicelake_export")+` e
		WHERE NOT EXISTS (SELECT 1 FROM `+x.t("ducklake_table")+` t WHERE t.table_id = e.table_id AND t.end_snapshot IS NULL)`)
	if err != nil {
		return c, fmt.Errorf("export: collect: find exports of dropped tables: %w", err)
	}
	dropped, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return c, fmt.Errorf("export: collect: find exports of dropped tables: %w", err)
	}
	for _, id := range dropped {
		n, err := x.retireTable(ctx, id, x.cfg.Now().Add(x.cfg.Grace))
		if err != nil {
			return c, err
		}
		c.Dropped += n
	}
	n, err := x.deleteDue(ctx, store)
	c.Deleted = n
	return c, err
}

// DropTable retires every export of table tableID: at once with purge (the
// table's owner asked for its data to be gone, and the masked copies are
// its data), else after the grace period like any replaced copy. Call it
// when the catalog drops the table; Collect finds the tables dropped
// elsewhere.
func (x *Exporter) DropTable(ctx context.Context, store Deleter, tableID int64, purge bool) error {
	at := x.cfg.Now().Add(x.cfg.Grace)
	if purge {
		at = x.cfg.Now()
	}
	if _, err := x.retireTable(ctx, tableID, at); err != nil {
		return err
	}
	if purge {
		// Copies retired earlier (replaced ones, or a drop without purge
		// before) go now too.
		dir, err := x.root.Join("t" + strconv.FormatInt(tableID, 10) + "/")
		if err != nil {
			return err
		}
		if _, err := x.cfg.PG.Exec(ctx, `UPDATE `+x.t("duckicelake_export_retired")+` SET delete_at = $2
			WHERE starts_with(location, $1) AND delete_at > $2`, dir.String(), at); err != nil {
			return fmt.Errorf("export: purge the exports of table %d: %w", tableID, err)
		}
		_, err = x.deleteDue(ctx, store)
		return err
	}
	return nil
}

// retireTable moves every export of tableID to the retired list (each
// export's directory, deleted at deleteAt) and forgets it, in one
// transaction; n is how many exports it retired.
func (x *Exporter) retireTable(ctx context.Context, tableID int64, deleteAt time.Time) (n int, err error) {
	tx, err := x.cfg.PG.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	rows, err := tx.Query(ctx, `DELETE FROM `+x.t("duckicelake_export")+` WHERE table_id = $1 RETURNING root`, tableID)
	if err != nil {
		return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
	}
	roots, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+x.t("duckicelake_export_file")+` WHERE table_id = $1`, tableID); err != nil {
		return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
	}
	for _, root := range roots {
		dir, err := objstore.ParseDir(root)
		if err != nil || !dir.Within(x.root) || dir == x.root {
			// A root outside the export prefix was never written by us;
			// deleting under it could reach base data.
			return 0, fmt.Errorf("export: table %d's export root %q is not a directory under %s", tableID, root, x.root)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+x.t("duckicelake_export_retired")+` (location, delete_at) VALUES ($1, $2)
			ON CONFLICT (location) DO UPDATE SET delete_at = least(`+x.t("duckicelake_export_retired")+`.delete_at, EXCLUDED.delete_at)`,
			dir.String(), deleteAt); err != nil {
			return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
		}
		// The shadow files of the current build (on the list as due
		// 'infinity' while it was current) go with the directory.
		if _, err := tx.Exec(ctx, `DELETE FROM `+x.t("duckicelake_export_retired")+`
			WHERE starts_with(location, $1) AND delete_at = 'infinity'`, dir.String()); err != nil {
			return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("export: retire the exports of table %d: %w", tableID, err)
	}
	if len(roots) > 0 {
		x.cfg.Logger.Info("export: retired the masked copies of a dropped table", zap.Int64("table_id", tableID), zap.Int("exports", len(roots)))
	}
	return len(roots), nil
}

// deleteDue deletes the retired entries whose time has come: a file, or a
// directory (a dropped table's whole export).
func (x *Exporter) deleteDue(ctx context.Context, store Deleter) (int, error) {
	rows, err := x.cfg.PG.Query(ctx, `SELECT location FROM `+x.t("duckicelake_export_retired")+`
		WHERE delete_at <= $1 ORDER BY delete_at LIMIT `+fmt.Sprint(maxCollect), x.cfg.Now())
	if err != nil {
		return 0, fmt.Errorf("export: collect: %w", err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("export: collect: %w", err)
	}
	var errs []error
	n := 0
	for _, s := range due {
		loc, err := objstore.Parse(s)
		if err == nil && !loc.Within(x.root) {
			err = fmt.Errorf("not under the export prefix %s", x.root)
		}
		if err != nil {
			// Never ours to delete: forget it loudly rather than retry forever.
			x.cfg.Logger.Error("export: a retired location is not a masked copy; not deleted", zap.String("location", s), zap.Error(err))
		} else {
			if loc.IsDir() {
				err = store.DeletePrefix(ctx, loc)
			} else {
				err = store.Delete(ctx, loc)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("export: delete %s: %w", s, err))
				continue
			}
			n++
		}
		if _, err := x.cfg.PG.Exec(ctx, `DELETE FROM `+x.t("duckicelake_export_retired")+` WHERE location = $1`, s); err != nil {
			errs = append(errs, fmt.Errorf("export: collect: %w", err))
		}
	}
	return n, errors.Join(errs...)
}
