package rest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/valyala/fasthttp"
)

// snapshotRow is the newest ducklake_snapshot row, which a DDL builds on.
type snapshotRow struct {
	ID, SchemaVersion, NextCatalogID, NextFileID int64
}

// change is what one DDL did, for its new snapshot.
type change struct {
	// changes is the ducklake_snapshot_changes.changes_made entry, in
	// DuckDB's format (created_schema:"s", dropped_table:12, …).
	changes string
	// catalogIDs is how many catalog ids (schema/table/view ids) it used.
	catalogIDs int64
	// fileIDs is how many data and delete file ids it used.
	fileIDs int64
	// dataOnly keeps the schema version: the change touched no schema
	// (an insert or delete, a table property).
	dataOnly bool
}

// maxDDLAttempts bounds the retries of a DDL that lost the race for the
// next snapshot id to another writer (DuckDB or another catalog process).
const maxDDLAttempts = 8

// commitDDL runs do in a repeatable-read transaction that adds snapshot
// cur.ID+1, the way DuckDB's ducklake extension commits: the new
// ducklake_snapshot row first (its primary key is the commit lock: a
// concurrent writer of the same id makes one of the two fail), then do's
// changes, then the ducklake_snapshot_changes row. The schema version goes
// up by one unless the change says it is data only. A lost race is
// retried from a fresh snapshot; do sees the state it must check anew each
// time. It returns the new snapshot id.
func (s *Server) commitDDL(ctx context.Context, author string, do func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error)) (int64, error) {
	var lastErr error
	for attempt := 0; attempt < maxDDLAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
			}
		}
		id, err := s.tryDDL(ctx, author, do)
		if err == nil {
			s.snap.set(catalogState{id: id}, time.Now())
			return id, nil
		}
		if !retryable(err) {
			return 0, err
		}
		lastErr = err
	}
	return 0, &Error{Code: fasthttp.StatusConflict, Type: TypeCommitFailed,
		Message: fmt.Sprintf("the catalog kept changing under this request (%d attempts); retry: %v", maxDDLAttempts, lastErr)}
}

func (s *Server) tryDDL(ctx context.Context, author string, do func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error)) (int64, error) {
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var cur snapshotRow
	err = tx.QueryRow(ctx, `SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM `+s.t("ducklake_snapshot")+
		` ORDER BY snapshot_id DESC LIMIT 1`).Scan(&cur.ID, &cur.SchemaVersion, &cur.NextCatalogID, &cur.NextFileID)
	if err != nil {
		return 0, fmt.Errorf("read the current snapshot: %w", err)
	}
	next := cur.ID + 1
	// Claim the id first: a concurrent writer of the same id blocks here
	// until it commits (then we fail and retry) or aborts.
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_snapshot")+` (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id)
		VALUES ($1, now(), $2, $3, $4)`, next, cur.SchemaVersion+1, cur.NextCatalogID, cur.NextFileID); err != nil {
		return 0, fmt.Errorf("insert snapshot %d: %w", next, err)
	}
	ch, err := do(ctx, tx, cur, next)
	if err != nil {
		return 0, err
	}
	if ch.catalogIDs > 0 || ch.fileIDs > 0 || ch.dataOnly {
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_snapshot")+` SET next_catalog_id = next_catalog_id + $2,
			next_file_id = next_file_id + $3, schema_version = $4 WHERE snapshot_id = $1`,
			next, ch.catalogIDs, ch.fileIDs, cur.SchemaVersion+boolInt(!ch.dataOnly)); err != nil {
			return 0, fmt.Errorf("update snapshot %d: %w", next, err)
		}
	}
	var authorArg any
	if author != "" {
		authorArg = author
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_snapshot_changes")+` (snapshot_id, changes_made, author, commit_message, commit_extra_info)
		VALUES ($1, $2, $3, NULL, NULL)`, next, ch.changes, authorArg); err != nil {
		return 0, fmt.Errorf("insert snapshot changes %d: %w", next, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit snapshot %d: %w", next, err)
	}
	return next, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// retryable reports a lost race: another writer took the snapshot id
// (unique violation) or changed a row this transaction read (serialization
// failure, deadlock).
func retryable(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return false
	}
	switch pg.Code {
	case "23505", "40001", "40P01":
		return true
	}
	return false
}

// quoteName writes a name as DuckDB does in ducklake_snapshot_changes:
// double-quoted, inner quotes doubled.
func quoteName(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// liveSchema is a schema that exists now (end_snapshot IS NULL).
type liveSchema struct {
	ID           int64
	Path         string // as stored
	PathRelative bool
}

// lookupSchema finds live schema name within tx; found is false when it does
// not exist.
func (s *Server) lookupSchema(ctx context.Context, q pgx.Tx, name string) (sc liveSchema, found bool, err error) {
	err = q.QueryRow(ctx, `SELECT schema_id, coalesce(path, ''), coalesce(path_is_relative, true) FROM `+s.t("ducklake_schema")+`
		WHERE schema_name = $1 AND end_snapshot IS NULL`, name).Scan(&sc.ID, &sc.Path, &sc.PathRelative)
	if errors.Is(err, pgx.ErrNoRows) {
		return sc, false, nil
	}
	if err != nil {
		return sc, false, fmt.Errorf("look up schema %q: %w", name, err)
	}
	return sc, true, nil
}

// nameTaken reports whether a live table or view of schema schemaID is
// called name.
func (s *Server) nameTaken(ctx context.Context, q pgx.Tx, schemaID int64, name string) (bool, error) {
	var taken bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t("ducklake_table")+` WHERE schema_id = $1 AND table_name = $2 AND end_snapshot IS NULL)
		OR EXISTS (SELECT 1 FROM `+s.t("ducklake_view")+` WHERE schema_id = $1 AND view_name = $2 AND end_snapshot IS NULL)`,
		schemaID, name).Scan(&taken)
	if err != nil {
		return false, fmt.Errorf("look up %q: %w", name, err)
	}
	return taken, nil
}
