package commit

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// textMode says what a value's text is for: DuckDB writes booleans in
// column statistics as 0/1 and in partition values as true/false, and
// blobs in statistics as hex.
type textMode uint8

const (
	forStats textMode = iota
	forPartition
)

// duckText renders an Iceberg value (the Go value of the Iceberg type the
// DuckLake column t is read as) in DuckDB's text form, as DuckDB stores
// min/max statistics and partition values. ok is false for values with no
// faithful text (NaN, infinities, dates outside 1..9999, and column kinds
// whose Iceberg form loses precision): callers leave those unknown.
func duckText(t ducklake.Type, v any, mode textMode) (string, bool) {
	switch t.Kind {
	case ducklake.KindBoolean:
		b, ok := v.(bool)
		if !ok {
			return "", false
		}
		if mode == forStats {
			if b {
				return "1", true
			}
			return "0", true
		}
		return strconv.FormatBool(b), true
	case ducklake.KindInt8, ducklake.KindInt16, ducklake.KindInt32, ducklake.KindInt64,
		ducklake.KindUint8, ducklake.KindUint16, ducklake.KindUint32:
		switch n := v.(type) {
		case int32:
			return strconv.FormatInt(int64(n), 10), true
		case int64:
			return strconv.FormatInt(n, 10), true
		}
	case ducklake.KindFloat32, ducklake.KindFloat64:
		var f float64
		bits := 64
		switch x := v.(type) {
		case float32:
			f, bits = float64(x), 32
		case float64:
			f = x
		default:
			return "", false
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", false
		}
		return strconv.FormatFloat(f, 'g', -1, bits), true
	case ducklake.KindDecimal:
		if d, ok := v.(iceberg.Decimal); ok && d.Unscaled != nil {
			return ducklake.Decimal{Unscaled: d.Unscaled, Scale: t.Scale}.String(), true
		}
	case ducklake.KindDate:
		if d, ok := v.(int32); ok {
			tm := ducklake.Date(d).Time()
			if tm.Year() < 1 || tm.Year() > 9999 {
				return "", false
			}
			return tm.Format(time.DateOnly), true
		}
	case ducklake.KindTime:
		if us, ok := v.(int64); ok && us >= 0 && us < 86_400_000_000 {
			return clockText(us), true
		}
	case ducklake.KindTimestamp, ducklake.KindTimestampTZ:
		us, ok := v.(int64)
		if !ok {
			return "", false
		}
		tm := time.UnixMicro(us).UTC()
		if tm.Year() < 1 || tm.Year() > 9999 {
			return "", false
		}
		s := tm.Format(time.DateOnly) + " " + clockText(int64(tm.Hour())*3_600_000_000+int64(tm.Minute())*60_000_000+
			int64(tm.Second())*1_000_000+int64(tm.Nanosecond()/1000))
		if t.Kind == ducklake.KindTimestampTZ {
			s += "+00"
		}
		return s, true
	case ducklake.KindVarchar, ducklake.KindJSON:
		if s, ok := v.(string); ok {
			return s, true
		}
	case ducklake.KindBlob:
		if b, ok := v.([]byte); ok && mode == forStats {
			return strings.ToUpper(hex.EncodeToString(b)), true
		}
	case ducklake.KindUUID:
		if u, ok := v.([16]byte); ok {
			h := hex.EncodeToString(u[:])
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
		}
	}
	return "", false
}

// clockText renders microseconds since midnight as DuckDB does:
// HH:MM:SS with the fraction's trailing zeros dropped.
func clockText(us int64) string {
	s := fmt.Sprintf("%02d:%02d:%02d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
	if frac := us % 1_000_000; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return s
}
