package rest

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
)

// snapshotRow and change are the snapshot protocol's head and edit
// (catalog/ducklake.Writer owns the protocol).
type (
	snapshotRow = ducklake.Head
	change      = ducklake.Edit
)

// commitDDL commits do as one DuckLake snapshot (service.Catalog.Commit,
// which notes it as the catalog's current one).
func (s *Server) commitDDL(ctx context.Context, author string, do service.Change) (int64, error) {
	return s.svc.Commit(ctx, author, do)
}

// quoteName writes a name as DuckDB does in ducklake_snapshot_changes.
func quoteName(name string) string { return ducklake.QuoteName(name) }

// liveSchema is live schema name within tx, or missing when it does not
// exist (no such namespace, or no such table in it).
func (s *Server) liveSchema(ctx context.Context, tx pgx.Tx, name string, missing error) (schemaAt, error) {
	return s.svc.LiveSchema(ctx, tx, name, missing)
}
