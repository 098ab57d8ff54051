package ducklake

import (
	"errors"
	"testing"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want Type
	}{
		{"boolean", Type{Kind: KindBoolean}},
		{"int8", Type{Kind: KindInt8}},
		{"int16", Type{Kind: KindInt16}},
		{"int32", Type{Kind: KindInt32}},
		{"int64", Type{Kind: KindInt64}},
		{"int128", Type{Kind: KindInt128}},
		{"uint8", Type{Kind: KindUint8}},
		{"uint16", Type{Kind: KindUint16}},
		{"uint32", Type{Kind: KindUint32}},
		{"uint64", Type{Kind: KindUint64}},
		{"uint128", Type{Kind: KindUint128}},
		{"float32", Type{Kind: KindFloat32}},
		{"float64", Type{Kind: KindFloat64}},
		{"decimal(10,2)", Type{Kind: KindDecimal, Precision: 10, Scale: 2}},
		{"decimal(38, 0)", Type{Kind: KindDecimal, Precision: 38}},
		{"time", Type{Kind: KindTime}},
		{"time_ns", Type{Kind: KindTimeNS}},
		{"timetz", Type{Kind: KindTimeTZ}},
		{"date", Type{Kind: KindDate}},
		{"timestamp", Type{Kind: KindTimestamp}},
		{"timestamp_us", Type{Kind: KindTimestamp}},
		{"timestamp_s", Type{Kind: KindTimestampS}},
		{"timestamp_ms", Type{Kind: KindTimestampMS}},
		{"timestamp_ns", Type{Kind: KindTimestampNS}},
		{"timestamptz", Type{Kind: KindTimestampTZ}},
		{"interval", Type{Kind: KindInterval}},
		{"varchar", Type{Kind: KindVarchar}},
		{"VARCHAR", Type{Kind: KindVarchar}},
		{"blob", Type{Kind: KindBlob}},
		{"json", Type{Kind: KindJSON}},
		{"uuid", Type{Kind: KindUUID}},
		{"variant", Type{Kind: KindVariant}},
		{"geometry", Type{Kind: KindGeometry}},
		{"list", Type{Kind: KindList}},
		{"struct", Type{Kind: KindStruct}},
		{"map", Type{Kind: KindMap}},
	}
	for _, tc := range tests {
		got, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want.String() || got.Kind != tc.want.Kind || got.Precision != tc.want.Precision || got.Scale != tc.want.Scale {
			t.Errorf("ParseType(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "int", "integer", "decimal", "decimal(10)", "decimal(2,3)", "decimal(39,0)", "decimal(a,b)", "enum", "int32[]"} {
		if _, err := ParseType(bad); !errors.Is(err, ErrUnknownType) {
			t.Errorf("ParseType(%q) = %v, want ErrUnknownType", bad, err)
		}
	}
}

func TestBuildFields(t *testing.T) {
	// The column rows DuckDB 1.5.5 writes for
	// (id INT, tags INT[], st STRUCT(a INT, b VARCHAR[]), m MAP(VARCHAR, DECIMAL(10,2))).
	cols := []Column{
		{ID: 1, Order: 1, Name: "id", Type: "int32", NullsAllowed: true},
		{ID: 2, Order: 2, Name: "tags", Type: "list", NullsAllowed: true},
		{ID: 3, Order: 3, Name: "element", Type: "int32", ParentColumn: 2, NullsAllowed: true},
		{ID: 4, Order: 4, Name: "st", Type: "struct", NullsAllowed: true},
		{ID: 5, Order: 5, Name: "a", Type: "int32", ParentColumn: 4, NullsAllowed: true},
		{ID: 6, Order: 6, Name: "b", Type: "list", ParentColumn: 4, NullsAllowed: true},
		{ID: 7, Order: 7, Name: "element", Type: "varchar", ParentColumn: 6, NullsAllowed: true},
		{ID: 8, Order: 8, Name: "m", Type: "map", NullsAllowed: false},
		{ID: 9, Order: 9, Name: "key", Type: "varchar", ParentColumn: 8},
		{ID: 10, Order: 10, Name: "value", Type: "decimal(10,2)", ParentColumn: 8, NullsAllowed: true},
	}
	fields, err := BuildFields(cols)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Name+" "+f.Type.String())
	}
	want := []string{"id int32", "tags list(int32)", "st struct(a int32, b list(varchar))", "m map(varchar, decimal(10,2))"}
	if len(got) != len(want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d = %q, want %q", i, got[i], want[i])
		}
	}
	if b := fields[2].Type.Fields[1]; b.ID != 6 || b.Type.Fields[0].ID != 7 {
		t.Errorf("nested ids = %d/%d, want 6/7", b.ID, b.Type.Fields[0].ID)
	}
	if fields[3].Nullable || !fields[0].Nullable {
		t.Errorf("nullability lost")
	}

	bad := [][]Column{
		{{ID: 1, Name: "l", Type: "list"}},
		{{ID: 1, Name: "m", Type: "map"}, {ID: 2, Name: "key", Type: "int32", ParentColumn: 1}},
		{{ID: 1, Name: "i", Type: "int32"}, {ID: 2, Name: "x", Type: "int32", ParentColumn: 1}},
		{{ID: 1, Name: "x", Type: "int"}},
	}
	for i, cols := range bad {
		if _, err := BuildFields(cols); err == nil {
			t.Errorf("bad %d: no error", i)
		}
	}
}

func TestParseChanges(t *testing.T) {
	got := ParseChanges(`created_table:"s1"."a,b",inserted_into_table:3,inlined_delete:3,created_schema:"x""y"`)
	want := []Change{
		{"created_table", `"s1"."a,b"`},
		{"inserted_into_table", "3"},
		{"inlined_delete", "3"},
		{"created_schema", `"x""y"`},
	}
	if len(got) != len(want) {
		t.Fatalf("ParseChanges = %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %q, want %q", i, got[i], want[i])
		}
	}
	if got := ParseChanges(""); len(got) != 0 {
		t.Errorf("ParseChanges(\"\") = %q", got)
	}
}

func TestResolvePath(t *testing.T) {
	data := "s3://lake/data/"
	schema := resolvePath(data, "s1/", true)
	table := resolvePath(schema, "t/", true)
	if got := resolvePath(table, "f.parquet", true); got != "s3://lake/data/s1/t/f.parquet" {
		t.Errorf("relative = %q", got)
	}
	if got := resolvePath(table, "s3://other/f.parquet", false); got != "s3://other/f.parquet" {
		t.Errorf("absolute = %q", got)
	}
	abs := resolvePath(resolvePath(data, "s3://elsewhere/", false), "t/", true)
	if got := resolvePath(abs, "f.parquet", true); got != "s3://elsewhere/t/f.parquet" {
		t.Errorf("under absolute schema = %q", got)
	}
	if got := resolvePath(resolvePath(data, "", true), "", true); got != data {
		t.Errorf("empty paths (catalogs migrated from 0.1) = %q", got)
	}
}
