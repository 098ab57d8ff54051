package rest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// snapshotRow and change are the snapshot protocol's head and edit
// (catalog/ducklake.Writer owns the protocol).
type (
	snapshotRow = ducklake.Head
	change      = ducklake.Edit
)

// commitDDL commits do as one DuckLake snapshot (ducklake.Writer.Commit)
// and notes the new snapshot as the catalog's current one; a change that
// kept losing the race is answered 409 CommitFailed.
func (s *Server) commitDDL(ctx context.Context, author string, do func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error)) (int64, error) {
	id, err := s.writer.Commit(ctx, author, do)
	var ce *ducklake.ConflictError
	switch {
	case errors.As(err, &ce):
		return 0, &Error{Code: fasthttp.StatusConflict, Type: TypeCommitFailed,
			Message: fmt.Sprintf("the catalog kept changing under this request (%d attempts); retry: %v", ce.Attempts, ce.Last)}
	case err != nil:
		return 0, err
	}
	s.snap.set(catalogState{id: id}, time.Now())
	return id, nil
}

// quoteName writes a name as DuckDB does in ducklake_snapshot_changes.
func quoteName(name string) string { return ducklake.QuoteName(name) }

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
