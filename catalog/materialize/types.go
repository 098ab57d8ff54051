package materialize

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// ErrUnsupportedType reports a DuckLake column whose type has no Iceberg
// counterpart in the format version asked for. The message names the column.
var ErrUnsupportedType = errors.New("materialize: column type not expressible in Iceberg")

// IcebergType maps a DuckLake column type to the Iceberg type readers see.
// Field ids are the DuckLake column ids, nested children included. The
// mapping follows what DuckDB writes into the Parquet files, because that is
// what an Iceberg reader will find there:
//
//	boolean                        boolean
//	int8, int16, int32             int
//	uint8, uint16                  int
//	int64, uint32                  long
//	int128, uint128                double         (DuckDB writes HUGEINT as DOUBLE)
//	float32, float64               float, double
//	decimal(p,s)                   decimal(p,s)
//	date, time                     date, time
//	timestamp, timestamp_s         timestamp      (DuckDB writes seconds as micros)
//	timestamp_ms                   timestamp      (files hold millis; readers widen)
//	timestamp_ns                   timestamp_ns   (format v3 only)
//	timestamptz                    timestamptz
//	varchar, json                  string
//	blob                           binary
//	uuid                           uuid
//	list, struct, map              list, struct, map
//	uint64, time_ns, timetz,
//	interval, variant, geometry    ErrUnsupportedType
//
// uint64 has no faithful form: the files hold INT64 annotated UINT_64,
// which PyIceberg and iceberg-go refuse to read as decimal(20,0) ("cannot
// promote long to decimal"), and read as long every value above 2^63-1
// would come back negative.
func IcebergType(f ducklake.Field, formatVersion int) (iceberg.Type, error) {
	t := f.Type
	unsupported := func(why string) (iceberg.Type, error) {
		return iceberg.Type{}, fmt.Errorf("%w: column %q (id %d) is %s: %s", ErrUnsupportedType, f.Name, f.ID, t, why)
	}
	switch t.Kind {
	case ducklake.KindBoolean:
		return iceberg.Primitive(iceberg.TypeBoolean), nil
	case ducklake.KindInt8, ducklake.KindInt16, ducklake.KindInt32, ducklake.KindUint8, ducklake.KindUint16:
		return iceberg.Primitive(iceberg.TypeInt), nil
	case ducklake.KindInt64, ducklake.KindUint32:
		return iceberg.Primitive(iceberg.TypeLong), nil
	case ducklake.KindUint64:
		return unsupported("Iceberg has no unsigned 64-bit integer (as long, values above 2^63-1 would read negative)")
	case ducklake.KindInt128, ducklake.KindUint128:
		return iceberg.Primitive(iceberg.TypeDouble), nil
	case ducklake.KindFloat32:
		return iceberg.Primitive(iceberg.TypeFloat), nil
	case ducklake.KindFloat64:
		return iceberg.Primitive(iceberg.TypeDouble), nil
	case ducklake.KindDecimal:
		return iceberg.DecimalOf(t.Precision, t.Scale), nil
	case ducklake.KindDate:
		return iceberg.Primitive(iceberg.TypeDate), nil
	case ducklake.KindTime:
		return iceberg.Primitive(iceberg.TypeTime), nil
	case ducklake.KindTimestamp, ducklake.KindTimestampS, ducklake.KindTimestampMS:
		return iceberg.Primitive(iceberg.TypeTimestamp), nil
	case ducklake.KindTimestampNS:
		if formatVersion < 3 {
			return unsupported("timestamp_ns needs Iceberg format version 3")
		}
		return iceberg.Primitive(iceberg.TypeTimestampNS), nil
	case ducklake.KindTimestampTZ:
		return iceberg.Primitive(iceberg.TypeTimestampTZ), nil
	case ducklake.KindVarchar, ducklake.KindJSON:
		return iceberg.Primitive(iceberg.TypeString), nil
	case ducklake.KindBlob:
		return iceberg.Primitive(iceberg.TypeBinary), nil
	case ducklake.KindUUID:
		return iceberg.Primitive(iceberg.TypeUUID), nil
	case ducklake.KindList:
		if len(t.Fields) != 1 {
			return unsupported("list without its element column")
		}
		e := t.Fields[0]
		et, err := IcebergType(e, formatVersion)
		if err != nil {
			return iceberg.Type{}, err
		}
		return iceberg.ListOf(int(e.ID), !e.Nullable, et), nil
	case ducklake.KindMap:
		if len(t.Fields) != 2 {
			return unsupported("map without key and value columns")
		}
		k, v := t.Fields[0], t.Fields[1]
		kt, err := IcebergType(k, formatVersion)
		if err != nil {
			return iceberg.Type{}, err
		}
		vt, err := IcebergType(v, formatVersion)
		if err != nil {
			return iceberg.Type{}, err
		}
		return iceberg.MapOf(int(k.ID), kt, int(v.ID), !v.Nullable, vt), nil
	case ducklake.KindStruct:
		fields, err := icebergFields(t.Fields, formatVersion)
		if err != nil {
			return iceberg.Type{}, err
		}
		return iceberg.StructOf(fields...), nil
	case ducklake.KindTimeNS:
		return unsupported("Iceberg has no nanosecond time")
	case ducklake.KindTimeTZ:
		return unsupported("Iceberg has no time with time zone")
	case ducklake.KindInterval:
		return unsupported("Iceberg has no interval type")
	case ducklake.KindVariant, ducklake.KindGeometry:
		return unsupported("not mapped yet (Iceberg v3 variant/geometry)")
	}
	return unsupported("unknown type")
}

