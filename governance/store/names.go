package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/model"
)

// ObjectName names a DuckLake object as authors write it.
type ObjectName struct {
	Kind                  model.ObjectKind
	Schema, Table, Column string
}

// String is schema[.table[.column]].
func (n ObjectName) String() string {
	s := n.Schema
	if n.Kind >= model.ObjectTable {
		s += "." + n.Table
	}
	if n.Kind == model.ObjectColumn {
		s += "." + n.Column
	}
	return s
}

// NoObjectError reports a name that names no live object.
type NoObjectError struct {
	Name ObjectName
}

func (e *NoObjectError) Error() string {
	return fmt.Sprintf("%s %s does not exist", e.Name.Kind, e.Name)
}

// Resolved is a resolved object: its ids, and for a column its DuckLake
// type and nullability; for a table its top-level columns.
type Resolved struct {
	Ref      model.ObjectRef
	Column   ducklake.Field
	Columns  []ducklake.Field
	Snapshot int64
}

// Resolve finds the live object n names at the catalog's current
// snapshot. Names match as DuckDB matches identifiers: exactly, else
// case-insensitively when that is unambiguous.
func (s *Store) Resolve(ctx context.Context, n ObjectName) (Resolved, error) {
	snap, err := s.reader.CurrentSnapshot(ctx)
	if err != nil {
		return Resolved{}, fmt.Errorf("governance: resolve %s: %w", n, err)
	}
	var r Resolved
	r.Snapshot = snap.ID
	schemas, err := s.reader.Schemas(ctx, snap.ID)
	if err != nil {
		return Resolved{}, fmt.Errorf("governance: resolve %s: %w", n, err)
	}
	sc, ok := pick(schemas, n.Schema, func(x ducklake.Schema) string { return x.Name })
	if !ok {
		return Resolved{}, &NoObjectError{Name: ObjectName{Kind: model.ObjectSchema, Schema: n.Schema}}
	}
	r.Ref = model.ObjectRef{Kind: model.ObjectSchema, SchemaID: sc.ID}
	if n.Kind == model.ObjectSchema {
		return r, nil
	}
	tables, err := s.reader.Tables(ctx, snap.ID)
	if err != nil {
		return Resolved{}, fmt.Errorf("governance: resolve %s: %w", n, err)
	}
	var inSchema []ducklake.Table
	for _, t := range tables {
		if t.SchemaID == sc.ID {
			inSchema = append(inSchema, t)
		}
	}
	t, ok := pick(inSchema, n.Table, func(x ducklake.Table) string { return x.Name })
	if !ok {
		return Resolved{}, &NoObjectError{Name: ObjectName{Kind: model.ObjectTable, Schema: n.Schema, Table: n.Table}}
	}
	r.Ref.Kind, r.Ref.TableID = model.ObjectTable, t.ID
	if r.Columns, err = s.reader.Columns(ctx, snap.ID, t.ID); err != nil {
		return Resolved{}, fmt.Errorf("governance: resolve %s: %w", n, err)
	}
	if n.Kind == model.ObjectTable {
		return r, nil
	}
	c, ok := pick(r.Columns, n.Column, func(x ducklake.Field) string { return x.Name })
	if !ok {
		return Resolved{}, &NoObjectError{Name: n}
	}
	r.Ref.Kind, r.Ref.ColumnID, r.Column = model.ObjectColumn, c.ID, c
	return r, nil
}

// pick finds name among xs: the exact match, else the one case-insensitive
// match.
func pick[T any](xs []T, name string, nameOf func(T) string) (T, bool) {
	var found T
	n := 0
	for _, x := range xs {
		if nameOf(x) == name {
			return x, true
		}
		if strings.EqualFold(nameOf(x), name) {
			found = x
			n++
		}
	}
	return found, n == 1
}

// Names spells live objects by id at one snapshot, for listings.
type Names struct {
	Snapshot int64
	schemas  map[int64]string
	tables   map[int64]ducklake.Table
	columns  map[[2]int64]string
	reader   *ducklake.Reader
}

// Names reads the names of every live schema and table at the current
// snapshot; column names are read per table on demand.
func (s *Store) Names(ctx context.Context) (*Names, error) {
	snap, err := s.reader.CurrentSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("governance: names: %w", err)
	}
	n := &Names{Snapshot: snap.ID, schemas: map[int64]string{}, tables: map[int64]ducklake.Table{}, columns: map[[2]int64]string{}, reader: s.reader}
	schemas, err := s.reader.Schemas(ctx, snap.ID)
	if err != nil {
		return nil, fmt.Errorf("governance: names: %w", err)
	}
	for _, sc := range schemas {
		n.schemas[sc.ID] = sc.Name
	}
	tables, err := s.reader.Tables(ctx, snap.ID)
	if err != nil {
		return nil, fmt.Errorf("governance: names: %w", err)
	}
	for _, t := range tables {
		n.tables[t.ID] = t
	}
	return n, nil
}

