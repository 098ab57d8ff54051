package ducklake

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Inlined values are returned as Go values by column kind:
//
//	boolean                 bool
//	int8 … int64            int8, int16, int32, int64
//	uint8 … uint64          uint8, uint16, uint32, uint64
//	int128, uint128         *big.Int
//	float32, float64        float32, float64
//	decimal                 Decimal
//	date                    Date
//	time                    TimeOfDay
//	timetz                  TimeTZ
//	timestamp, _s, _ms, _ns time.Time in UTC (wall clock, no zone)
//	timestamptz             time.Time in UTC
//	interval                Interval
//	varchar, json           string
//	blob                    []byte
//	uuid                    [16]byte
//	list                    []any
//	struct                  []any, one value per field in field order
//	map                     []MapEntry
//
// SQL NULL is nil at every level.

// Date is a calendar date as days since 1970-01-01 (Iceberg's date).
type Date int32

// Time returns the date as midnight UTC.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func (d Date) String() string { return d.Time().Format(time.DateOnly) }

// TimeOfDay is a time of day in microseconds since midnight (Iceberg's time).
type TimeOfDay int64

// TimeTZ is a time of day with its UTC offset.
type TimeTZ struct {
	Micros        int64 // local time of day
	OffsetSeconds int32 // east of UTC
}

// Interval is DuckDB's interval: months, days and microseconds kept apart.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// Decimal is an exact decimal: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

