package iceberg

import (
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"
)

func dec(s string) Decimal {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return Decimal{Unscaled: v}
}

func micros(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

func nanos(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

var testUUID = [16]byte{0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7}

// Expected bytes follow Appendix D: little-endian fixed-width numbers,
// big-endian minimal two's-complement decimals, raw UTF-8 and bytes.
var binaryCases = []struct {
	name string
	t    Type
	v    any
	want string // hex
}{
	{"true", Primitive(TypeBoolean), true, "01"},
	{"false", Primitive(TypeBoolean), false, "00"},
	{"int 34", Primitive(TypeInt), int32(34), "22000000"},
	{"int -1", Primitive(TypeInt), int32(-1), "ffffffff"},
	{"long 34", Primitive(TypeLong), int64(34), "2200000000000000"},
	{"float -2.5", Primitive(TypeFloat), float32(-2.5), "000020c0"},
	{"double 1.0", Primitive(TypeDouble), float64(1), "000000000000f03f"},
	{"double -0.0", Primitive(TypeDouble), math.Copysign(0, -1), "0000000000000080"},
	{"date 2017-11-16", Primitive(TypeDate), int32(17486), "4e440000"},
	{"time 22:31:08", Primitive(TypeTime), int64(81068000000), "008307e012000000"},
	{"timestamp", Primitive(TypeTimestamp), micros("2017-11-16T22:31:08.000001Z"), "01c3262d215e0500"},
	{"timestamptz", Primitive(TypeTimestampTZ), micros("2017-11-16T14:31:08.000001-08:00"), "01c3262d215e0500"},
	{"timestamp_ns", Primitive(TypeTimestampNS), int64(1), "0100000000000000"},
	{"decimal 14.20", DecimalOf(9, 2), dec("1420"), "058c"},
	{"decimal 0", DecimalOf(9, 2), dec("0"), "00"},
	{"decimal 127", DecimalOf(9, 0), dec("127"), "7f"},
	{"decimal 128 needs a sign byte", DecimalOf(9, 0), dec("128"), "0080"},
	{"decimal -1", DecimalOf(9, 0), dec("-1"), "ff"},
	{"decimal -128", DecimalOf(9, 0), dec("-128"), "80"},
	{"decimal -129", DecimalOf(9, 0), dec("-129"), "ff7f"},
	{"decimal 2^64-1", DecimalOf(20, 0), dec("18446744073709551615"), "00ffffffffffffffff"},
	{"string", Primitive(TypeString), "iceberg", hex.EncodeToString([]byte("iceberg"))},
	{"string utf-8", Primitive(TypeString), "é", "c3a9"},
	{"uuid", Primitive(TypeUUID), testUUID, "f79c3e09677c4bbda4793f349cb785e7"},
	{"binary", Primitive(TypeBinary), []byte{0, 1, 2, 3}, "00010203"},
	{"fixed", FixedOf(2), []byte{0xff, 0}, "ff00"},
}

func TestAppendBinary(t *testing.T) {
	for _, c := range binaryCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := AppendBinary(nil, c.t, c.v)
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(got) != c.want {
				t.Errorf("got %x, want %s", got, c.want)
			}
			back, err := DecodeBinary(c.t, got)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := AppendBinary(nil, c.t, back)
			if hex.EncodeToString(again) != c.want {
				t.Errorf("round trip: %v encodes as %x", back, again)
			}
		})
	}
}

func TestAppendBinaryRejects(t *testing.T) {
	for _, c := range []struct {
		t Type
		v any
	}{
		{Primitive(TypeInt), int64(1)},
		{Primitive(TypeLong), int32(1)},
		{FixedOf(3), []byte{1}},
		{DecimalOf(9, 2), Decimal{}},
		{StructOf(), []any{}},
		{Primitive(TypeString), []byte("x")},
	} {
		if _, err := AppendBinary(nil, c.t, c.v); !errors.Is(err, ErrBadValue) {
			t.Errorf("AppendBinary(%s, %T) = %v, want ErrBadValue", c.t, c.v, err)
		}
	}
	if _, err := DecodeBinary(Primitive(TypeLong), []byte{1, 2}); !errors.Is(err, ErrBadValue) {
		t.Errorf("DecodeBinary of 2 bytes as long: %v", err)
	}
	if _, err := DecodeBinary(Primitive(TypeString), []byte{0xff}); !errors.Is(err, ErrBadValue) {
		t.Errorf("DecodeBinary of invalid UTF-8: %v", err)
	}
}

func TestDecimalSize(t *testing.T) {
	// Avro/Parquet's minimum bytes for a precision (the spec's table).
	for p, want := range map[int]int{1: 1, 2: 1, 3: 2, 4: 2, 9: 4, 10: 5, 18: 8, 19: 9, 20: 9, 38: 16} {
		if got := DecimalSize(p); got != want {
			t.Errorf("DecimalSize(%d) = %d, want %d", p, got, want)
		}
	}
}

func TestFixedBigEndian(t *testing.T) {
	for _, c := range []struct {
		v    string
		size int
		want string
		ok   bool
	}{
		{"1420", 4, "0000058c", true},
		{"-1", 4, "ffffffff", true},
		{"-129", 3, "ffff7f", true},
		{"65536", 2, "", false},
	} {
		got, ok := AppendFixedBigEndian(nil, dec(c.v).Unscaled, c.size)
		if ok != c.ok || (ok && hex.EncodeToString(got) != c.want) {
			t.Errorf("AppendFixedBigEndian(%s, %d) = %x, %v; want %s, %v", c.v, c.size, got, ok, c.want, c.ok)
		}
		if ok && FromBigEndian(got).String() != c.v {
			t.Errorf("FromBigEndian(%x) = %s", got, FromBigEndian(got))
		}
	}
}

func FuzzMinBigEndian(f *testing.F) {
	for _, s := range []int64{0, 1, -1, 127, 128, -128, -129, 1 << 40, math.MinInt64, math.MaxInt64} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		v := big.NewInt(n)
		b := AppendMinBigEndian(nil, v)
		if FromBigEndian(b).Cmp(v) != 0 {
			t.Fatalf("%d -> %x -> %s", n, b, FromBigEndian(b))
		}
		// Minimal: dropping the first byte must change the value.
		if len(b) > 1 && FromBigEndian(b[1:]).Cmp(v) == 0 {
			t.Fatalf("%d -> %x is not minimal", n, b)
		}
	})
}