// Object spells ref, ok false when it is not live.
func (n *Names) Object(ctx context.Context, ref model.ObjectRef) (ObjectName, bool, error) {
	schema, ok := n.schemas[ref.SchemaID]
	if !ok {
		return ObjectName{}, false, nil
	}
	out := ObjectName{Kind: ref.Kind, Schema: schema}
	if ref.Kind == model.ObjectSchema {
		return out, true, nil
	}
	t, ok := n.tables[ref.TableID]
	if !ok || t.SchemaID != ref.SchemaID {
		return ObjectName{}, false, nil
	}
	out.Table = t.Name
	if ref.Kind == model.ObjectTable {
		return out, true, nil
	}
	key := [2]int64{ref.TableID, ref.ColumnID}
	if _, loaded := n.columns[[2]int64{ref.TableID, 0}]; !loaded {
		cols, err := n.reader.Columns(ctx, n.Snapshot, ref.TableID)
		if err != nil && !errors.Is(err, ducklake.ErrNotFound) {
			return ObjectName{}, false, err
		}
		n.columns[[2]int64{ref.TableID, 0}] = ""
		for _, c := range cols {
			n.columns[[2]int64{ref.TableID, c.ID}] = c.Name
		}
	}
	col, ok := n.columns[key]
	if !ok {
		return ObjectName{}, false, nil
	}
	out.Column = col
	return out, true, nil
}

// Table is the live table id, ok false when it is not.
func (n *Names) Table(id int64) (ducklake.Table, bool) {
	t, ok := n.tables[id]
	return t, ok
}

// Schema is the name of live schema id.
func (n *Names) Schema(id int64) (string, bool) {
	s, ok := n.schemas[id]
	return s, ok
}

// Purge deletes the governance rows that name a schema, table or column
// no longer live in the DuckLake catalog (dropped by DuckDB or by the
// catalog), as one change; it reports how many rows went. DuckLake never
// reuses an id, so a row naming a dead object can never apply again.
func (s *Store) Purge(ctx context.Context, author Change) (int64, error) {
	dead := func(alias string) string {
		return `NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_schema") + ` d WHERE d.schema_id = ` + alias + `.schema_id AND d.end_snapshot IS NULL)
		OR ` + alias + `.table_id <> 0 AND NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_table") + ` d WHERE d.table_id = ` + alias + `.table_id AND d.end_snapshot IS NULL)
		OR ` + alias + `.column_id <> 0 AND NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_column") + ` d WHERE d.table_id = ` + alias + `.table_id
			AND d.column_id = ` + alias + `.column_id AND d.end_snapshot IS NULL)`
	}
	// Object grants have no column.
	deadNoColumn := func(alias string) string {
		return `NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_schema") + ` d WHERE d.schema_id = ` + alias + `.schema_id AND d.end_snapshot IS NULL)
		OR ` + alias + `.table_id <> 0 AND NOT EXISTS (SELECT 1 FROM ` + s.t("ducklake_table") + ` d WHERE d.table_id = ` + alias + `.table_id AND d.end_snapshot IS NULL)`
	}
	stmts := []string{
		`DELETE FROM ` + s.t("duckicelake_gov_object_tag") + ` o WHERE ` + dead("o"),
		`DELETE FROM ` + s.t("duckicelake_gov_attachment") + ` o WHERE o.target_kind <> 'tag' AND (` + dead("o") + `)`,
		`DELETE FROM ` + s.t("duckicelake_gov_object_grant") + ` o WHERE ` + deadNoColumn("o"),
	}
	// Count first, read-only: most calls find nothing and should not bump
	// the version (every process would reload for nothing).
	var n int64
	for _, st := range stmts {
		q := strings.Replace(st, "DELETE FROM", "SELECT count(*) FROM", 1)
		var c int64
		if err := s.db.QueryRow(ctx, q).Scan(&c); err != nil {
			return 0, fmt.Errorf("governance: purge: %w", err)
		}
		n += c
	}
	if n == 0 {
		return 0, nil
	}
	var deleted int64
	author.What = "purge governance rows of dropped objects"
	_, err := s.Apply(ctx, author, func(ctx context.Context, tx *Tx) error {
		deleted = 0
		for _, st := range stmts {
			tag, err := tx.Exec(ctx, st)
			if err != nil {
				return fmt.Errorf("governance: purge: %w", err)
			}
			deleted += tag.RowsAffected()
		}
		return nil
	})
	return deleted, err
}

// AllTables lists the live tables, by id.
func (n *Names) AllTables() []ducklake.Table {
	out := make([]ducklake.Table, 0, len(n.tables))
	for _, t := range n.tables {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b ducklake.Table) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
