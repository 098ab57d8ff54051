package sqltext

import (
	"errors"
	"strings"
)

// ErrNUL reports a name or literal with a NUL byte, which DuckDB cannot
// hold in an identifier or a string literal.
var ErrNUL = errors.New("sqltext: NUL byte in a name or literal")

// Ident quotes name as a DuckDB identifier: in double quotes, inner double
// quotes doubled. Quoting every generated identifier makes any name safe,
// keywords and injection-shaped names included.
func Ident(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", ErrNUL
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, nil
}

// MustIdent is Ident for names known to hold no NUL (DuckLake names, which
// came through Postgres text columns, cannot). It panics otherwise.
func MustIdent(name string) string {
	s, err := Ident(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Qualified quotes each part and joins them with '.': "schema"."table".
func Qualified(parts ...string) (string, error) {
	var b strings.Builder
	for i, p := range parts {
		q, err := Ident(p)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(q)
	}
	return b.String(), nil
}

// String quotes s as a DuckDB string literal: in single quotes, inner
// single quotes doubled. DuckDB reads a backslash in a plain literal as a
// backslash, so nothing else needs escaping.
func String(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", ErrNUL
	}
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`, nil
}