func icebergFields(fields []ducklake.Field, formatVersion int) ([]iceberg.NestedField, error) {
	out := make([]iceberg.NestedField, len(fields))
	for i, f := range fields {
		t, err := IcebergType(f, formatVersion)
		if err != nil {
			return nil, err
		}
		out[i] = iceberg.NestedField{ID: int(f.ID), Name: f.Name, Required: !f.Nullable, Type: t, Doc: f.Doc}
	}
	return out, nil
}

// IcebergSchema maps a table's top-level DuckLake fields to an Iceberg
// schema with id schemaID.
func IcebergSchema(schemaID int, fields []ducklake.Field, formatVersion int) (*iceberg.Schema, error) {
	fs, err := icebergFields(fields, formatVersion)
	if err != nil {
		return nil, err
	}
	return &iceberg.Schema{ID: schemaID, Fields: fs}, nil
}

// IcebergValue converts a value as ducklake.ParseDuckDBText and the inlined
// data reader return it (for DuckLake type t) into the Go value of the
// Iceberg type IcebergType gives. Nested values are not converted.
func IcebergValue(t ducklake.Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func() (any, error) { return nil, fmt.Errorf("materialize: %T is not a %s value", v, t) }
	switch x := v.(type) {
	case bool:
		return x, nil
	case int8:
		return int32(x), nil
	case int16:
		return int32(x), nil
	case int32:
		return x, nil
	case int64:
		return x, nil
	case uint8:
		return int32(x), nil
	case uint16:
		return int32(x), nil
	case uint32:
		return int64(x), nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, nil
	case float32:
		return x, nil
	case float64:
		return x, nil
	case ducklake.Decimal:
		if x.Unscaled == nil || x.Scale != t.Scale {
			return bad()
		}
		return iceberg.Decimal{Unscaled: x.Unscaled}, nil
	case ducklake.Date:
		return int32(x), nil
	case ducklake.TimeOfDay:
		return int64(x), nil
	case time.Time:
		if t.Kind == ducklake.KindTimestampNS {
			// UnixNano is only defined for years 1678..2262.
			if x.Year() < 1678 || x.Year() > 2261 {
				return nil, fmt.Errorf("materialize: %s does not fit a nanosecond timestamp", x)
			}
			return x.UnixNano(), nil
		}
		return x.UnixMicro(), nil
	case string:
		return x, nil
	case []byte:
		return x, nil
	case [16]byte:
		return x, nil
	}
	return bad()
}

// boundsTruncateLength is how many characters (strings) or bytes (binary)
// of a bound are kept, as Iceberg's default metrics mode truncate(16) does.
// DuckDB truncates long string statistics itself (to 256 bytes), which makes
// its max a prefix smaller than the true maximum; truncating further and
// incrementing gives a true upper bound again.
const boundsTruncateLength = 16

