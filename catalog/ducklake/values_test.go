package ducklake

import (
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"
)

func mustType(t *testing.T, s string) Type {
	t.Helper()
	ty, err := ParseType(s)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

func list(elem Type) Type {
	return Type{Kind: KindList, Fields: []Field{{Name: "element", Type: elem}}}
}

func TestParseDuckDBText(t *testing.T) {
	varchar := Type{Kind: KindVarchar}
	int32T := Type{Kind: KindInt32}
	st := Type{Kind: KindStruct, Fields: []Field{
		{Name: "a", Type: varchar}, {Name: "b", Type: int32T}, {Name: "c", Type: list(int32T)},
		{Name: "d", Type: Type{Kind: KindStruct, Fields: []Field{{Name: "e", Type: varchar}}}},
	}}
	mapT := Type{Kind: KindMap, Fields: []Field{{Name: "key", Type: varchar}, {Name: "value", Type: varchar}}}
	utc := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04:05.999999999Z07:00", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}
	big128, _ := new(big.Int).SetString("-170141183460469231731687303715884105728", 10)

	// Inputs are what DuckDB 1.5.5's CAST(... AS VARCHAR) prints.
	tests := []struct {
		typ  Type
		in   string
		want any
	}{
		{Type{Kind: KindBoolean}, "true", true},
		{Type{Kind: KindInt8}, "-128", int8(-128)},
		{Type{Kind: KindUint64}, "18446744073709551615", uint64(math.MaxUint64)},
		{Type{Kind: KindInt128}, "-170141183460469231731687303715884105728", big128},
		{Type{Kind: KindFloat64}, "1e+20", 1e20},
		{Type{Kind: KindFloat32}, "-inf", float32(math.Inf(-1))},
		{mustType(t, "decimal(10,2)"), "-1.5", Decimal{Unscaled: big.NewInt(-150), Scale: 2}},
		{mustType(t, "decimal(4,4)"), "0.0001", Decimal{Unscaled: big.NewInt(1), Scale: 4}},
		{Type{Kind: KindDate}, "2024-01-01", Date(19723)},
		{Type{Kind: KindDate}, "1969-12-31", Date(-1)},
		{Type{Kind: KindTime}, "23:59:59.999999", TimeOfDay(86399999999)},
		{Type{Kind: KindTimeTZ}, "12:30:00+05:30", TimeTZ{Micros: 45000000000, OffsetSeconds: 19800}},
		{Type{Kind: KindTimeTZ}, "12:30:00-02", TimeTZ{Micros: 45000000000, OffsetSeconds: -7200}},
		{Type{Kind: KindTimestamp}, "2024-01-15 12:30:00.123456", utc("2024-01-15 12:30:00.123456Z")},
		{Type{Kind: KindTimestampNS}, "2024-01-15 12:30:00.123456789", utc("2024-01-15 12:30:00.123456789Z")},
		{Type{Kind: KindTimestampS}, "2024-01-15 12:30:00", utc("2024-01-15 12:30:00Z")},
		{Type{Kind: KindTimestampTZ}, "2024-01-01 15:30:00.123456+05:30", utc("2024-01-01 10:00:00.123456Z")},
		{Type{Kind: KindTimestampTZ}, "2024-01-01 10:00:00+00", utc("2024-01-01 10:00:00Z")},
		{Type{Kind: KindInterval}, "1 year 2 months 3 days 04:05:06.789", Interval{Months: 14, Days: 3, Micros: 14706789000}},
		{Type{Kind: KindInterval}, "-1 day -00:00:01", Interval{Days: -1, Micros: -1000000}},
		{Type{Kind: KindInterval}, "26:00:00", Interval{Micros: 26 * 3600 * 1000000}},
		{Type{Kind: KindInterval}, "-1 year -2 months", Interval{Months: -14}},
		{Type{Kind: KindBlob}, `\x5C\x00ab\x7F\xFF\x27`, []byte{0x5c, 0, 'a', 'b', 0x7f, 0xff, 0x27}},
		{Type{Kind: KindUUID}, "550e8400-e29b-41d4-a716-446655440000",
			[16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00}},
		{list(int32T), "[1, 2, NULL]", []any{int32(1), int32(2), nil}},
		{list(int32T), "[]", []any{}},
		{list(list(int32T)), "[[1, 2], [], NULL]", []any{[]any{int32(1), int32(2)}, []any{}, nil}},
		{list(varchar), `[a, b c, '', NULL, 'NULL', 'x,y', 'q\'s', 'br]', '{k}', ' lead', back\slash, 'dq"']`,
			[]any{"a", "b c", "", nil, "NULL", "x,y", "q's", "br]", "{k}", " lead", `back\slash`, `dq"`}},
		{list(Type{Kind: KindJSON}), `[{"a": [1]}, [2]]`, []any{`{"a": [1]}`, `[2]`}},
		{list(Type{Kind: KindTimestampTZ}), "['2024-01-01 10:00:00.5+00']", []any{utc("2024-01-01 10:00:00.5Z")}},
		{st, `{'a': x y, 'b': NULL, 'c': [1, 2], 'd': {'e': 'f:g'}}`, []any{"x y", nil, []any{int32(1), int32(2)}, []any{"f:g"}}},
		{mapT, `{'k=1'='v,2', k2=NULL}`, []MapEntry{{"k=1", "v,2"}, {"k2", nil}}},
		{mapT, `{}`, []MapEntry{}},
	}
	for _, tc := range tests {
		got, err := ParseDuckDBText(tc.typ, tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("ParseDuckDBText(%s, %q) = %#v, want an error", tc.typ, tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDuckDBText(%s, %q): %v", tc.typ, tc.in, err)
			continue
		}
		if !equalValue(got, tc.want) {
			t.Errorf("ParseDuckDBText(%s, %q) = %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}

	for _, bad := range []struct {
		typ Type
		in  string
	}{
		{Type{Kind: KindDate}, "infinity"},
		{Type{Kind: KindTimestamp}, "-infinity"},
		{Type{Kind: KindTimestamp}, "2024-01-01 10:00:00+02"},
		{Type{Kind: KindInt8}, "128"},
		{list(int32T), "[1, 2"},
		{list(int32T), "1, 2]"},
		{list(int32T), "[1] x"},
		{mapT, "{a}"},
		{st, "{'zz': 1}"},
		{Type{Kind: KindBlob}, `\x5`},
		{mustType(t, "decimal(4,1)"), "1.25"},
	} {
		if v, err := ParseDuckDBText(bad.typ, bad.in); err == nil {
			t.Errorf("ParseDuckDBText(%s, %q) = %#v, want an error", bad.typ, bad.in, v)
		}
	}
}

// equalValue compares decoded values, with big numbers by value.
func equalValue(a, b any) bool {
	switch x := a.(type) {
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case Decimal:
		y, ok := b.(Decimal)
		return ok && x.Scale == y.Scale && x.Unscaled.Cmp(y.Unscaled) == 0
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []MapEntry:
		y, ok := b.([]MapEntry)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i].Key, y[i].Key) || !equalValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestDecimalString(t *testing.T) {
	for _, tc := range []struct {
		d    Decimal
		want string
	}{
		{Decimal{big.NewInt(150), 2}, "1.50"},
		{Decimal{big.NewInt(-5), 3}, "-0.005"},
		{Decimal{big.NewInt(42), 0}, "42"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%#v = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// FuzzParseDuckDBText: the nested-value parser must never panic or hang on
// whatever text sits in an inlined VARCHAR column.
func FuzzParseDuckDBText(f *testing.F) {
	for _, s := range []string{
		"[1, 2, NULL]", `[a, 'b\'c', "d"]`, `{'a': [1, {'b': 2}], 'c': NULL}`, `{k=1, 'x'=[1]}`,
		`[{"a": [1]}]`, `[\'x]`, "[[[", "{'a': '}", `\`, "",
	} {
		f.Add(s)
	}
	int32T := Type{Kind: KindInt32}
	types := []Type{
		list(Type{Kind: KindVarchar}),
		list(list(int32T)),
		{Kind: KindStruct, Fields: []Field{{Name: "a", Type: list(int32T)}, {Name: "c", Type: Type{Kind: KindVarchar}}}},
		{Kind: KindMap, Fields: []Field{{Name: "key", Type: Type{Kind: KindVarchar}}, {Name: "value", Type: list(int32T)}}},
		{Kind: KindBlob},
		{Kind: KindInterval},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, ty := range types {
			ParseDuckDBText(ty, s) //nolint:errcheck // only panics matter
		}
	})
}
