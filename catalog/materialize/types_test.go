package materialize

import (
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

func duckType(t *testing.T, s string) ducklake.Type {
	t.Helper()
	dt, err := ducklake.ParseType(s)
	if err != nil {
		t.Fatal(err)
	}
	return dt
}

func TestIcebergTypeMapping(t *testing.T) {
	for duck, want := range map[string]string{
		"boolean": "boolean", "int8": "int", "int16": "int", "int32": "int", "uint8": "int", "uint16": "int",
		"int64": "long", "uint32": "long", "int128": "double", "uint128": "double",
		"float32": "float", "float64": "double", "decimal(18,3)": "decimal(18,3)", "date": "date", "time": "time",
		"timestamp": "timestamp", "timestamp_us": "timestamp", "timestamp_s": "timestamp", "timestamp_ms": "timestamp",
		"timestamptz": "timestamptz", "varchar": "string", "json": "string", "blob": "binary", "uuid": "uuid",
	} {
		got, err := IcebergType(ducklake.Field{ID: 1, Name: "c", Type: duckType(t, duck)}, 2)
		if err != nil || got.String() != want {
			t.Errorf("%s → %s, %v; want %s", duck, got, err, want)
		}
	}
	for _, duck := range []string{"uint64", "interval", "timetz", "time_ns", "variant", "geometry", "timestamp_ns"} {
		_, err := IcebergType(ducklake.Field{ID: 7, Name: "when", Type: duckType(t, duck)}, 2)
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `column "when" (id 7)`) {
			t.Errorf("%s: %v, want ErrUnsupportedType naming the column", duck, err)
		}
	}
	if got, err := IcebergType(ducklake.Field{ID: 1, Name: "n", Type: duckType(t, "timestamp_ns")}, 3); err != nil || got.ID != iceberg.TypeTimestampNS {
		t.Errorf("timestamp_ns in v3: %s, %v", got, err)
	}
}

