package iceberg

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TransformKind names a partition transform.
type TransformKind uint8

// The partition transforms of the spec.
const (
	TransformIdentity TransformKind = iota + 1
	TransformBucket                 // Param: number of buckets
	TransformTruncate               // Param: width
	TransformYear
	TransformMonth
	TransformDay
	TransformHour
	TransformVoid
)

// Transform is a partition transform with its parameter.
type Transform struct {
	Kind  TransformKind
	Param int // bucket count or truncate width
}

// Convenience values for the transforms without a parameter.
var (
	Identity = Transform{Kind: TransformIdentity}
	Year     = Transform{Kind: TransformYear}
	Month    = Transform{Kind: TransformMonth}
	Day      = Transform{Kind: TransformDay}
	Hour     = Transform{Kind: TransformHour}
	Void     = Transform{Kind: TransformVoid}
)

// Bucket returns bucket[n].
func Bucket(n int) Transform { return Transform{Kind: TransformBucket, Param: n} }

// Truncate returns truncate[w].
func Truncate(w int) Transform { return Transform{Kind: TransformTruncate, Param: w} }

// String returns the JSON form: "identity", "bucket[16]", "truncate[4]", ….
func (tr Transform) String() string {
	switch tr.Kind {
	case TransformIdentity:
		return "identity"
	case TransformBucket:
		return "bucket[" + strconv.Itoa(tr.Param) + "]"
	case TransformTruncate:
		return "truncate[" + strconv.Itoa(tr.Param) + "]"
	case TransformYear:
		return "year"
	case TransformMonth:
		return "month"
	case TransformDay:
		return "day"
	case TransformHour:
		return "hour"
	case TransformVoid:
		return "void"
	}
	return "Transform(" + strconv.Itoa(int(tr.Kind)) + ")"
}

// ErrBadTransform reports an unknown transform or one that does not apply
// to its source type.
var ErrBadTransform = errors.New("iceberg: bad transform")

// ParseTransform reads the JSON form of a transform.
func ParseTransform(s string) (Transform, error) {
	switch s {
	case "identity":
		return Identity, nil
	case "year":
		return Year, nil
	case "month":
		return Month, nil
	case "day":
		return Day, nil
	case "hour":
		return Hour, nil
	case "void":
		return Void, nil
	}
	for _, k := range []TransformKind{TransformBucket, TransformTruncate} {
		prefix := "bucket["
		if k == TransformTruncate {
			prefix = "truncate["
		}
		if arg, ok := strings.CutPrefix(s, prefix); ok {
			if arg, ok = strings.CutSuffix(arg, "]"); ok {
				if n, err := strconv.Atoi(arg); err == nil && n > 0 {
					return Transform{Kind: k, Param: n}, nil
				}
			}
		}
	}
	return Transform{}, fmt.Errorf("%w: %q", ErrBadTransform, s)
}

// MarshalText writes the JSON form.
func (tr Transform) MarshalText() ([]byte, error) {
	if tr.Kind < TransformIdentity || tr.Kind > TransformVoid {
		return nil, fmt.Errorf("%w: kind %d", ErrBadTransform, tr.Kind)
	}
	return []byte(tr.String()), nil
}

// UnmarshalText reads the JSON form.
func (tr *Transform) UnmarshalText(b []byte) error {
	t, err := ParseTransform(string(b))
	*tr = t
	return err
}

// ResultType is the type of the transform's output for a source of type
// src, or an error if the transform does not accept src.
func (tr Transform) ResultType(src Type) (Type, error) {
	ok := false
	var res Type
	switch tr.Kind {
	case TransformIdentity:
		ok, res = src.IsPrimitive(), src
	case TransformVoid:
		ok, res = true, src
	case TransformBucket:
		switch src.ID {
		case TypeInt, TypeLong, TypeDecimal, TypeDate, TypeTime, TypeTimestamp, TypeTimestampTZ,
			TypeTimestampNS, TypeTimestampTZNS, TypeString, TypeUUID, TypeFixed, TypeBinary:
			ok = tr.Param > 0
		}
		res = Primitive(TypeInt)
	case TransformTruncate:
		switch src.ID {
		case TypeInt, TypeLong, TypeDecimal, TypeString, TypeBinary:
			ok = tr.Param > 0
		}
		res = src
	case TransformYear, TransformMonth, TransformDay:
		switch src.ID {
		case TypeDate, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
			ok = true
		}
		res = Primitive(TypeInt)
		if tr.Kind == TransformDay {
			res = Primitive(TypeDate)
		}
	case TransformHour:
		switch src.ID {
		case TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
			ok = true
		}
		res = Primitive(TypeInt)
	}
	if !ok {
		return Type{}, fmt.Errorf("%w: %s of %s", ErrBadTransform, tr, src)
	}
	return res, nil
}

// Apply transforms value v of type src; nil stays nil.
func (tr Transform) Apply(src Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if _, err := tr.ResultType(src); err != nil {
		return nil, err
	}
	switch tr.Kind {
	case TransformIdentity:
		return v, nil
	case TransformVoid:
		return nil, nil
	case TransformBucket:
		h, ok := Hash(src, v)
		if !ok {
			return nil, badValue(src, v)
		}
		return int32((h & 0x7fffffff) % int32(tr.Param)), nil
	case TransformTruncate:
		return truncateValue(src, v, tr.Param)
	}
	// Temporal transforms: reduce the value to days and the time of day.
	var days, micros int64
	switch src.ID {
	case TypeDate:
		d, ok := v.(int32)
		if !ok {
			return nil, badValue(src, v)
		}
		days = int64(d)
	default:
		n, ok := v.(int64)
		if !ok {
			return nil, badValue(src, v)
		}
		if src.ID == TypeTimestampNS || src.ID == TypeTimestampTZNS {
			n = floorDiv(n, 1000)
		}
		days, micros = floorDiv(n, 86_400_000_000), n-floorDiv(n, 86_400_000_000)*86_400_000_000
	}
	switch tr.Kind {
	case TransformDay:
		return int32(days), nil
	case TransformHour:
		return int32(days*24 + micros/3_600_000_000), nil
	}
	y, m, _ := time.Unix(days*86400, 0).UTC().Date()
	if tr.Kind == TransformYear {
		return int32(y - 1970), nil
	}
	return int32((y-1970)*12 + int(m) - 1), nil
}

func truncateValue(src Type, v any, w int) (any, error) {
	switch src.ID {
	case TypeInt:
		if n, ok := v.(int32); ok {
			return n - (((n % int32(w)) + int32(w)) % int32(w)), nil
		}
	case TypeLong:
		if n, ok := v.(int64); ok {
			return n - (((n % int64(w)) + int64(w)) % int64(w)), nil
		}
	case TypeDecimal:
		if d, ok := v.(Decimal); ok && d.Unscaled != nil {
			bw := big.NewInt(int64(w))
			r := new(big.Int).Mod(d.Unscaled, bw) // Euclidean: never negative
			return Decimal{Unscaled: new(big.Int).Sub(d.Unscaled, r)}, nil
		}
	case TypeString:
		if s, ok := v.(string); ok {
			if utf8.RuneCountInString(s) <= w {
				return s, nil
			}
			i, n := 0, 0
			for n < w {
				_, size := utf8.DecodeRuneInString(s[i:])
				i += size
				n++
			}
			return s[:i], nil
		}
	case TypeBinary:
		if b, ok := v.([]byte); ok {
			if len(b) > w {
				b = b[:w]
			}
			return b, nil
		}
	}
	return nil, badValue(src, v)
}
