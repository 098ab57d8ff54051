package commit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DB is what CleanupScheduled runs on (a *pgxpool.Pool).
type DB interface {
	ducklake.Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Cleaned is what one CleanupScheduled did.
type Cleaned struct {
	// Deleted is the number of scheduled files deleted from storage (or
	// found gone) and forgotten.
	Deleted int
	// Refused is the number of scheduled rows left alone, each logged
	// with its reason.
	Refused int
}

// maxCleanup bounds the rows one CleanupScheduled handles, so a sweep
// after a mass expiry makes progress in bounded steps.
const maxCleanup = 1000

// CleanupScheduled deletes the files ducklake_files_scheduled_for_deletion
// holds since before olderThan from storage and forgets their rows, as
// DuckDB's ducklake_cleanup_old_files(older_than => …) does: the files
// expired snapshots no longer see, client delete files a commit replaced
// and the manifest lists and manifests of engine commits
// (scheduleClientManifests). The storage client holds root credentials
// for the whole bucket, and anyone who can write the catalog's Postgres
// can add a row, so a file is deleted only when its location is within
// the catalog's data path or a table's path (objstore.Location.Within),
// and not while its table records a data or delete file there; other rows
// are refused, logged with the reason and kept for an operator. Every
// process may clean up: deleting a missing object is no error, and a row
// is forgotten only after its deletion succeeded.
func (c *Catalog) CleanupScheduled(ctx context.Context, db DB, olderThan time.Time, log *zap.Logger) (Cleaned, error) {
	var done Cleaned
	if log == nil {
		log = zap.NewNop()
	}
	if c.objects == nil {
		return done, errors.New("cleanup of scheduled files: this catalog has no storage client")
	}
	md, err := c.reader(db).Metadata(ctx)
	if err != nil {
		return done, fmt.Errorf("cleanup of scheduled files: %w", err)
	}
	paths, err := c.tablePaths(ctx, db, md.DataPath)
	if err != nil {
		return done, fmt.Errorf("cleanup of scheduled files: %w", err)
	}
	roots := map[objstore.Location]int64{} // directory → table id (0: the data path)
	if d, err := objstore.ParseDir(md.DataPath); err == nil {
		roots[d] = 0
	}
	for id, p := range paths {
		if d, err := objstore.ParseDir(p); err == nil {
			roots[d] = id
		}
	}
	// Pages in schedule order, after the last row seen: rows refused (and
	// kept for an operator) never stand in the way of the ones behind them.
	var after *scheduledRow
	for done.Deleted < maxCleanup {
		q := `SELECT data_file_id, path, path_is_relative, schedule_start FROM ` + c.t("ducklake_files_scheduled_for_deletion") +
			` WHERE schedule_start < $1`
		args := []any{olderThan}
		if after != nil {
			q += ` AND (schedule_start, data_file_id) > ($2, $3)`
			args = append(args, after.start, after.id)
		}
		rows, err := db.Query(ctx, q+` ORDER BY schedule_start, data_file_id LIMIT `+fmt.Sprint(maxCleanup), args...)
		if err != nil {
			return done, fmt.Errorf("cleanup of scheduled files: read the schedule: %w", err)
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (scheduledRow, error) {
			var d scheduledRow
			err := r.Scan(&d.id, &d.path, &d.rel, &d.start)
			return d, err
		})
		if err != nil {
			return done, fmt.Errorf("cleanup of scheduled files: read the schedule: %w", err)
		}
		if len(list) == 0 {
			break
		}
		after = &list[len(list)-1]
		if err := c.cleanupPage(ctx, db, md.DataPath, roots, paths, list, &done, log); err != nil {
			return done, err
		}
	}
	return done, nil
}

// cleanupPage deletes (or refuses) one page of scheduled rows.
func (c *Catalog) cleanupPage(ctx context.Context, db DB, dataPath string, roots map[objstore.Location]int64, paths map[int64]string,
	list []scheduledRow, done *Cleaned, log *zap.Logger) error {
	for _, d := range list {
		location := d.path
		if d.rel == nil || *d.rel {
			location = dataPath + d.path
		}
		loc, err := objstore.Parse(location)
		if err != nil {
			done.Refused++
			log.Warn("cleanup of scheduled files: refused: not an object location", zap.Int64("data_file_id", d.id), zap.String("path", location), zap.Error(err))
			continue
		}
		var tables []int64
		within := false
		for dir, id := range roots {
			if loc.Within(dir) {
				within = true
				if id != 0 {
					tables = append(tables, id)
				}
			}
		}
		if !within {
			done.Refused++
			log.Warn("cleanup of scheduled files: refused: outside the data path and every table's location", zap.Int64("data_file_id", d.id), zap.String("path", location))
			continue
		}
		recorded := false
		for _, id := range tables {
			if recorded, err = c.recordsFile(ctx, db, ducklake.Table{ID: id, Path: paths[id]}, loc.String()); err != nil {
				return fmt.Errorf("cleanup of scheduled files: %w", err)
			}
			if recorded {
				break
			}
		}
		if recorded {
			done.Refused++
			log.Warn("cleanup of scheduled files: refused: a table still records a file there", zap.Int64("data_file_id", d.id), zap.String("path", location))
			continue
		}
		if err := c.objects.Delete(ctx, loc); err != nil {
			return fmt.Errorf("cleanup of scheduled files: delete %s: %w", location, err)
		}
		if _, err := db.Exec(ctx, `DELETE FROM `+c.t("ducklake_files_scheduled_for_deletion")+`
			WHERE data_file_id = $1 AND path = $2 AND path_is_relative IS NOT DISTINCT FROM $3`, d.id, d.path, d.rel); err != nil {
			return fmt.Errorf("cleanup of scheduled files: forget %s: %w", location, err)
		}
		done.Deleted++
		log.Debug("cleanup of scheduled files: deleted", zap.Int64("data_file_id", d.id), zap.String("path", location))
	}
	return nil
}

// scheduledRow is a ducklake_files_scheduled_for_deletion row.
type scheduledRow struct {
	id    int64
	path  string
	rel   *bool
	start time.Time
}