// statBounds turns DuckLake min/max text of a column of DuckLake type t into
// Iceberg lower and upper bounds (single-value binary). A bound that cannot
// be parsed, is infinite or NaN is left out: bounds are optional, wrong
// ones are not.
func statBounds(t ducklake.Type, it iceberg.Type, min, max *string) (lower, upper []byte) {
	if !it.IsPrimitive() {
		return nil, nil
	}
	if min != nil {
		if v, ok := statValue(t, *min); ok {
			lower = lowerBound(it, v)
		}
	}
	if max != nil {
		if v, ok := statValue(t, *max); ok {
			upper = upperBound(it, v)
		}
	}
	return lower, upper
}

func statValue(t ducklake.Type, s string) (any, bool) {
	var v any
	var err error
	if t.Kind == ducklake.KindBlob {
		v, err = hex.DecodeString(s) // statistics hex-encode blobs
	} else {
		v, err = ducklake.ParseDuckDBText(t, s)
	}
	if err != nil {
		return nil, false
	}
	iv, err := IcebergValue(t, v)
	if err != nil {
		return nil, false
	}
	switch f := iv.(type) {
	case float32:
		if f != f {
			return nil, false
		}
	case float64:
		if f != f {
			return nil, false
		}
	}
	return iv, true
}

func lowerBound(it iceberg.Type, v any) []byte {
	switch x := v.(type) {
	case float32:
		if x == 0 {
			v = float32(math.Copysign(0, -1)) // -0.0 may be in the file
		}
	case float64:
		if x == 0 {
			v = math.Copysign(0, -1)
		}
	case string:
		if utf8.RuneCountInString(x) > boundsTruncateLength {
			v = truncateRunes(x, boundsTruncateLength)
		}
	case []byte:
		if len(x) > boundsTruncateLength {
			v = x[:boundsTruncateLength]
		}
	}
	b, err := iceberg.AppendBinary(nil, it, v)
	if err != nil {
		return nil
	}
	return b
}

func upperBound(it iceberg.Type, v any) []byte {
	switch x := v.(type) {
	case float32:
		if x == 0 {
			v = float32(0) // +0.0 may be in the file
		}
	case float64:
		if x == 0 {
			v = 0.0
		}
	case string:
		if utf8.RuneCountInString(x) > boundsTruncateLength {
			s, ok := incrementRunes(truncateRunes(x, boundsTruncateLength))
			if !ok {
				return nil
			}
			v = s
		}
	case []byte:
		if len(x) > boundsTruncateLength {
			b, ok := incrementBytes(x[:boundsTruncateLength])
			if !ok {
				return nil
			}
			v = b
		}
	}
	b, err := iceberg.AppendBinary(nil, it, v)
	if err != nil {
		return nil
	}
	return b
}

func truncateRunes(s string, n int) string {
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// incrementRunes returns the smallest string greater than every string
// with prefix s, by incrementing its last code point that can be (dropping
// what follows); ok is false if none can.
func incrementRunes(s string) (string, bool) {
	runes := []rune(s)
	for i := len(runes) - 1; i >= 0; i-- {
		r := runes[i] + 1
		if r == 0xD800 { // skip the surrogate range
			r = 0xE000
		}
		if r <= utf8.MaxRune {
			runes[i] = r
			return string(runes[:i+1]), true
		}
	}
	return "", false
}

func incrementBytes(b []byte) ([]byte, bool) {
	out := append([]byte(nil), b...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] < 0xff {
			out[i]++
			return out[:i+1], true
		}
	}
	return nil, false
}

// leafColumns lists the primitive fields of a schema that metrics are kept
// for: top level and inside structs, not inside lists or maps (Iceberg does
// not filter on those), with their DuckLake and Iceberg types.
type leafColumn struct {
	duck    ducklake.Type
	iceberg iceberg.Type
}

func leafColumns(fields []ducklake.Field, schema *iceberg.Schema) map[int64]leafColumn {
	out := map[int64]leafColumn{}
	var walk func(fs []ducklake.Field)
	walk = func(fs []ducklake.Field) {
		for _, f := range fs {
			switch f.Type.Kind {
			case ducklake.KindStruct:
				walk(f.Type.Fields)
			case ducklake.KindList, ducklake.KindMap:
			default:
				if nf := schema.FindField(int(f.ID)); nf != nil {
					out[f.ID] = leafColumn{duck: f.Type, iceberg: nf.Type}
				}
			}
		}
	}
	walk(fields)
	return out
}
