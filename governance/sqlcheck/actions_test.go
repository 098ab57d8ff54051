package sqlcheck

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/model"
)

// TestStandardActions runs every standard action's DuckDB expression on
// the proposal's examples (and NULL), in real DuckDB.
func TestStandardActions(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	vc := ducklake.Type{Kind: ducklake.KindVarchar}
	i32 := ducklake.Type{Kind: ducklake.KindInt32}
	i64 := ducklake.Type{Kind: ducklake.KindInt64}
	date := ducklake.Type{Kind: ducklake.KindDate}
	ts := ducklake.Type{Kind: ducklake.KindTimestamp}
	tstz := ducklake.Type{Kind: ducklake.KindTimestampTZ}
	dec := ducklake.Type{Kind: ducklake.KindDecimal, Precision: 10, Scale: 2}

	shaInt := func(v int64, long bool) string {
		n := 4
		if long {
			n = 8
		}
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(v))
		sum := sha256.Sum256(b[:n])
		if long {
			return fmt.Sprint(int64(binary.LittleEndian.Uint64(sum[:8])))
		}
		return fmt.Sprint(int32(binary.LittleEndian.Uint32(sum[:4])))
	}
	shaStr := sha256.Sum256([]byte("abc"))

	tests := []struct {
		action model.StandardAction
		typ    ducklake.Type
		in     string // a DuckDB literal
		want   string // the result cast to VARCHAR; "<nil>" for NULL
	}{
		{model.ActionMaskAlphanum, vc, "'prashant010696@gmail.com'", "xxxxxxxxnnnnnn@xxxxx.xxx"},
		{model.ActionMaskAlphanum, vc, "'Ünïcode 42 (x), y.z-@'", "xxxxxxxxnnx(x),xx.x-@"},
		{model.ActionMaskAlphanum, vc, "NULL", "<nil>"},
		{model.ActionShowFirst4, vc, "'prashant010696@gmail.com'", "prasxxxxnnnnnn@xxxxx.xxx"},
		{model.ActionShowFirst4, vc, "'abcd'", "abcd"},
		{model.ActionShowLast4, vc, "'4111-1111-1111-4444'", "nnnn-nnnn-nnnn-4444"},
		{model.ActionShowLast4, vc, "'ab'", "ab"},
		{model.ActionShowLast4, vc, "NULL", "<nil>"},
		{model.ActionReplaceWithNull, vc, "'x'", "<nil>"},
		{model.ActionFixedValue, vc, "NULL", "XXXXXXXX"},
		{model.ActionFixedValue, i64, "42", "0"},
		{model.ActionFixedValue, dec, "12.34", "0.00"},
		{model.ActionFixedValue, date, "DATE '2024-07-15'", "1970-01-01"},
		{model.ActionTruncateYear, date, "DATE '2024-07-15'", "2024-01-01"},
		{model.ActionTruncateMonth, date, "DATE '2024-07-15'", "2024-07-01"},
		{model.ActionTruncateYear, ts, "TIMESTAMP '2024-07-15 13:14:15'", "2024-01-01 00:00:00"},
		{model.ActionTruncateMonth, tstz, "TIMESTAMPTZ '2024-07-01 01:00:00+03'", "2024-06-01 00:00:00+00"},
		{model.ActionSHA256Global, vc, "'abc'", hex.EncodeToString(shaStr[:])},
		{model.ActionSHA256Global, i32, "CAST(7 AS INTEGER)", shaInt(7, false)},
		{model.ActionSHA256Global, i32, "CAST(-123456 AS INTEGER)", shaInt(-123456, false)},
		{model.ActionSHA256Global, i64, "CAST(1234567890123 AS BIGINT)", shaInt(1234567890123, true)},
		{model.ActionSHA256Global, i64, "CAST(-1 AS BIGINT)", shaInt(-1, true)},
		{model.ActionSHA256Global, i64, "NULL", "<nil>"},
	}
	if _, err := c.db.ExecContext(ctx, "SET TimeZone = 'America/New_York'"); err != nil {
		t.Log("cannot set the time zone (locked configuration); truncation is checked in UTC only")
	}
	for _, tt := range tests {
		typ, err := model.SQLType(tt.typ)
		if err != nil {
			t.Fatal(err)
		}
		expr, err := tt.action.Expr(`"v"`, tt.typ, true)
		if err != nil {
			t.Errorf("%s on %s: %v", tt.action, tt.typ, err)
			continue
		}
		var got *string
		q := "SELECT CAST((" + expr + ") AS VARCHAR), typeof((" + expr + ")) FROM (SELECT CAST(" + tt.in + " AS " + typ + ") AS v)"
		var gotType string
		if err := c.db.QueryRowContext(ctx, q).Scan(&got, &gotType); err != nil {
			t.Errorf("%s on %s %s: %.300v", tt.action, typ, tt.in, err)
			continue
		}
		s := "<nil>"
		if got != nil {
			s = *got
		}
		if s != tt.want {
			t.Errorf("%s(%s %s) = %q, want %q", tt.action, typ, tt.in, s, tt.want)
		}
		if gotType != typ {
			t.Errorf("%s on %s returns %s: the output type must match the input", tt.action, typ, gotType)
		}
	}
}
