package iceberg

import (
	"errors"
	"testing"
)

// TestHashSpecValues checks Appendix B's test values.
func TestHashSpecValues(t *testing.T) {
	for _, c := range []struct {
		name string
		t    Type
		v    any
		want int32
	}{
		{"int 34", Primitive(TypeInt), int32(34), 2017239379},
		{"long 34", Primitive(TypeLong), int64(34), 2017239379},
		{"decimal 14.20", DecimalOf(9, 2), dec("1420"), -500754589},
		{"date 2017-11-16", Primitive(TypeDate), int32(17486), -653330422},
		{"time 22:31:08", Primitive(TypeTime), int64(81068000000), -662762989},
		{"timestamp", Primitive(TypeTimestamp), micros("2017-11-16T22:31:08Z"), -2047944441},
		{"timestamp +1µs", Primitive(TypeTimestamp), micros("2017-11-16T22:31:08.000001Z"), -1207196810},
		{"timestamptz", Primitive(TypeTimestampTZ), micros("2017-11-16T14:31:08-08:00"), -2047944441},
		{"timestamptz +1µs", Primitive(TypeTimestampTZ), micros("2017-11-16T14:31:08.000001-08:00"), -1207196810},
		{"timestamp_ns", Primitive(TypeTimestampNS), nanos("2017-11-16T22:31:08Z"), -2047944441},
		{"timestamp_ns +1001ns", Primitive(TypeTimestampNS), nanos("2017-11-16T22:31:08.000001001Z"), -1207196810},
		{"timestamptz_ns", Primitive(TypeTimestampTZNS), nanos("2017-11-16T14:31:08.000001001-08:00"), -1207196810},
		{"string", Primitive(TypeString), "iceberg", 1210000089},
		{"uuid", Primitive(TypeUUID), testUUID, 1488055340},
		{"fixed", FixedOf(4), []byte{0, 1, 2, 3}, -188683207},
		{"binary", Primitive(TypeBinary), []byte{0, 1, 2, 3}, -188683207},
		{"boolean", Primitive(TypeBoolean), true, 1392991556},
		{"float 1.0", Primitive(TypeFloat), float32(1), -142385009},
		{"float 0.0", Primitive(TypeFloat), float32(0), 1669671676},
		{"float -0.0", Primitive(TypeFloat), float32(negZero()), 1669671676},
		{"double 1.0", Primitive(TypeDouble), float64(1), -142385009},
		{"double -0.0", Primitive(TypeDouble), negZero(), 1669671676},
	} {
		got, ok := Hash(c.t, c.v)
		if !ok || got != c.want {
			t.Errorf("%s: Hash = %d, %v; want %d", c.name, got, ok, c.want)
		}
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestMurmur3Tails(t *testing.T) {
	// Reference values of MurmurHash3_x86_32 with seed 0 (SMHasher).
	for in, want := range map[string]uint32{
		"":                0,
		"a":               0x3c2569b2,
		"ab":              0x9bbfd75f,
		"abc":             0xb3dd93fa,
		"abcd":            0x43ed676a,
		"Hello, world!":   0xc0363e43,
		"The quick brown": 0x1e55c907, // values from Python mmh3
	} {
		if got := murmur3([]byte(in)); got != want {
			t.Errorf("murmur3(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestTransforms(t *testing.T) {
	ts := Primitive(TypeTimestamp)
	for _, c := range []struct {
		name string
		tr   Transform
		src  Type
		v    any
		want any
	}{
		{"year of 2024-03-05", Year, ts, micros("2024-03-05T10:00:00Z"), int32(54)},
		{"year of 1969-12-31", Year, ts, micros("1969-12-31T23:59:59.999999Z"), int32(-1)},
		{"year of a date", Year, Primitive(TypeDate), int32(17486), int32(47)},
		{"month of 2024-03-05", Month, ts, micros("2024-03-05T10:00:00Z"), int32(54*12 + 2)},
		{"month of 1969-12", Month, ts, micros("1969-12-15T00:00:00Z"), int32(-1)},
		{"day of 2017-11-16", Day, ts, micros("2017-11-16T22:31:08Z"), int32(17486)},
		{"day before the epoch", Day, ts, int64(-1), int32(-1)},
		{"day of timestamptz", Day, Primitive(TypeTimestampTZ), micros("2017-11-16T23:31:08-08:00"), int32(17487)},
		{"hour of 1970-01-01T01:00", Hour, ts, micros("1970-01-01T01:00:00Z"), int32(1)},
		{"hour before the epoch", Hour, ts, int64(-1), int32(-1)},
		{"hour of ns", Hour, Primitive(TypeTimestampNS), nanos("2017-11-16T22:31:08.5Z"), int32(17486*24 + 22)},
		{"bucket[16] of 34", Bucket(16), Primitive(TypeInt), int32(34), int32(2017239379 % 16)},
		{"bucket[100] of iceberg", Bucket(100), Primitive(TypeString), "iceberg", int32(1210000089 % 100)},
		{"bucket[4] of uuid", Bucket(4), Primitive(TypeUUID), testUUID, int32(1488055340 % 4)},
		// -653330422 & MaxInt32 = 1494153226
		{"bucket[10] of date", Bucket(10), Primitive(TypeDate), int32(17486), int32(1494153226 % 10)},
		{"truncate[10] of 1", Truncate(10), Primitive(TypeInt), int32(1), int32(0)},
		{"truncate[10] of -1", Truncate(10), Primitive(TypeInt), int32(-1), int32(-10)},
		{"truncate[10] of -1L", Truncate(10), Primitive(TypeLong), int64(-1), int64(-10)},
		{"truncate[50] of 10.65", Truncate(50), DecimalOf(9, 2), dec("1065"), dec("1050")},
		{"truncate[3] of iceberg", Truncate(3), Primitive(TypeString), "iceberg", "ice"},
		{"truncate[2] of runes", Truncate(2), Primitive(TypeString), "éèx", "éè"},
		{"truncate[3] of bytes", Truncate(3), Primitive(TypeBinary), []byte{1, 2, 3, 4, 5}, []byte{1, 2, 3}},
		{"identity", Identity, Primitive(TypeString), "x", "x"},
		{"void", Void, Primitive(TypeString), "x", nil},
		{"null stays null", Year, ts, nil, nil},
	} {
		got, err := c.tr.Apply(c.src, c.v)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: got %v, want nil", c.name, got)
			}
			continue
		}
		rt, _ := c.tr.ResultType(c.src)
		g, _ := AppendBinary(nil, rt, got)
		w, err := AppendBinary(nil, rt, c.want)
		if err != nil || string(g) != string(w) {
			t.Errorf("%s: got %v (%T), want %v", c.name, got, got, c.want)
		}
	}
}

func TestTransformStrings(t *testing.T) {
	for _, s := range []string{"identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void"} {
		tr, err := ParseTransform(s)
		if err != nil || tr.String() != s {
			t.Errorf("ParseTransform(%q) = %v, %v", s, tr, err)
		}
	}
	for _, s := range []string{"", "bucket", "bucket[0]", "bucket[-1]", "truncate[x]", "years"} {
		if _, err := ParseTransform(s); !errors.Is(err, ErrBadTransform) {
			t.Errorf("ParseTransform(%q) = %v, want ErrBadTransform", s, err)
		}
	}
}

func TestTransformResultTypes(t *testing.T) {
	for _, c := range []struct {
		tr   Transform
		src  Type
		want string // "" = refused
	}{
		{Year, Primitive(TypeTimestampTZ), "int"},
		{Day, Primitive(TypeDate), "date"},
		{Hour, Primitive(TypeDate), ""},
		{Bucket(4), Primitive(TypeDouble), ""},
		{Bucket(4), DecimalOf(10, 2), "int"},
		{Truncate(4), Primitive(TypeUUID), ""},
		{Identity, ListOf(2, true, Primitive(TypeInt)), ""},
		{Identity, DecimalOf(10, 2), "decimal(10,2)"},
	} {
		rt, err := c.tr.ResultType(c.src)
		got := rt.String()
		if err != nil {
			got = ""
		}
		if got != c.want {
			t.Errorf("%s of %s: %q, %v; want %q", c.tr, c.src, got, err, c.want)
		}
	}
}
