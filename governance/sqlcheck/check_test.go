package sqlcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func newChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestParseSignature(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	tests := []struct {
		in, param, typ, err string
	}{
		{in: "(val VARCHAR)", param: "val", typ: "VARCHAR"},
		{in: " ( v text ) ", param: "v", typ: "VARCHAR"},
		{in: "(val timestamptz)", param: "val", typ: "TIMESTAMP WITH TIME ZONE"},
		{in: "(val DECIMAL(10, 2))", param: "val", typ: "DECIMAL(10,2)"},
		{in: "(val INTEGER[])", param: "val", typ: "INTEGER[]"},
		{in: "val VARCHAR", err: "want"},
		{in: "(val)", err: "want"},
		{in: "(a VARCHAR, b INTEGER)", err: "exactly one"},
		{in: "(val NOSUCHTYPE)", err: "NOSUCHTYPE"},
		{in: "(val VARCHAR); DROP TABLE x", err: "want"},
		{in: "(val VARCHAR) AS x FROM (SELECT 1", err: ""},
		{in: `("v" VARCHAR)`, err: "plain identifier"},
		{in: "(val VARCHAR' )", err: "type"},
	}
	for _, tt := range tests {
		sig, err := c.ParseSignature(ctx, tt.in)
		if tt.err != "" || tt.param == "" {
			if err == nil {
				t.Errorf("ParseSignature(%q) = %+v, want an error", tt.in, sig)
			} else if tt.err != "" && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSignature(%q): %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || sig.Param != tt.param || sig.Type != tt.typ {
			t.Errorf("ParseSignature(%q) = %+v, %v; want %s %s", tt.in, sig, err, tt.param, tt.typ)
		}
	}
}

func TestCheckMask(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	good := []struct{ typ, body string }{
		{"VARCHAR", "left(val, 2) || '***'"},
		{"VARCHAR", "regexp_replace(val, '[^@]+', '***')"},
		{"VARCHAR", "NULL"},
		{"BIGINT", "0"},
		{"INTEGER", "CASE WHEN val > 100 THEN 100 ELSE val END"},
		{"VARCHAR", "list_aggregate(list_transform(string_split(val, '@'), lambda s: left(s, 1)), 'string_agg', '@')"},
		{"VARCHAR", "sha256(val)"},
	}
	for _, g := range good {
		if err := c.CheckMask(ctx, "val", g.typ, g.body); err != nil {
			t.Errorf("CheckMask(%s, %q): %v", g.typ, g.body, err)
		}
	}
	bad := []struct{ typ, body, want string }{
		{"VARCHAR", "left(val, ", "body"},
		{"VARCHAR", "val; SELECT 1", "separator"},
		{"INTEGER", "'***'", "not INTEGER"},
		{"VARCHAR", "val + 1", "No function matches"},
		{"VARCHAR", "nosuch(val)", "nosuch"},
		{"VARCHAR", "other_column", "other_column"},
		{"VARCHAR", "(SELECT max(x) FROM range(3) t(x))::VARCHAR", "subquery"},
		{"VARCHAR", "current_setting('s3_secret_access_key')", "current_setting"},
		{"VARCHAR", "getvariable('x')", "getvariable"},
		{"VARCHAR", "max(val)", "GROUP BY"},
		{"VARCHAR", "first_value(val) OVER ()", "window"},
		{"VARCHAR", "(SELECT content FROM read_text('/etc/passwd'))", "subquery"},
		{"VARCHAR", "random()::VARCHAR", "random"},
		{"VARCHAR", "", "empty"},
		{"VARCHAR", "-- nothing", "empty"},
	}
	for _, b := range bad {
		err := c.CheckMask(ctx, "val", b.typ, b.body)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("CheckMask(%s, %q) = %v, want an Error containing %q", b.typ, b.body, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), "LINE 1") {
			t.Errorf("the message quotes the wrapper query: %v", err)
		}
	}
}

func TestCheckRowFilter(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	if err := c.CheckRowFilter(ctx, "country = 'EU' AND mrr >= 2000", []Column{{"country", "VARCHAR"}, {"mrr", "INTEGER"}}); err != nil {
		t.Error(err)
	}
	if err := c.CheckRowFilter(ctx, "country = 'EU'", []Column{{"country", ""}}); err != nil {
		t.Errorf("untyped columns: %v", err)
	}
	for _, tt := range []struct {
		body string
		cols []Column
		want string
	}{
		{"region = 'EU'", []Column{{"country", "VARCHAR"}}, "region"},
		{"mrr >= 'abc'", []Column{{"mrr", "INTEGER"}}, "row-access body"},
		{"country = 'EU') OR (1=1", []Column{{"country", "VARCHAR"}}, "unbalanced"},
		{"country IN (SELECT 'EU')", []Column{{"country", "VARCHAR"}}, "subquery"},
		{"count(*) > 0", []Column{{"country", "VARCHAR"}}, "GROUP BY"},
	} {
		if err := c.CheckRowFilter(ctx, tt.body, tt.cols); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckRowFilter(%q) = %v, want %q", tt.body, err, tt.want)
		}
	}
}

func TestLockedDown(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	for _, q := range []string{"SET enable_external_access = true", "SELECT * FROM read_csv('/etc/passwd')", "INSTALL httpfs"} {
		if _, err := c.db.ExecContext(ctx, q); err == nil {
			t.Errorf("%s succeeded in the checker's DuckDB", q)
		}
	}
}
