package rest

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
)

// Materialized serves LoadTable from m: the metadata of a table as of a
// catalog snapshot is m's result for (table id, snapshot). Snapshots that
// Iceberg metadata cannot express, column types Iceberg lacks and DuckLake
// content the materialiser does not handle are answered as unsupported (406)
// with its reason, not as server errors.
func Materialized(m *materialize.Materializer) Materializer { return materialized{m} }

type materialized struct{ m *materialize.Materializer }

func (a materialized) Materialize(ctx context.Context, t ducklake.Table, snap int64) (Metadata, error) {
	r, err := a.m.Materialize(ctx, t.ID, snap)
	switch {
	case errors.Is(err, materialize.ErrUnrepresentable), errors.Is(err, materialize.ErrUnsupported),
		errors.Is(err, materialize.ErrUnsupportedType):
		return Metadata{}, errorf(fasthttp.StatusNotAcceptable, TypeUnsupported, "table %s at snapshot %d: %v", t.Name, snap, err)
	case errors.Is(err, ducklake.ErrNotFound):
		// Dropped or expired between our lookup and the materialiser's.
		return Metadata{}, errorf(fasthttp.StatusNotFound, TypeNoSuchTable, "table %s at snapshot %d: %v", t.Name, snap, err)
	case err != nil:
		return Metadata{}, err
	}
	return Metadata{Location: r.MetadataLocation, JSON: r.MetadataJSON}, nil
}
