package sqltext

import "strings"

// Refs lists the identifiers a body refers to as names (not as functions
// or members), unquoted and lower-cased (DuckDB matches identifiers
// case-insensitively), each once, in order of appearance.
func Refs(toks []Token) []string {
	var out []string
	seen := map[string]bool{}
	for i := range toks {
		name, ok := refName(toks, i)
		if !ok || toks[i].Kind == KindIdent && keywords[name] {
			continue
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// Substitute replaces every reference to a name of repl (keys lower-case,
// as Refs reports them) by its
// replacement text, parenthesised, and returns the body as text. A
// reference is an identifier token that is neither a member (after '.')
// nor called (before '('), nor a named argument (before ':=' or '=>'), nor
// a lambda's parameter list entry. Comments become a space — a line
// comment would swallow whatever the body is spliced before — and nothing
// else of the body changes.
func Substitute(toks []Token, repl map[string]string) string {
	var b strings.Builder
	for i, t := range toks {
		if t.Kind == KindComment {
			b.WriteByte(' ')
			continue
		}
		if name, ok := refName(toks, i); ok {
			if r, hit := repl[name]; hit {
				b.WriteByte('(')
				b.WriteString(r)
				b.WriteByte(')')
				continue
			}
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

// Join is the tokens' text.
func Join(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// refName reports whether toks[i] is a reference to a name, and the name.
func refName(toks []Token, i int) (string, bool) {
	t := toks[i]
	var name string
	switch t.Kind {
	case KindIdent:
		name = strings.ToLower(t.Text)
	case KindQuotedIdent:
		// DuckDB matches identifiers case-insensitively, quoted or not.
		name = strings.ToLower(strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`))
	default:
		return "", false
	}
	if p, ok := prevSignificant(toks, i); ok && p.Kind == KindPunct && p.Text == "." {
		return "", false
	}
	if n, ok := nextSignificant(toks, i); ok {
		if n.Kind == KindPunct && n.Text == "(" {
			return "", false
		}
		if n.Kind == KindPunct && (n.Text == ":" || n.Text == "=") {
			// name := … and name => … are named arguments, "lambda name:" a
			// parameter; name::type is a cast and name = … a comparison.
			after := tokenAfter(toks, i, n)
			switch {
			case n.Text == ":" && after != ":":
				return "", false
			case n.Text == "=" && after == ">":
				return "", false
			}
		}
		if n.Kind == KindString && t.Kind == KindIdent {
			// A typed literal: DATE '2024-01-01', INTERVAL '1 day'.
			return "", false
		}
	}
	if p, ok := prevSignificant(toks, i); ok && p.Kind == KindIdent && strings.EqualFold(p.Text, "lambda") {
		return "", false
	}
	return name, true
}

// tokenAfter is the text of the token right after next (the significant
// token following toks[i]), with no space between; "" otherwise.
func tokenAfter(toks []Token, i int, next Token) string {
	for j := i + 1; j < len(toks); j++ {
		if toks[j] == next && j+1 < len(toks) {
			return toks[j+1].Text
		}
		if toks[j].Kind != KindSpace && toks[j].Kind != KindComment {
			break
		}
	}
	return ""
}

func prevSignificant(toks []Token, i int) (Token, bool) {
	for j := i - 1; j >= 0; j-- {
		if toks[j].Kind != KindSpace && toks[j].Kind != KindComment {
			return toks[j], true
		}
	}
	return Token{}, false
}

func nextSignificant(toks []Token, i int) (Token, bool) {
	for j := i + 1; j < len(toks); j++ {
		if toks[j].Kind != KindSpace && toks[j].Kind != KindComment {
			return toks[j], true
		}
	}
	return Token{}, false
}

// keywords are words an expression uses that Refs does not report as
// column references (reserved words and type names). Substitute does not
// consult them: it replaces only the names it is given.
var keywords = map[string]bool{
	"all": true, "and": true, "any": true, "array": true, "as": true, "asc": true, "asymmetric": true,
	"between": true, "both": true, "case": true, "cast": true, "collate": true, "current_date": true,
	"current_time": true, "current_timestamp": true, "current_user": true, "default": true, "desc": true,
	"distinct": true, "else": true, "end": true, "escape": true, "except": true, "exists": true,
	"false": true, "filter": true, "for": true, "from": true, "glob": true, "ilike": true, "in": true,
	"interval": true, "is": true, "isnull": true, "lambda": true, "leading": true, "like": true,
	"not": true, "notnull": true, "null": true, "or": true, "order": true, "over": true,
	"partition": true, "select": true, "similar": true, "some": true, "symmetric": true, "then": true,
	"trailing": true, "true": true, "try_cast": true, "union": true, "using": true, "when": true,
	"where": true, "window": true, "with": true, "within": true, "by": true, "at": true, "zone": true,
	"time": true, "timestamp": true, "date": true, "varchar": true, "integer": true, "bigint": true,
	"double": true, "boolean": true, "decimal": true, "real": true, "float": true, "text": true,
	"smallint": true, "tinyint": true, "hugeint": true, "blob": true, "uuid": true, "year": true,
	"month": true, "day": true, "hour": true, "minute": true, "second": true, "struct": true,
	"map": true, "list": true,
}
