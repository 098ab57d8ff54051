package service

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// CommitError is a change catalog/commit refused (a *commit.Error) as
// this package's refusal of the same kind; other errors pass through.
func CommitError(err error) error {
	var ce *commit.Error
	if !errors.As(err, &ce) {
		return err
	}
	kind := ErrInvalid
	switch {
	case errors.Is(err, commit.ErrConflict):
		kind = ErrConflict
	case errors.Is(err, commit.ErrExists):
		kind = ErrAlreadyExists
	case errors.Is(err, commit.ErrNotFound):
		kind = ErrNoSuchTable
	case errors.Is(err, commit.ErrForbidden):
		kind = ErrForbidden
	case errors.Is(err, commit.ErrUnsupported):
		kind = ErrUnsupported
	}
	return &Error{Kind: kind, Message: ce.Message}
}

// TableAt is table ns.name as of snapshot snap (ErrNoSuchTable when it
// does not exist then).
func (c *Catalog) TableAt(ctx context.Context, snap int64, ns, name string) (ducklake.Table, error) {
	t, err := c.reader.TableByName(ctx, snap, ns, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		return t, NoSuchTable(ns, name)
	}
	return t, err
}

// checkCreate is what a create asks of its request before anything is
// read: a valid name and a schema.
func checkCreate(req *commit.CreateTableRequest) error {
	if err := CheckName("table", req.Name); err != nil {
		return err
	}
	if req.Schema == nil {
		return refuse(ErrInvalid, "a table needs a schema")
	}
	return nil
}

// CreateTable creates table ns.(req.Name) by author as an Iceberg create
// does (catalog/commit.CreateTable), in one snapshot.
func (c *Catalog) CreateTable(ctx context.Context, author, ns string, req *commit.CreateTableRequest) error {
	if err := checkCreate(req); err != nil {
		return err
	}
	_, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		sc, err := c.LiveSchema(ctx, tx, ns, NoSuchNamespace(ns))
		if err != nil {
			return ducklake.Edit{}, err
		}
		snap := commitSnapshot(head, next)
		if _, err := c.commits.CreateTable(ctx, tx, snap, commit.Namespace{ID: sc.ID, Name: ns, Path: sc.Path}, req); err != nil {
			return ducklake.Edit{}, CommitError(err)
		}
		return snapEdit(snap, head), nil
	})
	return err
}

// StageTable is the metadata table ns.(req.Name) would have if a create
// transaction committed it as of snapshot snap, without creating it
// (ErrAlreadyExists when the name is a table then).
func (c *Catalog) StageTable(ctx context.Context, snap int64, ns string, req *commit.CreateTableRequest, now time.Time) (*iceberg.TableMetadata, error) {
	if err := checkCreate(req); err != nil {
		return nil, err
	}
	sc, err := c.NamespaceAt(ctx, snap, ns)
	if err != nil {
		return nil, err
	}
	if _, err := c.TableAt(ctx, snap, ns, req.Name); err == nil {
		return nil, refuse(ErrAlreadyExists, "Table already exists: %s.%s", ns, req.Name)
	} else if !errors.Is(err, ErrNoSuchTable) {
		return nil, err
	}
	md, err := c.commits.StageTable(ctx, c.db, snap, commit.Namespace{ID: sc.ID, Name: ns, Path: sc.Path}, req, now)
	return md, CommitError(err)
}

// RegisterTable makes table sc.(name) by author from the Iceberg metadata
// file at metadataLocation (catalog/commit.Register), sc being the
// namespace as of snapshot snap. overwrite=true is refused over a table
// (ErrUnsupported): registering over it would mean dropping the DuckLake
// table and creating another from the file, which knows nothing of what
// DuckDB wrote that no Iceberg metadata records (rows and deletions it
// keeps inlined in Postgres, its own snapshots); they would be lost
// without anyone asking. Dropping the table first makes that an explicit
// choice. When the table does not exist, overwrite changes nothing.
func (c *Catalog) RegisterTable(ctx context.Context, author string, snap int64, sc ducklake.Schema, name, metadataLocation string, overwrite bool) error {
	// Name clashes first: they need no object storage round trip, and an
	// existing name is the answer whatever the metadata file holds.
	if err := c.registerClash(ctx, c.db, sc.ID, sc.Name, name, overwrite); err != nil {
		return err
	}
	ns := commit.Namespace{ID: sc.ID, Name: sc.Name, Path: sc.Path}
	reg, err := c.commits.ReadRegistration(ctx, c.db, snap, ns, name, metadataLocation)
	if err != nil {
		return CommitError(err)
	}
	_, err = c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		live, err := c.LiveSchema(ctx, tx, sc.Name, NoSuchNamespace(sc.Name))
		if err != nil {
			return ducklake.Edit{}, err
		}
		if live.ID != sc.ID {
			// Dropped and created again since the files were checked
			// against its location.
			return ducklake.Edit{}, refuse(ErrConflict, "namespace %s changed during the registration; retry", sc.Name)
		}
		if err := c.registerClash(ctx, tx, sc.ID, sc.Name, name, overwrite); err != nil {
			return ducklake.Edit{}, err
		}
		snap := commitSnapshot(head, next)
		if _, err := c.commits.Register(ctx, tx, snap, ns, name, reg); err != nil {
			return ducklake.Edit{}, CommitError(err)
		}
		ed := snapEdit(snap, head)
		ed.FileIDs = snap.NextFileID - head.NextFileID
		return ed, nil
	})
	return err
}

// registerClash refuses a table registration whose name is taken
// (ErrAlreadyExists), or overwrite=true over a table (ErrUnsupported; see
// RegisterTable).
func (c *Catalog) registerClash(ctx context.Context, q ducklake.Querier, schemaID int64, ns, name string, overwrite bool) error {
	if overwrite {
		switch kind, err := c.cat.NameKind(ctx, q, schemaID, name); {
		case err != nil:
			return err
		case kind == ducklake.ObjectTable:
			return refuse(ErrUnsupported, "overwrite: registering over table %s.%s would replace a DuckLake table whose rows and history DuckDB may have written outside any Iceberg metadata file; drop the table first, then register", ns, name)
		}
	}
	return c.NameClash(ctx, q, schemaID, ns, name, ducklake.ObjectTable)
}

// commitSnapshot is the catalog/commit view of snapshot next over head.
func commitSnapshot(head ducklake.Head, next int64) *commit.Snapshot {
	return &commit.Snapshot{ID: next, Head: head.ID, SchemaVersion: head.SchemaVersion,
		NextCatalogID: head.NextCatalogID, NextFileID: head.NextFileID}
}

// snapEdit is the edit a catalog/commit change made to snapshot snap
// over head: its changes and the catalog ids it took.
func snapEdit(snap *commit.Snapshot, head ducklake.Head) ducklake.Edit {
	return ducklake.Edit{Changes: snap.Changes(), CatalogIDs: snap.NextCatalogID - head.NextCatalogID}
}
