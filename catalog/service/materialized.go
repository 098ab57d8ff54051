package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
)

// Materialized serves tables' metadata from m: the metadata of a table as
// of a catalog snapshot is m's result for (table id, snapshot). Snapshots
// that Iceberg metadata cannot express, column types Iceberg lacks and
// DuckLake content the materialiser does not handle are refused
// (ErrUnsupported) with its reason, not failed.
func Materialized(m *materialize.Materializer) Materializer { return materialized{m} }

type materialized struct{ m *materialize.Materializer }

func (a materialized) Materialize(ctx context.Context, t ducklake.Table, snap int64) (Metadata, error) {
	r, err := a.m.Materialize(ctx, t.ID, snap)
	switch {
	case errors.Is(err, materialize.ErrUnrepresentable), errors.Is(err, materialize.ErrUnsupported),
		errors.Is(err, materialize.ErrUnsupportedType):
		return Metadata{}, refuse(ErrUnsupported, "table %s at snapshot %d: %v", t.Name, snap, err)
	case errors.Is(err, ducklake.ErrNotFound):
		// Dropped or expired between our lookup and the materialiser's.
		return Metadata{}, refuse(ErrNoSuchTable, "table %s at snapshot %d: %v", t.Name, snap, err)
	case err != nil:
		return Metadata{}, err
	}
	return Metadata{Location: r.MetadataLocation, JSON: r.MetadataJSON}, nil
}

// LoadTable is table ns.name as of snapshot snap with its Iceberg metadata
// then. asOf, when not 0, is the snapshot the caller asked for, which must
// exist (ErrNoSuchTable otherwise, as Iceberg clients expect of a missing
// snapshot).
func (c *Catalog) LoadTable(ctx context.Context, asOf, snap int64, ns, name string) (ducklake.Table, Metadata, error) {
	if c.mat == nil {
		return ducklake.Table{}, Metadata{}, refuse(ErrUnsupported, "%s", NoMaterializer)
	}
	if asOf > 0 {
		if _, err := c.reader.Snapshot(ctx, asOf); errors.Is(err, ducklake.ErrNotFound) {
			return ducklake.Table{}, Metadata{}, refuse(ErrNoSuchTable, "snapshot %d does not exist", asOf)
		} else if err != nil {
			return ducklake.Table{}, Metadata{}, err
		}
	}
	t, err := c.TableAt(ctx, snap, ns, name)
	if err != nil {
		return t, Metadata{}, err
	}
	md, err := c.mat.Materialize(ctx, t, snap)
	if err != nil {
		return t, Metadata{}, fmt.Errorf("materialise %s.%s at snapshot %d: %w", ns, name, snap, err)
	}
	return t, md, nil
}