func (d Decimal) String() string {
	if d.Unscaled == nil {
		return "<nil>"
	}
	s := new(big.Int).Abs(d.Unscaled).String()
	if d.Scale > 0 {
		if len(s) <= d.Scale {
			s = strings.Repeat("0", d.Scale-len(s)+1) + s
		}
		s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	}
	if d.Unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// MapEntry is one key/value pair of a map value.
type MapEntry struct {
	Key, Value any
}

// ErrInfinity reports a date or timestamp of ±infinity, which DuckDB allows
// and Parquet/Iceberg cannot represent.
var ErrInfinity = errors.New("infinite date or timestamp")

// ParseDuckDBText parses a value in DuckDB's text form (what a CAST to VARCHAR
// produces, nested values included) as type t. DuckDB stores inlined values of
// types Postgres lacks (uint64, int128, dates, timestamps, nested types) this
// way.
func ParseDuckDBText(t Type, s string) (any, error) {
	switch t.Kind {
	case KindBoolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "t", "1":
			return true, nil
		case "false", "f", "0":
			return false, nil
		}
		return nil, fmt.Errorf("boolean %q", s)
	case KindInt8:
		v, err := strconv.ParseInt(s, 10, 8)
		return int8(v), err
	case KindInt16:
		v, err := strconv.ParseInt(s, 10, 16)
		return int16(v), err
	case KindInt32:
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	case KindInt64:
		return strconv.ParseInt(s, 10, 64)
	case KindUint8:
		v, err := strconv.ParseUint(s, 10, 8)
		return uint8(v), err
	case KindUint16:
		v, err := strconv.ParseUint(s, 10, 16)
		return uint16(v), err
	case KindUint32:
		v, err := strconv.ParseUint(s, 10, 32)
		return uint32(v), err
	case KindUint64:
		return strconv.ParseUint(s, 10, 64)
	case KindInt128, KindUint128:
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("%s %q", t.Kind, s)
		}
		return v, nil
	case KindFloat32:
		v, err := parseFloat(s, 32)
		return float32(v), err
	case KindFloat64:
		return parseFloat(s, 64)
	case KindDecimal:
		return parseDecimal(s, t.Scale)
	case KindDate:
		return parseDate(s)
	case KindTime:
		us, err := parseClock(s)
		return TimeOfDay(us), err
	case KindTimeTZ:
		return parseTimeTZ(s)
	case KindTimestamp, KindTimestampS, KindTimestampMS, KindTimestampNS:
		return parseTimestamp(s, false)
	case KindTimestampTZ:
		return parseTimestamp(s, true)
	case KindInterval:
		return parseInterval(s)
	case KindVarchar, KindJSON:
		return s, nil
	case KindBlob:
		return parseBlob(s)
	case KindUUID:
		return parseUUID(s)
	case KindList:
		if len(t.Fields) != 1 {
			return nil, errors.New("list type without element")
		}
		elems, err := splitNested(s, '[', ']', 0)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			if out[i], err = parseNestedElem(t.Fields[0].Type, e.value); err != nil {
				return nil, fmt.Errorf("list element %d: %w", i, err)
			}
		}
		return out, nil
	case KindStruct:
		pairs, err := splitNested(s, '{', '}', ':')
		if err != nil {
			return nil, err
		}
		out := make([]any, len(t.Fields))
		for _, p := range pairs {
			i := fieldIndex(t.Fields, *p.key)
			if i < 0 {
				return nil, fmt.Errorf("struct has no field %q", *p.key)
			}
			if out[i], err = parseNestedElem(t.Fields[i].Type, p.value); err != nil {
				return nil, fmt.Errorf("struct field %s: %w", t.Fields[i].Name, err)
			}
		}
		return out, nil
	case KindMap:
		if len(t.Fields) != 2 {
			return nil, errors.New("map type without key and value")
		}
		pairs, err := splitNested(s, '{', '}', '=')
		if err != nil {
			return nil, err
		}
		out := make([]MapEntry, len(pairs))
		for i, p := range pairs {
			if p.key == nil {
				return nil, errors.New("map key is NULL")
			}
			if out[i].Key, err = ParseDuckDBText(t.Fields[0].Type, *p.key); err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			if out[i].Value, err = parseNestedElem(t.Fields[1].Type, p.value); err != nil {
				return nil, fmt.Errorf("map value: %w", err)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot parse %s from text", t.Kind)
}

func parseNestedElem(t Type, s *string) (any, error) {
	if s == nil {
		return nil, nil
	}
	return ParseDuckDBText(t, *s)
}

func fieldIndex(fs []Field, name string) int {
	for i, f := range fs {
		if f.Name == name {
			return i
		}
	}
	// DuckDB matches struct keys case-insensitively.
	for i, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func parseFloat(s string, bits int) (float64, error) {
	switch strings.ToLower(s) {
	case "nan", "-nan":
		return math.NaN(), nil
	case "inf", "infinity":
		return math.Inf(1), nil
	case "-inf", "-infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, bits)
}

func parseDecimal(s string, scale int) (Decimal, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(digits, ".")
	if len(frac) > scale {
		return Decimal{}, fmt.Errorf("decimal %q has more than %d fraction digits", s, scale)
	}
	frac += strings.Repeat("0", scale-len(frac))
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok || strings.ContainsAny(intPart+frac, "+-") {
		return Decimal{}, fmt.Errorf("decimal %q", s)
	}
	if neg {
		v.Neg(v)
	}
	return Decimal{Unscaled: v, Scale: scale}, nil
}

func isInfinity(s string) bool {
	switch strings.ToLower(s) {
	case "infinity", "-infinity", "inf", "-inf":
		return true
	}
	return false
}

func parseDate(s string) (Date, error) {
	if isInfinity(s) {
		return 0, fmt.Errorf("date %q: %w", s, ErrInfinity)
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, fmt.Errorf("date %q: %w", s, err)
	}
	return Date(t.Unix() / 86400), nil
}

// parseClock parses HH:MM:SS[.fraction] into microseconds; DuckDB's text
// form never carries more than six fraction digits for TIME.
func parseClock(s string) (int64, error) {
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("time %q", s)
	}
	var v [3]int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("time %q", s)
		}
		v[i] = n
	}
	us := ((v[0]*60+v[1])*60 + v[2]) * 1_000_000
	if frac != "" {
		if len(frac) > 6 {
			frac = frac[:6]
		}
		n, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("time %q", s)
		}
		us += n
	}
	return us, nil
}

// splitOffset splits a trailing UTC offset ("+02", "-05:30", "+05:30:15")
// off a time or timestamp; ok is false when there is none.
func splitOffset(s string) (rest string, seconds int32, ok bool, err error) {
	i := strings.LastIndexAny(s, "+-")
	// A date's own dashes come before the time; only an offset follows a ':'-bearing clock.
	if i <= 0 || !strings.Contains(s[:i], ":") {
		return s, 0, false, nil
	}
	sign := int32(1)
	if s[i] == '-' {
		sign = -1
	}
	parts := strings.Split(s[i+1:], ":")
	var total int32
	mult := []int32{3600, 60, 1}
	if len(parts) > 3 {
		return "", 0, false, fmt.Errorf("offset in %q", s)
	}
	for j, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", 0, false, fmt.Errorf("offset in %q", s)
		}
		total += int32(n) * mult[j]
	}
	return s[:i], sign * total, true, nil
}

