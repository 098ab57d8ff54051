package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// NoSuchTable is the refusal of a request naming a table that does not
// exist (or whose namespace does not).
func NoSuchTable(ns, name string) *Error {
	return refuse(ErrNoSuchTable, "Table does not exist: %s.%s", ns, name)
}

// TableNames lists the tables of namespace sc visible at snapshot snap,
// sorted.
func (c *Catalog) TableNames(ctx context.Context, snap int64, sc ducklake.Schema) ([]string, error) {
	names, err := c.cat.TableNames(ctx, c.db, snap, sc.ID)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// LookupTable finds live table ns.name within tx, and its schema;
// ErrNoSuchTable when either does not exist.
func (c *Catalog) LookupTable(ctx context.Context, tx pgx.Tx, ns, name string) (ducklake.Schema, ducklake.Table, error) {
	sc, err := c.LiveSchema(ctx, tx, ns, NoSuchTable(ns, name))
	if err != nil {
		return sc, ducklake.Table{}, err
	}
	t, err := c.cat.LiveTable(ctx, tx, sc.ID, sc.Path, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		err = NoSuchTable(ns, name)
	}
	return sc, t, err
}

// NameClash refuses (ErrAlreadyExists) creating a table or view (kind)
// called ns.name that would clash with a live table or view of schema
// schemaID, in the words Iceberg's catalog tests expect; nil when the name
// is free. Tables and views share one namespace of names, as in DuckDB.
func (c *Catalog) NameClash(ctx context.Context, q ducklake.Querier, schemaID int64, ns, name string, kind ducklake.Object) error {
	have, err := c.cat.NameKind(ctx, q, schemaID, name)
	if err != nil || have == 0 {
		return err
	}
	var msg string
	switch {
	case have == ducklake.ObjectView && kind == ducklake.ObjectView:
		msg = "View already exists"
	case have == ducklake.ObjectView:
		msg = "View with same name already exists"
	case kind == ducklake.ObjectTable:
		msg = "Table already exists"
	default:
		msg = "Table with same name already exists"
	}
	return refuse(ErrAlreadyExists, "%s: %s.%s", msg, ns, name)
}

// RenameClash refuses (ErrAlreadyExists) renaming from ("ns.name") to
// toNS.to when that name is a live table or view of schema toSchemaID.
func (c *Catalog) RenameClash(ctx context.Context, q ducklake.Querier, toSchemaID int64, from, toNS, to string) error {
	have, err := c.cat.NameKind(ctx, q, toSchemaID, to)
	if err != nil || have == 0 {
		return err
	}
	what := "Table"
	if have == ducklake.ObjectView {
		what = "View"
	}
	return refuse(ErrAlreadyExists, "Cannot rename %s to %s.%s. %s already exists", from, toNS, to, what)
}

// Dropped is what DropTable did.
type Dropped struct {
	Snapshot int64 // the drop's snapshot
	TableID  int64 // the dropped table's id
	// Purge is the table's directory, to delete once the drop is answered
	// for (DropTable with purge); zero otherwise.
	Purge objstore.Location
}

// DropTable ends table ns.name's rows as DuckDB's DROP TABLE does (table,
// partition info, columns, column tags, data and delete files, tags: the
// DuckLake specification's list) and its Iceberg statistics with them.
// With purge, the table's files are to be deleted afterwards, and the drop
// is refused up front (ErrUnsupported, ErrConflict) when that could touch
// another live table's files or the table has no directory of its own.
func (c *Catalog) DropTable(ctx context.Context, author, ns, name string, purge bool) (Dropped, error) {
	if purge && !c.canPurge {
		return Dropped{}, refuse(ErrUnsupported, "purgeRequested: this catalog has no storage client to delete files with; drop without purge")
	}
	var out Dropped
	snap, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		_, t, err := c.LookupTable(ctx, tx, ns, name)
		if err != nil {
			return ducklake.Edit{}, err
		}
		out.TableID = t.ID
		if purge {
			if out.Purge, err = c.purgeTarget(ctx, tx, t); err != nil {
				return ducklake.Edit{}, err
			}
		}
		ed, err := c.cat.DropTable(ctx, tx, next, t)
		if err != nil {
			return ducklake.Edit{}, err
		}
		if err := c.commits.DropStatistics(ctx, tx, t.ID); err != nil {
			return ducklake.Edit{}, fmt.Errorf("drop table %q: %w", name, err)
		}
		return ed, nil
	})
	if err != nil {
		return Dropped{}, err
	}
	out.Snapshot = snap
	return out, nil
}