func TestIcebergSchemaNested(t *testing.T) {
	cols := []ducklake.Column{
		{ID: 1, Order: 1, Name: "id", Type: "int32", NullsAllowed: false},
		{ID: 2, Order: 2, Name: "tags", Type: "list", NullsAllowed: true},
		{ID: 3, Order: 3, Name: "element", Type: "varchar", NullsAllowed: true, ParentColumn: 2},
		{ID: 4, Order: 4, Name: "m", Type: "map", NullsAllowed: true},
		{ID: 5, Order: 5, Name: "key", Type: "varchar", NullsAllowed: false, ParentColumn: 4},
		{ID: 6, Order: 6, Name: "value", Type: "int64", NullsAllowed: true, ParentColumn: 4},
		{ID: 7, Order: 7, Name: "st", Type: "struct", NullsAllowed: true},
		{ID: 8, Order: 8, Name: "a", Type: "decimal(9,2)", NullsAllowed: true, ParentColumn: 7},
		{ID: 9, Order: 9, Name: "b", Type: "list", NullsAllowed: true, ParentColumn: 7},
		{ID: 10, Order: 10, Name: "element", Type: "uuid", NullsAllowed: false, ParentColumn: 9},
	}
	fields, err := ducklake.BuildFields(cols)
	if err != nil {
		t.Fatal(err)
	}
	s, err := IcebergSchema(4, fields, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","schema-id":4,"fields":[{"id":1,"name":"id","required":true,"type":"int"},` +
		`{"id":2,"name":"tags","required":false,"type":{"type":"list","element-id":3,"element-required":false,"element":"string"}},` +
		`{"id":4,"name":"m","required":false,"type":{"type":"map","key-id":5,"key":"string","value-id":6,"value-required":false,"value":"long"}},` +
		`{"id":7,"name":"st","required":false,"type":{"type":"struct","fields":[{"id":8,"name":"a","required":false,"type":"decimal(9,2)"},` +
		`{"id":9,"name":"b","required":false,"type":{"type":"list","element-id":10,"element-required":true,"element":"uuid"}}]}}]}`
	got, _ := s.MarshalJSON()
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	leaves := leafColumns(fields, s)
	if _, ok := leaves[8]; !ok || len(leaves) != 2 {
		t.Errorf("leaf columns %v: want id and st.a (not list elements or map entries)", leaves)
	}
}

func TestIcebergValue(t *testing.T) {
	big1, _ := new(big.Int).SetString("170141183460469231731687303715884105727", 10)
	ts := time.Date(2024, 3, 1, 10, 0, 0, 123456000, time.UTC)
	for _, c := range []struct {
		duck string
		in   any
		want any
	}{
		{"int8", int8(-3), int32(-3)},
		{"uint16", uint16(65535), int32(65535)},
		{"uint32", uint32(4294967295), int64(4294967295)},
		{"int128", big1, 1.7014118346046923e38},
		{"date", ducklake.Date(19783), int32(19783)},
		{"time", ducklake.TimeOfDay(45296000000), int64(45296000000)},
		{"timestamp", ts, ts.UnixMicro()},
		{"timestamptz", ts, ts.UnixMicro()},
		{"timestamp_ns", ts, ts.UnixNano()},
		{"decimal(10,2)", ducklake.Decimal{Unscaled: big.NewInt(-150), Scale: 2}, iceberg.Decimal{Unscaled: big.NewInt(-150)}},
	} {
		got, err := IcebergValue(duckType(t, c.duck), c.in)
		if err != nil {
			t.Errorf("%s %v: %v", c.duck, c.in, err)
			continue
		}
		it, _ := IcebergType(ducklake.Field{Type: duckType(t, c.duck)}, 3)
		g, err1 := iceberg.AppendBinary(nil, it, got)
		w, err2 := iceberg.AppendBinary(nil, it, c.want)
		if err1 != nil || err2 != nil || string(g) != string(w) {
			t.Errorf("%s %v → %v (%T), want %v", c.duck, c.in, got, got, c.want)
		}
	}
	if _, err := IcebergValue(duckType(t, "decimal(10,2)"), ducklake.Decimal{Unscaled: big.NewInt(1), Scale: 3}); err == nil {
		t.Error("a decimal of another scale was accepted")
	}
}

func TestStatBounds(t *testing.T) {
	long := strings.Repeat("q", 256) // DuckDB cuts string statistics to 256 bytes
	for _, c := range []struct {
		name     string
		duck     string
		min, max string
		lo, hi   string // hex; "-" for none
	}{
		{"int", "int32", "-5", "99", "fbffffff", "63000000"},
		{"bigint", "int64", "0", "194", "0000000000000000", "c200000000000000"},
		{"zero lower double is -0.0", "float64", "0.0", "19.0", "0000000000000080", "0000000000003340"},
		{"zero upper float is +0.0", "float32", "-1.5", "-0.0", "0000c0bf", "00000000"},
		{"infinite bounds are kept", "float64", "-inf", "inf", "000000000000f0ff", "000000000000f07f"},
		{"NaN bounds are dropped", "float64", "nan", "nan", "-", "-"},
		{"blob statistics are hex", "blob", "FF61", "FF62", "ff61", "ff62"},
		{"long blob upper bound is incremented", "blob", strings.Repeat("AB", 20), strings.Repeat("FF", 16) + "01", strings.Repeat("ab", 16), "-"},
		{"uint32 as long", "uint32", "0", "4294967295", "0000000000000000", "ffffffff00000000"},
		{"decimal", "decimal(10,2)", "-1.5", "28.50", "ff6a", "0b22"},
		{"decimal with too many digits is dropped", "decimal(10,2)", "1.234", "2", "-", "00c8"},
		{"timestamptz with offset", "timestamptz", "2024-03-01 05:00:00+00", "2024-03-01 10:00:00+05", "00d47d3f92120600", "00d47d3f92120600"},
		{"date", "date", "2024-01-15", "infinity", "194d0000", "-"},
		{"uuid", "uuid", "550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-a716-446655440000",
			"550e8400e29b41d4a716446655440000", "550e8400e29b41d4a716446655440000"},
		{"short strings as is", "varchar", "c0", "c2", hex.EncodeToString([]byte("c0")), hex.EncodeToString([]byte("c2"))},
		{"truncated string max becomes a true upper bound", "varchar", long, long,
			hex.EncodeToString([]byte(strings.Repeat("q", 16))), hex.EncodeToString([]byte(strings.Repeat("q", 15) + "r"))},
		{"unicode truncation keeps whole code points", "varchar", strings.Repeat("é", 20), strings.Repeat("é", 20),
			hex.EncodeToString([]byte(strings.Repeat("é", 16))), hex.EncodeToString([]byte(strings.Repeat("é", 15) + "ê"))},
		{"garbage is dropped", "int32", "x", "y", "-", "-"},
	} {
		dt := duckType(t, c.duck)
		it, err := IcebergType(ducklake.Field{Type: dt}, 2)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := statBounds(dt, it, &c.min, &c.max)
		for _, p := range []struct {
			name      string
			got, want string
			raw       []byte
		}{{"lower", hex.EncodeToString(lo), c.lo, lo}, {"upper", hex.EncodeToString(hi), c.hi, hi}} {
			if p.want == "-" {
				if p.raw != nil {
					t.Errorf("%s: %s bound %s, want none", c.name, p.name, p.got)
				}
			} else if p.got != p.want {
				t.Errorf("%s: %s bound %s, want %s", c.name, p.name, p.got, p.want)
			}
		}
	}
}

func TestIncrement(t *testing.T) {
	if s, ok := incrementRunes("ab\U0010FFFF"); !ok || s != "ac" {
		t.Errorf("incrementRunes = %q, %v", s, ok)
	}
	if s, ok := incrementRunes("a\uD7FF"); !ok || s != "a\uE000" {
		t.Errorf("incrementRunes skips surrogates: %q, %v", s, ok)
	}
	if _, ok := incrementRunes("\U0010FFFF"); ok {
		t.Error("incrementRunes of the largest code point")
	}
	if b, ok := incrementBytes([]byte{1, 0xff}); !ok || hex.EncodeToString(b) != "02" {
		t.Errorf("incrementBytes = %x, %v", b, ok)
	}
	if _, ok := incrementBytes([]byte{0xff, 0xff}); ok {
		t.Error("incrementBytes of all 0xff")
	}
}

func TestNameMapping(t *testing.T) {
	s := &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)},
		{ID: 2, Name: "tags", Type: iceberg.ListOf(3, false, iceberg.Primitive(iceberg.TypeString))},
		{ID: 4, Name: "m", Type: iceberg.MapOf(5, iceberg.Primitive(iceberg.TypeString), 6, false, iceberg.StructOf(
			iceberg.NestedField{ID: 7, Name: "x", Type: iceberg.Primitive(iceberg.TypeInt)}))},
	}}
	got := nameMapping(s, []ducklake.NameMapping{{ID: 1, Entries: []ducklake.NameMappingEntry{
		{ColumnID: 1, SourceName: "ID", TargetFieldID: 1}, {ColumnID: 1, SourceName: "id", TargetFieldID: 1},
		{ColumnID: 2, SourceName: "labels", TargetFieldID: 2}}}})
	want := `[{"field-id":1,"names":["id","ID"]},{"field-id":2,"names":["tags","labels"],"fields":[{"field-id":3,"names":["element"]}]},` +
		`{"field-id":4,"names":["m"],"fields":[{"field-id":5,"names":["key"]},{"field-id":6,"names":["value"],"fields":[{"field-id":7,"names":["x"]}]}]}]`
	if got != want {
		t.Errorf("name mapping\n got %s\nwant %s", got, want)
	}
}