func parseTimeTZ(s string) (TimeTZ, error) {
	clock, off, _, err := splitOffset(s)
	if err != nil {
		return TimeTZ{}, err
	}
	us, err := parseClock(clock)
	return TimeTZ{Micros: us, OffsetSeconds: off}, err
}

// parseTimestamp parses "YYYY-MM-DD HH:MM:SS[.fraction][±offset]" (up to
// nanoseconds) into UTC.
func parseTimestamp(s string, withZone bool) (time.Time, error) {
	if isInfinity(s) {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, ErrInfinity)
	}
	rest, off, hasOff, err := splitOffset(s)
	if err != nil {
		return time.Time{}, err
	}
	if hasOff && !withZone {
		return time.Time{}, fmt.Errorf("timestamp %q has a UTC offset", s)
	}
	layout := "2006-01-02 15:04:05.999999999"
	if !strings.Contains(rest, " ") {
		layout = time.DateOnly
	}
	t, err := time.Parse(layout, rest)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, err)
	}
	return t.Add(-time.Duration(off) * time.Second).UTC(), nil
}

// parseInterval parses DuckDB's interval text: "1 year 2 months 3 days
// 04:05:06.789", each part optional and signed.
func parseInterval(s string) (Interval, error) {
	var iv Interval
	fields := strings.Fields(s)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			neg := strings.HasPrefix(f, "-")
			us, err := parseClock(strings.TrimLeft(f, "+-"))
			if err != nil {
				return iv, fmt.Errorf("interval %q: %w", s, err)
			}
			if neg {
				us = -us
			}
			iv.Micros += us
			continue
		}
		if i+1 >= len(fields) {
			return iv, fmt.Errorf("interval %q", s)
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return iv, fmt.Errorf("interval %q", s)
		}
		i++
		switch strings.TrimSuffix(fields[i], "s") {
		case "year":
			iv.Months += int32(n) * 12
		case "month", "mon":
			iv.Months += int32(n)
		case "day":
			iv.Days += int32(n)
		default:
			return iv, fmt.Errorf("interval %q: unit %q", s, fields[i])
		}
	}
	return iv, nil
}

// parseBlob decodes DuckDB's blob text: printable ASCII as is, every other
// byte (and backslash and quote) as \xHH.
func parseBlob(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+3 >= len(s) || (s[i+1] != 'x' && s[i+1] != 'X') {
			return nil, fmt.Errorf("blob escape at %d in %q", i, s)
		}
		var b [1]byte
		if _, err := hex.Decode(b[:], []byte(s[i+2:i+4])); err != nil {
			return nil, fmt.Errorf("blob escape at %d in %q", i, s)
		}
		out = append(out, b[0])
		i += 3
	}
	return out, nil
}

func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	h := strings.ReplaceAll(strings.Trim(s, "{}"), "-", "")
	if len(h) != 32 {
		return u, fmt.Errorf("uuid %q", s)
	}
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("uuid %q", s)
	}
	return u, nil
}

// nestedPart is one element of a split nested value: for lists only value is
// set; for structs and maps key too. A nil pointer is SQL NULL.
type nestedPart struct {
	key, value *string
}

// splitNested splits DuckDB's text form of a list ("[a, 'b c', NULL]"), struct
// ("{'k': v, …}", kv ':') or map ("{k=v, …}", kv '=') into its top-level
// elements, unquoted, leaving nested elements as text for the next level.
// It follows DuckDB's own cast from VARCHAR (vector_cast_helpers.cpp):
// quotes are ' or ", a backslash escapes the next character, brackets nest.
func splitNested(s string, open, close, kv byte) ([]nestedPart, error) {
	p := &nestedScanner{s: s}
	p.skipSpace()
	if p.pos == len(s) || s[p.pos] != open {
		return nil, fmt.Errorf("nested value %q does not start with %q", s, open)
	}
	p.pos++
	p.skipSpace()
	var out []nestedPart
	if p.pos < len(s) && s[p.pos] == close {
		p.pos++
		p.skipSpace()
		if p.pos != len(s) {
			return nil, fmt.Errorf("trailing text after %q", s)
		}
		return out, nil
	}
	for {
		var part nestedPart
		if kv != 0 {
			start, stop, err := p.element(kv, kv)
			if err != nil {
				return nil, err
			}
			if p.pos == len(s) || start < 0 {
				return nil, fmt.Errorf("nested value %q: missing key", s)
			}
			part.key = p.unquote(start, stop)
			p.pos++ // the separator
			p.skipSpace()
		}
		start, stop, err := p.element(',', close)
		if err != nil {
			return nil, err
		}
		if p.pos == len(s) {
			return nil, fmt.Errorf("nested value %q is not closed", s)
		}
		if start < 0 {
			empty := ""
			part.value = &empty
		} else {
			part.value = p.unquote(start, stop)
		}
		out = append(out, part)
		if s[p.pos] == close {
			break
		}
		p.pos++
		p.skipSpace()
	}
	p.pos++
	p.skipSpace()
	if p.pos != len(s) {
		return nil, fmt.Errorf("trailing text in %q", s)
	}
	return out, nil
}

