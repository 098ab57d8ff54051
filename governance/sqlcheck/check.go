package sqlcheck

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// Error is a refused body, type or signature: Msg says why, in DuckDB's
// words where DuckDB refused it. It is safe to return to the author.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func refuse(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Checker validates bodies. It is safe for concurrent use.
type Checker struct {
	db *sql.DB
}

// Open starts the Checker's DuckDB.
func Open() (*Checker, error) {
	// Settings in the path apply when the database is created, before any
	// connection could change them; lock_configuration keeps them.
	conn, err := duckdb.NewConnector("?enable_external_access=false&autoinstall_known_extensions=false"+
		"&autoload_known_extensions=false&allow_community_extensions=false&threads=1&lock_configuration=true", nil)
	if err != nil {
		return nil, fmt.Errorf("sqlcheck: start DuckDB: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	return &Checker{db: db}, nil
}

// Close stops the DuckDB.
func (c *Checker) Close() error { return c.db.Close() }

// duckErr turns a DuckDB error into an Error holding DuckDB's message
// without the excerpt of our wrapper query (which the author never wrote)
// and without the list of candidate functions.
func duckErr(what string, err error) error {
	var de *duckdb.Error
	msg := err.Error()
	if errors.As(err, &de) {
		msg = de.Msg
	}
	for _, cut := range []string{"\n\nLINE ", "\nLINE ", "\n\tCandidate functions:", "\nCandidate functions:"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	return &Error{Msg: what + ": " + strings.TrimSpace(msg)}
}

// CanonicalType is DuckDB's name of type typ ("text" → "VARCHAR",
// "timestamptz" → "TIMESTAMP WITH TIME ZONE").
func (c *Checker) CanonicalType(ctx context.Context, typ string) (string, error) {
	if err := checkTypeText(typ); err != nil {
		return "", err
	}
	var out string
	if err := c.db.QueryRowContext(ctx, "SELECT typeof(CAST(NULL AS "+typ+"))").Scan(&out); err != nil {
		return "", duckErr("type "+typ, err)
	}
	return out, nil
}

// checkTypeText allows the tokens a type is written with: names, numbers,
// quoted member names, parentheses, brackets and commas.
func checkTypeText(typ string) error {
	toks, err := sqltext.Expression(typ)
	if err != nil {
		return refuse("type %q: %v", typ, err)
	}
	for _, t := range toks {
		switch t.Kind {
		case sqltext.KindSpace, sqltext.KindIdent, sqltext.KindQuotedIdent, sqltext.KindNumber:
		case sqltext.KindPunct:
			if !strings.Contains("()[],", t.Text) {
				return refuse("type %q: unexpected %q", typ, t.Text)
			}
		default:
			return refuse("type %q: unexpected %q", typ, t.Text)
		}
	}
	return nil
}

// Signature is a masking policy's parsed signature: its one parameter and
// the canonical type of it.
type Signature struct {
	Param string
	Type  string
}

// ParseSignature reads "(val VARCHAR)": exactly one parameter, a name and
// a DuckDB type.
func (c *Checker) ParseSignature(ctx context.Context, sig string) (Signature, error) {
	s := strings.TrimSpace(sig)
	inner, ok := strings.CutPrefix(s, "(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		return Signature{}, refuse(`signature %q: want "(name TYPE)", e.g. "(val VARCHAR)"`, sig)
	}
	inner = strings.TrimSpace(inner)
	name, typ, ok := strings.Cut(inner, " ")
	typ = strings.TrimSpace(typ)
	if !ok || name == "" || typ == "" {
		return Signature{}, refuse(`signature %q: want "(name TYPE)", e.g. "(val VARCHAR)"`, sig)
	}
	if !plainName(name) {
		return Signature{}, refuse("signature %q: the parameter name %q must be a plain identifier", sig, name)
	}
	if depthComma(typ) {
		return Signature{}, refuse("signature %q: a masking policy takes exactly one parameter", sig)
	}
	canon, err := c.CanonicalType(ctx, typ)
	if err != nil {
		return Signature{}, err
	}
	return Signature{Param: strings.ToLower(name), Type: canon}, nil
}

// depthComma reports a comma outside parentheses: a second parameter.
func depthComma(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// CheckMask validates a masking body over parameter param of type typ (a
// canonical DuckDB type): one scalar expression that DuckDB binds, whose
// type is typ or implicitly castable to it.
func (c *Checker) CheckMask(ctx context.Context, param, typ, body string) error {
	if err := c.checkShape(ctx, body); err != nil {
		return err
	}
	if err := checkTypeText(typ); err != nil {
		return err
	}
	q, err := sqltext.Ident(param)
	if err != nil {
		return refuse("parameter: %v", err)
	}
	// x is a second column: an aggregate in the body fails to bind beside
	// it ("must appear in the GROUP BY clause").
	query := "SELECT typeof((" + body + ")) = '" + strings.ReplaceAll(typ, "'", "''") + "' OR can_cast_implicitly((" + body + "), CAST(NULL AS " + typ + ")), x" +
		" FROM (SELECT CAST(NULL AS " + typ + ") AS " + q + ", 1 AS x)"
	var fitsType bool
	var x int
	if err := c.db.QueryRowContext(ctx, query).Scan(&fitsType, &x); err != nil {
		return duckErr("masking body", err)
	}
	if !fitsType {
		var got string
		_ = c.db.QueryRowContext(ctx, "SELECT typeof(("+body+")) FROM (SELECT CAST(NULL AS "+typ+") AS "+q+")").Scan(&got)
		return refuse("masking body: it returns %s, which is not %s (a mask must keep its column's type)", got, typ)
	}
	return nil
}

// Column is a column a row-access body reads: its name and, when known,
// its DuckDB type ("" when the body is checked before it meets a table).
type Column struct {
	Name, Type string
}

// CheckRowFilter validates a row-access body over cols: one scalar
// expression that DuckDB binds as a boolean condition.
func (c *Checker) CheckRowFilter(ctx context.Context, body string, cols []Column) error {
	if err := c.checkShape(ctx, body); err != nil {
		return err
	}
	var sel []string
	for _, col := range cols {
		q, err := sqltext.Ident(col.Name)
		if err != nil {
			return refuse("column %q: %v", col.Name, err)
		}
		typ := col.Type
		if typ == "" {
			sel = append(sel, "NULL AS "+q)
			continue
		}
		if err := checkTypeText(typ); err != nil {
			return err
		}
		sel = append(sel, "CAST(NULL AS "+typ+") AS "+q)
	}
	sel = append(sel, "1 AS __duckicelake_x")
	query := "SELECT CAST((" + body + ") AS BOOLEAN), __duckicelake_x FROM (SELECT " + strings.Join(sel, ", ") + ")"
	var keep sql.NullBool
	var x int
	if err := c.db.QueryRowContext(ctx, query).Scan(&keep, &x); err != nil {
		return duckErr("row-access body", err)
	}
	return nil
}

// checkShape refuses a body that is not one scalar, self-contained
// expression: it must lex (no ';', balanced, closed literals) and DuckDB's
// parser must see no subquery, window or outside-reaching function in it.
func (c *Checker) checkShape(ctx context.Context, body string) error {
	if _, err := sqltext.Expression(body); err != nil {
		return refuse("body: %v", err)
	}
	lit, err := sqltext.String("SELECT (" + body + ")")
	if err != nil {
		return refuse("body: %v", err)
	}
	var js string
	if err := c.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql("+lit+") AS VARCHAR)").Scan(&js); err != nil {
		return duckErr("body", err)
	}
	var tree any
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		return fmt.Errorf("sqlcheck: DuckDB's parse tree: %w", err)
	}
	if m, ok := tree.(map[string]any); ok && m["error"] == true {
		return refuse("body: %v", m["error_message"])
	}
	return walk(tree)
}

// walk refuses the nodes a policy body may not contain.
func walk(n any) error {
	switch v := n.(type) {
	case map[string]any:
		switch v["class"] {
		case "SUBQUERY":
			return refuse("body: a policy body may not contain a subquery")
		case "WINDOW":
			return refuse("body: a policy body may not contain a window function")
		case "FUNCTION":
			if name, ok := v["function_name"].(string); ok && denied(name) {
				return refuse("body: a policy body may not call %s", name)
			}
		}
		for _, child := range v {
			if err := walk(child); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range v {
			if err := walk(child); err != nil {
				return err
			}
		}
	}
	return nil
}

// denied reports functions that reach outside the row being masked:
// settings, variables, environment, secrets, files, catalogs, other
// queries, randomness (a mask must be a function of its value).
func denied(name string) bool {
	n := strings.ToLower(name)
	for _, p := range []string{"read_", "duckdb_", "pragma_", "parquet_", "iceberg_", "ducklake_", "glob", "query",
		"current_", "getenv", "getvariable", "setseed", "random", "uuid", "gen_random", "nextval", "currval",
		"sql_auto_complete", "which_secret", "txid_", "version", "pg_", "has_", "delta_", "http_", "sniff_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}
