package iceberg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"
)

// Decimal is a decimal value: Unscaled × 10^-scale, the scale being the
// type's. Only the unscaled value is ever serialised.
type Decimal struct {
	Unscaled *big.Int
}

// ErrBadValue reports a Go value that does not fit the Iceberg type it is
// serialised as.
var ErrBadValue = errors.New("iceberg: value does not match type")

func badValue(t Type, v any) error {
	return fmt.Errorf("%w: %T for %s", ErrBadValue, v, t)
}

// PutValue hands v to put when it is a T, the Go value of the type being
// encoded (see the package documentation), and reports whether it was: for
// encoders that take each type's values through a method of their own.
func PutValue[T any](v any, put func(T)) bool {
	x, ok := v.(T)
	if ok {
		put(x)
	}
	return ok
}

// AppendBinary appends v in the binary single-value serialisation of
// Appendix D (used for lower and upper bounds and partition summaries).
func AppendBinary(dst []byte, t Type, v any) ([]byte, error) {
	switch t.ID {
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case TypeInt, TypeDate:
		if n, ok := v.(int32); ok {
			return binary.LittleEndian.AppendUint32(dst, uint32(n)), nil
		}
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
		if n, ok := v.(int64); ok {
			return binary.LittleEndian.AppendUint64(dst, uint64(n)), nil
		}
	case TypeFloat:
		if f, ok := v.(float32); ok {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
		}
	case TypeDouble:
		if f, ok := v.(float64); ok {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case TypeDecimal:
		if d, ok := v.(Decimal); ok && d.Unscaled != nil {
			return AppendMinBigEndian(dst, d.Unscaled), nil
		}
	case TypeString:
		if s, ok := v.(string); ok {
			return append(dst, s...), nil
		}
	case TypeUUID:
		if u, ok := v.([16]byte); ok {
			return append(dst, u[:]...), nil
		}
	case TypeFixed:
		if b, ok := v.([]byte); ok && len(b) == t.Length {
			return append(dst, b...), nil
		}
	case TypeBinary:
		if b, ok := v.([]byte); ok {
			return append(dst, b...), nil
		}
	default:
		return dst, fmt.Errorf("%w: %s has no single-value serialisation", ErrBadValue, t)
	}
	return dst, badValue(t, v)
}

// DecodeBinary reads a value written by AppendBinary.
func DecodeBinary(t Type, b []byte) (any, error) {
	want := -1
	switch t.ID {
	case TypeBoolean:
		want = 1
	case TypeInt, TypeDate, TypeFloat:
		want = 4
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS, TypeDouble:
		want = 8
	case TypeUUID:
		want = 16
	case TypeFixed:
		want = t.Length
	}
	if want >= 0 && len(b) != want {
		return nil, fmt.Errorf("%w: %d bytes for %s", ErrBadValue, len(b), t)
	}
	switch t.ID {
	case TypeBoolean:
		return b[0] != 0, nil
	case TypeInt, TypeDate:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
		return int64(binary.LittleEndian.Uint64(b)), nil
	case TypeFloat:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case TypeDecimal:
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: empty decimal", ErrBadValue)
		}
		return Decimal{Unscaled: FromBigEndian(b)}, nil
	case TypeString:
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("%w: string is not UTF-8", ErrBadValue)
		}
		return string(b), nil
	case TypeUUID:
		return [16]byte(b), nil
	case TypeFixed, TypeBinary:
		return append([]byte(nil), b...), nil
	}
	return nil, fmt.Errorf("%w: %s has no single-value serialisation", ErrBadValue, t)
}

// AppendMinBigEndian appends v as two's-complement big-endian in the fewest
// bytes that hold it (at least one), the form decimals take in bounds and
// in the bucket hash.
func AppendMinBigEndian(dst []byte, v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			dst = append(dst, 0) // room for the sign bit
		}
		return append(dst, b...)
	}
	// For negative v, two's complement in n bytes is 2^(8n) + v; n is the
	// smallest with -2^(8n-1) <= v.
	n := (new(big.Int).Not(v).BitLen())/8 + 1 // Not(v) = -v-1 >= 0
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, v)
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0}, b...)
	}
	return append(dst, b...)
}

// AppendFixedBigEndian appends v sign-extended to exactly size bytes (Avro's
// fixed decimal form); ok is false if v does not fit.
func AppendFixedBigEndian(dst []byte, v *big.Int, size int) ([]byte, bool) {
	min := AppendMinBigEndian(nil, v)
	if len(min) > size {
		return dst, false
	}
	pad := byte(0)
	if v.Sign() < 0 {
		pad = 0xff
	}
	for range size - len(min) {
		dst = append(dst, pad)
	}
	return append(dst, min...), true
}

// FromBigEndian reads a two's-complement big-endian integer.
func FromBigEndian(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// DecimalSize is the number of bytes Avro and Parquet use for a fixed
// decimal of precision p: the least n with 2^(8n-1) > 10^p - 1.
func DecimalSize(p int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	for n := 1; ; n++ {
		if new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) >= 0 {
			return n
		}
	}
}
