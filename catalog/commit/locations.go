package commit

import (
	"context"
	"fmt"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Every location a client names — a table's, a metadata file, a manifest
// list, a manifest, a data or delete file — is parsed with objstore.Parse
// and checked with Location.Within against the directory it must be in
// before anything is read with the catalog's root credentials, and neither
// answer depends on what exists in object storage. A table location Parse
// refuses is a bad request (400). A file is inside its table's (or
// namespace's) location or it is refused as outside it (403), whether it
// is elsewhere, in another namespace's or another table's files, or
// spelled so that only a backend could say where ("a/../b"): the answers
// are the same.

// TableDir is the directory a table's files must be in: its location,
// checked. Manifest lists, manifests and data files are read and accepted
// only within it.
type TableDir struct {
	loc objstore.Location // a directory
}

// String is the table location as messages give it, without the trailing
// "/".
func (d TableDir) String() string { return strings.TrimSuffix(d.loc.String(), "/") }

// tableDirOf is the directory of a live table from its resolved path, a
// location the catalog made (or DuckDB did).
func tableDirOf(path string) (TableDir, error) {
	loc, err := objstore.ParseDir(path)
	if err != nil {
		return TableDir{}, unsupported("the table's location cannot be checked (%v), so files cannot be added to it through Iceberg", err)
	}
	return TableDir{loc: loc}, nil
}

// badLocation answers a table location Parse refuses (files are refused
// as outside their table instead: see inside).
func badLocation(what string, err error) error { return invalid("%s: %v", what, err) }

// inside parses location, a file the client named (what it is, for the
// message), and checks that it is within the table's directory.
func (d TableDir) inside(what, location string) (objstore.Location, error) {
	l, err := objstore.Parse(location)
	if err != nil || !l.Within(d.loc) {
		return l, newError(ErrForbidden, "%s %s is not inside the table location %s", what, location, d)
	}
	return l, nil
}

// spell is location as the catalog spells it (s3:// for s3a:// and s3n://),
// or as given when Parse refuses it: for comparing client paths with the
// table's, never for deciding containment.
func spell(location string) string {
	if l, err := objstore.Parse(location); err == nil {
		return l.String()
	}
	return location
}

// relTo is location relative to directory dir when it is within it, as
// DuckLake stores paths under their parent's; else location itself.
func relTo(dir, location string) (string, bool) {
	d, err := objstore.ParseDir(dir)
	if err != nil {
		return location, false
	}
	l, err := objstore.Parse(location)
	if err != nil {
		return location, false
	}
	if rel, ok := l.Rel(d); ok {
		return rel, true
	}
	return location, false
}

// placement is where a new table's files go.
type placement struct {
	path     string // relative to the namespace's path, ending in "/"
	location string // resolved, without the trailing "/" (Iceberg's table location)
	chosen   bool   // the client chose the location (else it is the name's default)
}

// place works out where a new table of namespace ns goes: the namespace's
// path and the name, or the location the client requested, which must be
// within the namespace's location (and not be it).
func place(ns Namespace, name, requested string) (placement, error) {
	p := placement{path: name + "/", location: ns.Path + name}
	if requested == "" {
		return p, nil
	}
	loc, err := objstore.ParseDir(requested)
	if err != nil {
		return p, badLocation("table location", err)
	}
	var rel string
	nsDir, err := objstore.ParseDir(ns.Path)
	if err == nil {
		rel, _ = loc.Rel(nsDir)
	}
	if rel == "" {
		return p, newError(ErrForbidden, "table location %s is not inside its namespace's location %s", requested, ns.Path)
	}
	return placement{path: rel, location: strings.TrimSuffix(loc.String(), "/"), chosen: true}, nil
}

// dir is the placement's directory.
func (p placement) dir() (TableDir, error) {
	loc, err := objstore.ParseDir(p.location)
	if err != nil {
		return TableDir{}, badLocation("table location", err)
	}
	return TableDir{loc: loc}, nil
}

// overlaps reports whether a table live at snapshot snap has a location
// that overlaps p's directory (one within the other, or the same), and
// returns that directory: no two live tables share files, since vended
// credentials, the gateway's grants and purge all work by a table's
// location. The tables of every namespace count, with their paths resolved
// (DuckLake allows absolute ones). A table whose path Parse refuses is
// vended, signed for and purged by nothing, and is passed over.
func (c *Catalog) overlaps(ctx context.Context, q ducklake.Querier, snap int64, p placement) (TableDir, bool, error) {
	dir, err := p.dir()
	if err != nil {
		return TableDir{}, false, err
	}
	tables, err := c.reader(q).Tables(ctx, snap)
	if err != nil {
		return TableDir{}, false, fmt.Errorf("check the table location %s: %w", dir, err)
	}
	for _, t := range tables {
		if other, err := objstore.ParseDir(t.Path); err == nil && objstore.Overlaps(other, dir.loc) {
			return dir, true, nil
		}
	}
	return dir, false, nil
}

// claim is p's directory, refused (naming location) when it overlaps a
// table live at snapshot snap: for a table whose files or metadata are
// written already, so its location cannot move.
func (c *Catalog) claim(ctx context.Context, q ducklake.Querier, snap int64, p placement, location string) (TableDir, error) {
	switch dir, taken, err := c.overlaps(ctx, q, snap, p); {
	case err != nil:
		return TableDir{}, err
	case taken:
		return TableDir{}, overlapError(location)
	default:
		return dir, nil
	}
}

// settle moves a new table's default location that overlaps a table live
// at snapshot snap to a path of its own (a table renamed away keeps its
// files under the old name's default path); a location the client chose
// is refused instead.
func (c *Catalog) settle(ctx context.Context, q ducklake.Querier, snap int64, ns Namespace, p *tablePlan) error {
	switch _, taken, err := c.overlaps(ctx, q, snap, p.placement); {
	case err != nil:
		return err
	case taken && p.chosen:
		return overlapError(p.location)
	case taken:
		p.path = p.name + "-" + p.uuid[:8] + "/"
		p.location = ns.Path + strings.TrimSuffix(p.path, "/")
	}
	return nil
}

// overlapError refuses a location a client chose that overlaps another
// live table's. The other table is not named: it may be one of a namespace
// the client cannot see.
func overlapError(location string) error {
	return newError(ErrForbidden, "table location %s overlaps the location of another table; tables cannot share files", location)
}