// purgeTarget resolves where table t's files live and checks that deleting
// that directory touches no other live table: none has a location that
// overlaps it, and none has one that cannot be compared with it (a path
// objstore.Parse refuses, "x/../t/", could name these very files).
func (c *Catalog) purgeTarget(ctx context.Context, tx pgx.Tx, t ducklake.Table) (objstore.Location, error) {
	if !t.PathIsRelative || t.RawPath == "" || !strings.HasSuffix(t.RawPath, "/") {
		return objstore.Location{}, refuse(ErrUnsupported, "purgeRequested: the table's path %q is not a directory of its own; drop without purge", t.RawPath)
	}
	path := t.Path
	dir, err := objstore.ParseDir(path)
	switch {
	case err != nil:
		return objstore.Location{}, refuse(ErrUnsupported, "purgeRequested: %v; drop without purge", err)
	case dir.Scheme() != objstore.SchemeS3 || dir.Key() == "":
		return objstore.Location{}, refuse(ErrUnsupported, "purgeRequested: the table's files are not under an s3:// prefix (%s); drop without purge", path)
	}
	others, err := c.cat.LiveTablePaths(ctx, tx, t.ID)
	if err != nil {
		return objstore.Location{}, err
	}
	var clash, unknown string
	for _, o := range others {
		other, err := objstore.ParseDir(o.Path)
		switch {
		case err != nil && unknown == "":
			unknown = o.Schema + "." + o.Name
		case err == nil && clash == "" && objstore.Overlaps(other, dir):
			clash = o.Schema + "." + o.Name
		}
	}
	switch {
	case clash != "":
		return objstore.Location{}, refuse(ErrConflict, "purgeRequested: table %s keeps files under the same prefix %s; drop without purge", clash, path)
	case unknown != "":
		return objstore.Location{}, refuse(ErrConflict, "purgeRequested: table %s has a location that cannot be compared with %s, so its files may be there; drop without purge", unknown, path)
	}
	return dir, nil
}

// RenameTable renames table srcNS.src to dstNS.dst as DuckDB's ALTER TABLE
// … RENAME TO does: the table row ends and a new row with the same id,
// UUID and path begins, the schema version goes up (with a
// ducklake_schema_versions row for the table), and the change is logged as
// created_table:"ns"."new", DuckDB's own notation for a rename. A missing
// source table (ErrNoSuchTable) or destination namespace
// (ErrNoSuchNamespace) is reported before the refusal of a move to another
// namespace (ErrUnsupported), as Iceberg's catalogs order them. It returns
// the rename's snapshot.
func (c *Catalog) RenameTable(ctx context.Context, author, srcNS, src, dstNS, dst string) (int64, error) {
	if err := CheckName("table", dst); err != nil {
		return 0, err
	}
	return c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		sc, t, err := c.LookupTable(ctx, tx, srcNS, src)
		if err != nil {
			return ducklake.Edit{}, err
		}
		if srcNS != dstNS {
			if _, err := c.LiveSchema(ctx, tx, dstNS, NoSuchNamespace(dstNS)); err != nil {
				return ducklake.Edit{}, err
			}
			return ducklake.Edit{}, refuse(ErrUnsupported, "moving a table to another namespace is not supported: a DuckLake table's files live under its schema's path")
		}
		if err := c.RenameClash(ctx, tx, sc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return ducklake.Edit{}, err
		}
		return c.cat.RenameTable(ctx, tx, head, next, srcNS, t, dst)
	})
}
