package commit

import (
	"fmt"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
)

// duckType is the DuckLake column_type of an Iceberg type. It is the
// inverse of materialize.IcebergType on the types both sides have, so a
// table created here reads back with the schema it was created with.
func duckType(t iceberg.Type, field string) (string, error) {
	switch t.ID {
	case iceberg.TypeBoolean:
		return "boolean", nil
	case iceberg.TypeInt:
		return "int32", nil
	case iceberg.TypeLong:
		return "int64", nil
	case iceberg.TypeFloat:
		return "float32", nil
	case iceberg.TypeDouble:
		return "float64", nil
	case iceberg.TypeDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale), nil
	case iceberg.TypeDate:
		return "date", nil
	case iceberg.TypeTime:
		return "time", nil
	case iceberg.TypeTimestamp:
		return "timestamp", nil
	case iceberg.TypeTimestampTZ:
		return "timestamptz", nil
	case iceberg.TypeString:
		return "varchar", nil
	case iceberg.TypeUUID:
		return "uuid", nil
	case iceberg.TypeBinary:
		return "blob", nil
	case iceberg.TypeStruct:
		return "struct", nil
	case iceberg.TypeList:
		return "list", nil
	case iceberg.TypeMap:
		return "map", nil
	case iceberg.TypeFixed:
		return "", unsupported("column %q: DuckLake has no fixed-length binary type; use binary", field)
	case iceberg.TypeTimestampNS, iceberg.TypeTimestampTZNS:
		return "", unsupported("column %q: %s needs Iceberg format version 3, which this catalog does not serve yet", field, t)
	}
	return "", invalid("column %q: type %s", field, t)
}

// column is one ducklake_column row to be written: a field, a list
// element or a map key or value, with its parent (0 at the top level).
type column struct {
	id       int64
	parent   int64
	name     string
	typ      string // DuckLake column_type
	nullable bool
	nested   bool
	ice      iceberg.Type
	doc      string // the field's doc: a ducklake_column_tag "comment"
}

// flatten lists the columns of fields depth first, each parent before its
// children: the order DuckDB gives ids and column_order in.
func flatten(fields []iceberg.NestedField) ([]column, error) {
	var out []column
	var walk func(parent int64, f iceberg.NestedField, depth int) error
	walk = func(parent int64, f iceberg.NestedField, depth int) error {
		if depth > 64 {
			return invalid("schema nested deeper than 64 levels")
		}
		if f.ID <= 0 {
			return invalid("field %q has id %d; field ids are positive", f.Name, f.ID)
		}
		if f.Name == "" {
			return invalid("field %d has no name", f.ID)
		}
		typ, err := duckType(f.Type, f.Name)
		if err != nil {
			return err
		}
		c := column{id: int64(f.ID), parent: parent, name: f.Name, typ: typ, nullable: !f.Required, nested: !f.Type.IsPrimitive(), ice: f.Type, doc: f.Doc}
		out = append(out, c)
		switch f.Type.ID {
		case iceberg.TypeStruct:
			if len(f.Type.Fields) == 0 {
				return unsupported("column %q: DuckLake has no empty structs", f.Name)
			}
			for _, child := range f.Type.Fields {
				if err := walk(c.id, child, depth+1); err != nil {
					return err
				}
			}
		case iceberg.TypeList:
			return walk(c.id, *f.Type.Element, depth+1)
		case iceberg.TypeMap:
			if err := walk(c.id, *f.Type.Key, depth+1); err != nil {
				return err
			}
			return walk(c.id, *f.Type.Value, depth+1)
		}
		return nil
	}
	seen := map[int64]bool{}
	names := map[string]bool{}
	for _, f := range fields {
		if names[f.Name] {
			return nil, invalid("two columns are called %q", f.Name)
		}
		names[f.Name] = true
		if err := walk(0, f, 0); err != nil {
			return nil, err
		}
	}
	for _, c := range out {
		if seen[c.id] {
			return nil, invalid("field id %d is used twice", c.id)
		}
		seen[c.id] = true
	}
	return out, nil
}

// reassignIDs renumbers a schema's fields depth first from 1, the way
// DuckDB numbers a new table's columns, and returns the old-to-new map for
// the partition spec and sort order that refer to them.
func reassignIDs(s *iceberg.Schema) (*iceberg.Schema, map[int]int) {
	ids := map[int]int{}
	next := 0
	var field func(f iceberg.NestedField) iceberg.NestedField
	var typ func(t iceberg.Type) iceberg.Type
	field = func(f iceberg.NestedField) iceberg.NestedField {
		next++
		ids[f.ID] = next
		f.ID = next
		f.Type = typ(f.Type)
		return f
	}
	typ = func(t iceberg.Type) iceberg.Type {
		switch t.ID {
		case iceberg.TypeStruct:
			fs := make([]iceberg.NestedField, len(t.Fields))
			for i, f := range t.Fields {
				fs[i] = field(f)
			}
			t.Fields = fs
		case iceberg.TypeList:
			e := field(*t.Element)
			t.Element = &e
		case iceberg.TypeMap:
			k := field(*t.Key)
			v := field(*t.Value)
			t.Key, t.Value = &k, &v
		}
		return t
	}
	out := &iceberg.Schema{ID: s.ID}
	for _, f := range s.Fields {
		out.Fields = append(out.Fields, field(f))
	}
	for _, id := range s.IdentifierFieldIDs {
		out.IdentifierFieldIDs = append(out.IdentifierFieldIDs, ids[id])
	}
	return out, ids
}

// icebergOf is the Iceberg type readers see for a DuckLake column row
// (primitives only; nested kinds compare by kind).
func icebergOf(c ducklake.Column) (iceberg.Type, error) {
	t, err := ducklake.ParseType(c.Type)
	if err != nil {
		return iceberg.Type{}, err
	}
	switch t.Kind {
	case ducklake.KindStruct:
		return iceberg.Type{ID: iceberg.TypeStruct}, nil
	case ducklake.KindList:
		return iceberg.Type{ID: iceberg.TypeList}, nil
	case ducklake.KindMap:
		return iceberg.Type{ID: iceberg.TypeMap}, nil
	}
	return materialize.IcebergType(ducklake.Field{ID: c.ID, Name: c.Name, Type: t, Nullable: c.NullsAllowed}, 2)
}

// promotion reports whether a column of Iceberg type from may become to,
// as Iceberg's type promotion rules allow and DuckDB can read (DuckDB
// widens the old files' values on read).
func promotion(from, to iceberg.Type) bool {
	switch {
	case from.ID == iceberg.TypeInt && to.ID == iceberg.TypeLong,
		from.ID == iceberg.TypeFloat && to.ID == iceberg.TypeDouble:
		return true
	case from.ID == iceberg.TypeDecimal && to.ID == iceberg.TypeDecimal:
		return from.Scale == to.Scale && to.Precision >= from.Precision
	}
	return false
}

// sameKind compares types shallowly: the same primitive (with parameters)
// or the same nested kind.
func sameKind(a, b iceberg.Type) bool {
	if !a.IsPrimitive() || !b.IsPrimitive() {
		return a.ID == b.ID
	}
	return a.Equal(b)
}
