package ducklake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Head is the newest ducklake_snapshot row, which a change builds on.
type Head struct {
	ID, SchemaVersion, NextCatalogID, NextFileID int64
}

// Edit is what one catalog change did, for its new snapshot.
type Edit struct {
	// Changes is the ducklake_snapshot_changes.changes_made entry, in
	// DuckDB's format (created_schema:"s", dropped_table:12, …; QuoteName).
	Changes string
	// CatalogIDs is how many catalog ids (schema/table/view ids) it used.
	CatalogIDs int64
	// FileIDs is how many data and delete file ids it used.
	FileIDs int64
	// DataOnly keeps the schema version: the change touched no schema
	// (an insert or delete, a table property).
	DataOnly bool
}

// ConflictError reports a change that lost the race for the next snapshot
// id every time it was tried: the catalog kept changing under it.
type ConflictError struct {
	Attempts int
	Last     error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the catalog kept changing under this change (%d attempts): %v", e.Attempts, e.Last)
}

func (e *ConflictError) Unwrap() error { return e.Last }

// DefaultAttempts bounds the retries of a change that lost the race for the
// next snapshot id to another writer (DuckDB or another catalog process).
const DefaultAttempts = 8

// Writer commits catalog changes the way DuckDB's ducklake extension does:
// one Postgres transaction per DuckLake snapshot. It is the one place the
// snapshot transaction protocol lives; it holds no state besides its
// connection, so one Writer serves any number of goroutines.
type Writer struct {
	db       TxBeginner
	schema   string
	attempts int
}

// NewWriter writes the catalog in Postgres schema schema ("" =
// DefaultSchema).
func NewWriter(db TxBeginner, schema string) *Writer {
	if schema == "" {
		schema = DefaultSchema
	}
	return &Writer{db: db, schema: pgx.Identifier{schema}.Sanitize(), attempts: DefaultAttempts}
}

func (w *Writer) t(name string) string { return w.schema + "." + name }

// Commit runs do in a repeatable-read transaction that adds snapshot
// head.ID+1: the new ducklake_snapshot row first (its primary key is the
// commit lock: a concurrent writer of the same id makes one of the two
// fail), then do's changes, then the ducklake_snapshot_changes row. The
// schema version goes up by one unless the edit says it is data only. A
// lost race is retried from a fresh head, so do must check the state it
// relies on anew each time; after the last attempt Commit fails with a
// *ConflictError. It returns the new snapshot id.
func (w *Writer) Commit(ctx context.Context, author string, do func(ctx context.Context, tx pgx.Tx, head Head, next int64) (Edit, error)) (int64, error) {
	var lastErr error
	for attempt := 0; attempt < w.attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt*attempt) * 5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
		}
		id, err := w.try(ctx, author, do)
		if err == nil {
			return id, nil
		}
		if !Retryable(err) {
			return 0, err
		}
		lastErr = err
	}
	return 0, &ConflictError{Attempts: w.attempts, Last: lastErr}
}

func (w *Writer) try(ctx context.Context, author string, do func(ctx context.Context, tx pgx.Tx, head Head, next int64) (Edit, error)) (int64, error) {
	tx, err := w.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var cur Head
	err = tx.QueryRow(ctx, `SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM `+w.t("ducklake_snapshot")+
		` ORDER BY snapshot_id DESC LIMIT 1`).Scan(&cur.ID, &cur.SchemaVersion, &cur.NextCatalogID, &cur.NextFileID)
	if err != nil {
		return 0, fmt.Errorf("read the current snapshot: %w", err)
	}
	next := cur.ID + 1
	// Claim the id first: a concurrent writer of the same id blocks here
	// until it commits (then we fail and retry) or aborts.
	if _, err := tx.Exec(ctx, `INSERT INTO `+w.t("ducklake_snapshot")+` (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id)
		VALUES ($1, now(), $2, $3, $4)`, next, cur.SchemaVersion+1, cur.NextCatalogID, cur.NextFileID); err != nil {
		return 0, fmt.Errorf("insert snapshot %d: %w", next, err)
	}
	ed, err := do(ctx, tx, cur, next)
	if err != nil {
		return 0, err
	}
	if ed.CatalogIDs > 0 || ed.FileIDs > 0 || ed.DataOnly {
		bump := int64(1)
		if ed.DataOnly {
			bump = 0
		}
		if _, err := tx.Exec(ctx, `UPDATE `+w.t("ducklake_snapshot")+` SET next_catalog_id = next_catalog_id + $2,
			next_file_id = next_file_id + $3, schema_version = $4 WHERE snapshot_id = $1`,
			next, ed.CatalogIDs, ed.FileIDs, cur.SchemaVersion+bump); err != nil {
			return 0, fmt.Errorf("update snapshot %d: %w", next, err)
		}
	}
	var authorArg any
	if author != "" {
		authorArg = author
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+w.t("ducklake_snapshot_changes")+` (snapshot_id, changes_made, author, commit_message, commit_extra_info)
		VALUES ($1, $2, $3, NULL, NULL)`, next, ed.Changes, authorArg); err != nil {
		return 0, fmt.Errorf("insert snapshot changes %d: %w", next, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit snapshot %d: %w", next, err)
	}
	return next, nil
}

// Retryable reports a lost race: another writer took the snapshot id
// (unique violation) or changed a row this transaction read (serialization
// failure, deadlock).
func Retryable(err error) bool {
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

// QuoteName writes a name as DuckDB does in ducklake_snapshot_changes:
// double-quoted, inner quotes doubled.
func QuoteName(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
