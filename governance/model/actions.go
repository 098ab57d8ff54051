package model

import (
	"fmt"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// StandardAction is one of the column actions of the Iceberg
// read-restrictions proposal. A masking policy may name one instead of a
// SQL body: the catalog then returns it to Iceberg clients in LoadTable's
// read-restrictions, and DuckDB (views, exports) runs the SQL of Expr.
type StandardAction string

// The standard actions this catalog implements. sha-256-query-local needs
// a per-query salt only the reading engine can draw, so it is not offered.
const (
	ActionNone            StandardAction = ""
	ActionMaskAlphanum    StandardAction = "mask-alphanum"
	ActionShowFirst4      StandardAction = "show-first-4"
	ActionShowLast4       StandardAction = "show-last-4"
	ActionReplaceWithNull StandardAction = "replace-with-null"
	ActionFixedValue      StandardAction = "mask-to-fixed-value"
	ActionTruncateYear    StandardAction = "truncate-to-year"
	ActionTruncateMonth   StandardAction = "truncate-to-month"
	ActionSHA256Global    StandardAction = "sha-256-global"
)

// StandardActions lists the actions, in the proposal's order.
var StandardActions = []StandardAction{
	ActionMaskAlphanum, ActionFixedValue, ActionReplaceWithNull, ActionShowFirst4, ActionShowLast4,
	ActionTruncateYear, ActionTruncateMonth, ActionSHA256Global,
}

// ParseStandardAction reads an action name; ok is false for a name that is
// not one of StandardActions.
func ParseStandardAction(s string) (StandardAction, bool) {
	for _, a := range StandardActions {
		if string(a) == s {
			return a, true
		}
	}
	return "", false
}

// AppliesTo reports whether the proposal allows a on a column of type t
// (nullable for replace-with-null).
func (a StandardAction) AppliesTo(t ducklake.Type, nullable bool) bool {
	k := t.Kind
	switch a {
	case ActionMaskAlphanum, ActionShowFirst4, ActionShowLast4:
		return k == ducklake.KindVarchar
	case ActionReplaceWithNull:
		return nullable
	case ActionFixedValue:
		_, err := fixedValue(t)
		return err == nil
	case ActionTruncateYear, ActionTruncateMonth:
		switch k {
		case ducklake.KindDate, ducklake.KindTimestamp, ducklake.KindTimestampTZ, ducklake.KindTimestampNS:
			return true
		}
	case ActionSHA256Global:
		switch k {
		case ducklake.KindVarchar, ducklake.KindInt32, ducklake.KindInt64, ducklake.KindBlob:
			return true
		}
	}
	return false
}

// alphanumMask is mask-alphanum over a VARCHAR expression: every code point
// but the kept punctuation becomes 'x', then digits become 'n' (in that
// order, so a letter n is masked too).
func alphanumMask(v string) string {
	return "regexp_replace(regexp_replace(" + v + `, '[^0-9(),.@-]', 'x', 'g'), '[0-9]', 'n', 'g')`
}

// Expr is the DuckDB expression that applies a to col (an already quoted
// column reference or expression) of type t; the result has type t.
func (a StandardAction) Expr(col string, t ducklake.Type, nullable bool) (string, error) {
	if !a.AppliesTo(t, nullable) {
		return "", fmt.Errorf("%s cannot be applied to a %s column", a, t)
	}
	typ, err := SQLType(t)
	if err != nil {
		return "", err
	}
	switch a {
	case ActionMaskAlphanum:
		return alphanumMask(col), nil
	case ActionShowFirst4:
		return "CASE WHEN length(" + col + ") <= 4 THEN " + col + " ELSE left(" + col + ", 4) || " +
			alphanumMask("substr("+col+", 5)") + " END", nil
	case ActionShowLast4:
		return "CASE WHEN length(" + col + ") <= 4 THEN " + col + " ELSE " +
			alphanumMask("left("+col+", length("+col+") - 4)") + " || right(" + col + ", 4) END", nil
	case ActionReplaceWithNull:
		return "CAST(NULL AS " + typ + ")", nil
	case ActionFixedValue:
		v, _ := fixedValue(t)
		return "CAST(" + v + " AS " + typ + ")", nil
	case ActionTruncateYear, ActionTruncateMonth:
		unit := "'year'"
		if a == ActionTruncateMonth {
			unit = "'month'"
		}
		if t.Kind == ducklake.KindTimestampTZ {
			// In UTC, whatever the session's time zone.
			return "timezone('UTC', date_trunc(" + unit + ", timezone('UTC', " + col + ")))", nil
		}
		return "CAST(date_trunc(" + unit + ", " + col + ") AS " + typ + ")", nil
	case ActionSHA256Global:
		switch t.Kind {
		case ducklake.KindVarchar:
			return "sha256(" + col + ")", nil
		case ducklake.KindBlob:
			return "unhex(sha256(" + col + "))", nil
		case ducklake.KindInt32, ducklake.KindInt64:
			return shaInt(col, t.Kind == ducklake.KindInt64), nil
		}
	}
	return "", fmt.Errorf("%s is not implemented", a)
}

// shaInt is sha-256-global for int and long: the value's little-endian
// bytes hashed, and the digest's first 4 (8) bytes read back as a signed
// little-endian integer. Lambdas name the intermediate hex strings once
// instead of repeating them.
func shaInt(col string, long bool) string {
	n, mask, signed := 4, "4294967295", "INTEGER"
	wrap, half := "4294967296", "2147483648"
	if long {
		n, mask, signed = 8, "18446744073709551615", "BIGINT"
		wrap, half = "18446744073709551616", "9223372036854775808"
	}
	// The value's unsigned two's complement in hex, then its bytes in
	// little-endian order.
	hex := "lpad(to_hex(CAST(" + col + " AS HUGEINT) & " + mask + "), " + fmt.Sprint(2*n) + ", '0')"
	return "CASE WHEN " + col + " IS NULL THEN NULL ELSE list_transform([" + hex + "], lambda __dil_h: " +
		"list_transform([left(sha256(unhex(" + reverseHexBytes("__dil_h", n) + ")), " + fmt.Sprint(2*n) + ")], lambda __dil_d: " +
		"list_transform([CAST(CAST(('0x' || " + reverseHexBytes("__dil_d", n) + ") AS UBIGINT) AS HUGEINT)], lambda __dil_u: " +
		"CAST(CASE WHEN __dil_u >= " + half + " THEN __dil_u - " + wrap + " ELSE __dil_u END AS " + signed + "))[1])[1])[1] END"
}

// reverseHexBytes reverses the byte order of an n-byte hex string
// expression.
func reverseHexBytes(hex string, n int) string {
	s := ""
	for i := n - 1; i >= 0; i-- {
		if s != "" {
			s += " || "
		}
		s += fmt.Sprintf("substr(%s, %d, 2)", hex, 2*i+1)
	}
	return "(" + s + ")"
}

// fixedValue is mask-to-fixed-value's literal for type t.
func fixedValue(t ducklake.Type) (string, error) {
	switch t.Kind {
	case ducklake.KindBoolean:
		return "false", nil
	case ducklake.KindInt8, ducklake.KindInt16, ducklake.KindInt32, ducklake.KindInt64, ducklake.KindInt128,
		ducklake.KindUint8, ducklake.KindUint16, ducklake.KindUint32, ducklake.KindUint64, ducklake.KindUint128,
		ducklake.KindDecimal:
		return "0", nil
	case ducklake.KindFloat32, ducklake.KindFloat64:
		return "0.0", nil
	case ducklake.KindVarchar, ducklake.KindJSON:
		if t.Kind == ducklake.KindJSON {
			return `'{}'`, nil
		}
		return "'XXXXXXXX'", nil
	case ducklake.KindDate:
		return "DATE '1970-01-01'", nil
	case ducklake.KindTime, ducklake.KindTimeNS:
		return "TIME '00:00:00'", nil
	case ducklake.KindTimestamp, ducklake.KindTimestampS, ducklake.KindTimestampMS, ducklake.KindTimestampNS:
		return "TIMESTAMP '1970-01-01 00:00:00'", nil
	case ducklake.KindTimestampTZ:
		return "TIMESTAMPTZ '1970-01-01 00:00:00+00'", nil
	case ducklake.KindUUID:
		return "'00000000-0000-0000-0000-000000000000'", nil
	case ducklake.KindBlob:
		return "''", nil
	case ducklake.KindList:
		return "[]", nil
	case ducklake.KindMap:
		return "MAP {}", nil
	}
	return "", fmt.Errorf("mask-to-fixed-value has no value for %s", t)
}

// SQLType is the DuckDB name of a DuckLake type, exactly as DuckDB's typeof
// spells it (so a policy signature that DuckDB canonicalised compares
// equal): int32 is INTEGER, timestamptz TIMESTAMP WITH TIME ZONE.
func SQLType(t ducklake.Type) (string, error) {
	switch t.Kind {
	case ducklake.KindBoolean:
		return "BOOLEAN", nil
	case ducklake.KindInt8:
		return "TINYINT", nil
	case ducklake.KindInt16:
		return "SMALLINT", nil
	case ducklake.KindInt32:
		return "INTEGER", nil
	case ducklake.KindInt64:
		return "BIGINT", nil
	case ducklake.KindInt128:
		return "HUGEINT", nil
	case ducklake.KindUint8:
		return "UTINYINT", nil
	case ducklake.KindUint16:
		return "USMALLINT", nil
	case ducklake.KindUint32:
		return "UINTEGER", nil
	case ducklake.KindUint64:
		return "UBIGINT", nil
	case ducklake.KindUint128:
		return "UHUGEINT", nil
	case ducklake.KindFloat32:
		return "FLOAT", nil
	case ducklake.KindFloat64:
		return "DOUBLE", nil
	case ducklake.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case ducklake.KindTime:
		return "TIME", nil
	case ducklake.KindTimeNS:
		return "TIME_NS", nil
	case ducklake.KindTimeTZ:
		return "TIME WITH TIME ZONE", nil
	case ducklake.KindDate:
		return "DATE", nil
	case ducklake.KindTimestamp:
		return "TIMESTAMP", nil
	case ducklake.KindTimestampS:
		return "TIMESTAMP_S", nil
	case ducklake.KindTimestampMS:
		return "TIMESTAMP_MS", nil
	case ducklake.KindTimestampNS:
		return "TIMESTAMP_NS", nil
	case ducklake.KindTimestampTZ:
		return "TIMESTAMP WITH TIME ZONE", nil
	case ducklake.KindInterval:
		return "INTERVAL", nil
	case ducklake.KindVarchar:
		return "VARCHAR", nil
	case ducklake.KindBlob:
		return "BLOB", nil
	case ducklake.KindJSON:
		return "JSON", nil
	case ducklake.KindUUID:
		return "UUID", nil
	case ducklake.KindVariant:
		return "VARIANT", nil
	case ducklake.KindGeometry:
		return "GEOMETRY", nil
	case ducklake.KindList:
		if len(t.Fields) != 1 {
			return "", fmt.Errorf("list type without its element")
		}
		e, err := SQLType(t.Fields[0].Type)
		if err != nil {
			return "", err
		}
		return e + "[]", nil
	case ducklake.KindMap:
		if len(t.Fields) != 2 {
			return "", fmt.Errorf("map type without its key and value")
		}
		k, err := SQLType(t.Fields[0].Type)
		if err != nil {
			return "", err
		}
		v, err := SQLType(t.Fields[1].Type)
		if err != nil {
			return "", err
		}
		return "MAP(" + k + ", " + v + ")", nil
	case ducklake.KindStruct:
		s := "STRUCT("
		for i, f := range t.Fields {
			ft, err := SQLType(f.Type)
			if err != nil {
				return "", err
			}
			if i > 0 {
				s += ", "
			}
			s += structFieldName(f.Name) + " " + ft
		}
		return s + ")", nil
	}
	return "", fmt.Errorf("no DuckDB type for %s", t)
}

// structFieldName spells a struct member as DuckDB's typeof does: bare when
// it is a plain lower-case identifier, quoted otherwise.
func structFieldName(n string) string {
	plain := n != ""
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return n
	}
	q := `"`
	for i := 0; i < len(n); i++ {
		if n[i] == '"' {
			q += `""`
		} else {
			q += string(n[i])
		}
	}
	return q + `"`
}