type nestedScanner struct {
	s       string
	pos     int
	escaped bool
}

func (p *nestedScanner) skipSpace() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
		p.escaped = false
	}
}

// element advances to the next unescaped, unquoted, unnested stop1 or stop2
// and returns the span [start, stop) of non-space text before it (start -1:
// nothing there).
func (p *nestedScanner) element(stop1, stop2 byte) (start, stop int, err error) {
	start = -1
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if !p.escaped && (c == stop1 || c == stop2) {
			break
		}
		setEscaped := false
		switch {
		case p.escaped:
			// an escaped character is plain text
		case c == '\'' || c == '"':
			if start < 0 {
				start = p.pos
			}
			if !p.skipQuoted() {
				return 0, 0, fmt.Errorf("unterminated quote in %q", p.s)
			}
		case c == '[' || c == '{' || c == '(':
			if start < 0 {
				start = p.pos
			}
			if !p.skipBrackets() {
				return 0, 0, fmt.Errorf("unbalanced brackets in %q", p.s)
			}
		case c == '\\':
			setEscaped = true
		}
		if !unicode.IsSpace(rune(c)) || p.escaped {
			if start < 0 {
				start = p.pos
			}
			stop = p.pos + 1
		}
		p.escaped = setEscaped
		p.pos++
	}
	return start, stop, nil
}

// skipQuoted moves pos onto the quote closing the one at pos.
func (p *nestedScanner) skipQuoted() bool {
	q := p.s[p.pos]
	escaped := false
	for p.pos++; p.pos < len(p.s); p.pos++ {
		c := p.s[p.pos]
		if c == q && !escaped {
			return true
		}
		escaped = c == '\\' && !escaped
	}
	return false
}

// skipBrackets moves pos onto the bracket closing the one at pos, skipping
// quoted text.
func (p *nestedScanner) skipBrackets() bool {
	var stack []byte
	escaped := false
	for ; p.pos < len(p.s); p.pos++ {
		c := p.s[p.pos]
		setEscaped := false
		switch {
		case (c == '"' || c == '\'') && !escaped:
			if !p.skipQuoted() {
				return false
			}
		case c == '{':
			stack = append(stack, '}')
		case c == '[':
			stack = append(stack, ']')
		case c == '(':
			stack = append(stack, ')')
		case len(stack) > 0 && c == stack[len(stack)-1]:
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return true
			}
		case c == '\\':
			setEscaped = true
		}
		escaped = setEscaped
	}
	return false
}

// unquote returns the text of span [start, stop): nil for an unquoted NULL,
// else with top-level quotes removed and escapes resolved; text inside
// brackets stays as is for the next level's split.
func (p *nestedScanner) unquote(start, stop int) *string {
	raw := p.s[start:stop]
	if strings.EqualFold(raw, "null") {
		return nil
	}
	var b strings.Builder
	b.Grow(len(raw))
	var (
		escaped, quoted bool
		quote           byte
		scopes          []byte
	)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if escaped {
			b.WriteByte(c)
			escaped = false
			continue
		}
		if len(scopes) == 0 {
			if c == '\\' && (quoted || (i+1 < len(raw) && (raw[i+1] == '\'' || raw[i+1] == '"'))) {
				escaped = true
				continue
			}
			if c == '\'' || c == '"' {
				if quoted && c == quote {
					quoted = false
					continue
				}
				if !quoted {
					quoted, quote = true, c
					continue
				}
			}
		}
		if !quoted {
			if len(scopes) > 0 && c == scopes[len(scopes)-1] {
				scopes = scopes[:len(scopes)-1]
			} else if c == '[' {
				scopes = append(scopes, ']')
			} else if c == '{' {
				scopes = append(scopes, '}')
			} else if c == '(' {
				scopes = append(scopes, ')')
			}
		}
		b.WriteByte(c)
	}
	s := b.String()
	return &s
}
