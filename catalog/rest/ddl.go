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

// liveSchema is live schema name within tx, or missing when it does not
// exist (no such namespace, or no such table in it).
func (s *Server) liveSchema(ctx context.Context, tx pgx.Tx, name string, missing error) (schemaAt, error) {
	sc, err := s.cat.LiveSchema(ctx, tx, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		err = missing
	}
	return sc, err
}
