package ducklake

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is a DuckLake data type without its parameters and children.
type Kind uint8

// The DuckLake 1.0 types (specification: data_types.md), plus the names
// DuckDB 1.5 also accepts in column_type (time_ns, timestamp_us).
const (
	KindInvalid Kind = iota
	KindBoolean
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindInt128
	KindUint8
	KindUint16
	KindUint32
	KindUint64
	KindUint128
	KindFloat32
	KindFloat64
	KindDecimal // Precision, Scale
	KindTime    // microseconds
	KindTimeNS
	KindTimeTZ
	KindDate
	KindTimestamp // microseconds, no zone
	KindTimestampS
	KindTimestampMS
	KindTimestampNS
	KindTimestampTZ // microseconds, UTC
	KindInterval
	KindVarchar
	KindBlob
	KindJSON
	KindUUID
	KindVariant
	KindGeometry
	KindList   // Fields[0] is the element
	KindStruct // Fields are the members, in order
	KindMap    // Fields[0] is the key, Fields[1] the value
)

var kindNames = [...]string{
	KindInvalid:     "invalid",
	KindBoolean:     "boolean",
	KindInt8:        "int8",
	KindInt16:       "int16",
	KindInt32:       "int32",
	KindInt64:       "int64",
	KindInt128:      "int128",
	KindUint8:       "uint8",
	KindUint16:      "uint16",
	KindUint32:      "uint32",
	KindUint64:      "uint64",
	KindUint128:     "uint128",
	KindFloat32:     "float32",
	KindFloat64:     "float64",
	KindDecimal:     "decimal",
	KindTime:        "time",
	KindTimeNS:      "time_ns",
	KindTimeTZ:      "timetz",
	KindDate:        "date",
	KindTimestamp:   "timestamp",
	KindTimestampS:  "timestamp_s",
	KindTimestampMS: "timestamp_ms",
	KindTimestampNS: "timestamp_ns",
	KindTimestampTZ: "timestamptz",
	KindInterval:    "interval",
	KindVarchar:     "varchar",
	KindBlob:        "blob",
	KindJSON:        "json",
	KindUUID:        "uuid",
	KindVariant:     "variant",
	KindGeometry:    "geometry",
	KindList:        "list",
	KindStruct:      "struct",
	KindMap:         "map",
}

// String returns the DuckLake name of k ("int32", "decimal", "list", …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Nested reports whether values of kind k have children.
func (k Kind) Nested() bool { return k == KindList || k == KindStruct || k == KindMap }

// Type is a DuckLake column type. Nested types carry their children, built
// from the ducklake_column rows whose parent_column points at the column.
type Type struct {
	Kind      Kind
	Precision int     // KindDecimal: total digits (DuckDB's width)
	Scale     int     // KindDecimal: digits after the point
	Fields    []Field // KindList, KindStruct, KindMap; see the Kind constants
}

// Field is a named child of a nested type, or a top-level column.
type Field struct {
	ID       int64 // ducklake_column.column_id: the Parquet field id
	Name     string
	Type     Type
	Nullable bool
	// Doc is the column's comment (its ducklake_column_tag "comment", as
	// DuckDB's COMMENT ON COLUMN writes it), which Iceberg calls doc.
	Doc string
}

// String renders t in DuckDB syntax, e.g. "decimal(10,2)",
// "struct(a int32, b list(varchar))", "map(varchar, int32)".
func (t Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t Type) write(b *strings.Builder) {
	switch t.Kind {
	case KindDecimal:
		fmt.Fprintf(b, "decimal(%d,%d)", t.Precision, t.Scale)
	case KindList:
		b.WriteString("list(")
		if len(t.Fields) == 1 {
			t.Fields[0].Type.write(b)
		}
		b.WriteByte(')')
	case KindMap, KindStruct:
		b.WriteString(t.Kind.String())
		b.WriteByte('(')
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			if t.Kind == KindStruct {
				b.WriteString(f.Name)
				b.WriteByte(' ')
			}
			f.Type.write(b)
		}
		b.WriteByte(')')
	default:
		b.WriteString(t.Kind.String())
	}
}

// ErrUnknownType reports a column_type this package does not know.
var ErrUnknownType = errors.New("unknown DuckLake type")

// kindByName maps every accepted column_type spelling to its Kind.
var kindByName = map[string]Kind{
	"boolean":      KindBoolean,
	"int8":         KindInt8,
	"int16":        KindInt16,
	"int32":        KindInt32,
	"int64":        KindInt64,
	"int128":       KindInt128,
	"uint8":        KindUint8,
	"uint16":       KindUint16,
	"uint32":       KindUint32,
	"uint64":       KindUint64,
	"uint128":      KindUint128,
	"float32":      KindFloat32,
	"float64":      KindFloat64,
	"time":         KindTime,
	"time_ns":      KindTimeNS,
	"timetz":       KindTimeTZ,
	"date":         KindDate,
	"timestamp":    KindTimestamp,
	"timestamp_us": KindTimestamp,
	"timestamp_s":  KindTimestampS,
	"timestamp_ms": KindTimestampMS,
	"timestamp_ns": KindTimestampNS,
	"timestamptz":  KindTimestampTZ,
	"interval":     KindInterval,
	"varchar":      KindVarchar,
	"blob":         KindBlob,
	"json":         KindJSON,
	"uuid":         KindUUID,
	"variant":      KindVariant,
	"geometry":     KindGeometry,
	"list":         KindList,
	"struct":       KindStruct,
	"map":          KindMap,
}

// ParseType parses one ducklake_column.column_type value. Names are
// case-insensitive as in DuckDB. Nested kinds come back without Fields: their
// children are separate columns.
func ParseType(s string) (Type, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if k, ok := kindByName[name]; ok {
		return Type{Kind: k}, nil
	}
	if args, ok := strings.CutPrefix(name, "decimal("); ok {
		if args, ok = strings.CutSuffix(args, ")"); ok {
			p, sc, ok := strings.Cut(args, ",")
			if ok {
				precision, err1 := strconv.Atoi(strings.TrimSpace(p))
				scale, err2 := strconv.Atoi(strings.TrimSpace(sc))
				// DuckDB's DECIMAL width is 1..38 and scale <= width.
				if err1 == nil && err2 == nil && precision >= 1 && precision <= 38 && scale >= 0 && scale <= precision {
					return Type{Kind: KindDecimal, Precision: precision, Scale: scale}, nil
				}
			}
		}
		return Type{}, fmt.Errorf("%w: bad decimal %q", ErrUnknownType, s)
	}
	return Type{}, fmt.Errorf("%w: %q", ErrUnknownType, s)
}
