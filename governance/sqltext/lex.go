package sqltext

import (
	"fmt"
	"strings"
)

// Kind is what a Token is.
type Kind uint8

// The token kinds.
const (
	KindSpace       Kind = iota + 1 // white space
	KindComment                     // -- … or /* … */
	KindIdent                       // a bare identifier or keyword
	KindQuotedIdent                 // "…"
	KindString                      // '…', E'…', $tag$…$tag$
	KindNumber                      // 42, 1.5e3, .5, 0x1f
	KindPunct                       // operators, parentheses, commas…
	KindParam                       // $1, ?
)

// Token is one lexical token of a body: its kind and its exact text.
type Token struct {
	Kind Kind
	Text string
}

// SyntaxError is the error for a body that is not one closed expression.
type SyntaxError struct {
	Offset int // byte offset into the body
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// MaxDepth bounds the nesting of parentheses in a body.
const MaxDepth = 256

// Lex splits an expression body into tokens. It refuses what would let a
// body reach outside the expression it is spliced into: a statement
// separator (';'), unbalanced parentheses or brackets, an unterminated
// string, quoted identifier or comment, a NUL byte. Concatenating the
// tokens' texts gives back body exactly.
func Lex(body string) ([]Token, error) {
	var toks []Token
	var stack []byte // open ( [ {
	i := 0
	for i < len(body) {
		c := body[i]
		start := i
		switch {
		case c == 0:
			return nil, &SyntaxError{i, "NUL byte"}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			for i < len(body) && strings.IndexByte(" \t\n\r\f\v", body[i]) >= 0 {
				i++
			}
			toks = append(toks, Token{KindSpace, body[start:i]})
		case c == '-' && i+1 < len(body) && body[i+1] == '-':
			for i < len(body) && body[i] != '\n' {
				i++
			}
			toks = append(toks, Token{KindComment, body[start:i]})
		case c == '/' && i+1 < len(body) && body[i+1] == '*':
			// DuckDB, like Postgres, nests block comments.
			depth := 0
			for {
				if i+1 >= len(body) {
					return nil, &SyntaxError{start, "unterminated /* comment"}
				}
				switch {
				case body[i] == '/' && body[i+1] == '*':
					depth++
					i += 2
				case body[i] == '*' && body[i+1] == '/':
					depth--
					i += 2
				default:
					i++
				}
				if depth == 0 {
					break
				}
			}
			toks = append(toks, Token{KindComment, body[start:i]})
		case c == '\'':
			end, err := plainString(body, i)
			if err != nil {
				return nil, err
			}
			i = end
			toks = append(toks, Token{KindString, body[start:i]})
		case (c == 'e' || c == 'E') && i+1 < len(body) && body[i+1] == '\'':
			end, err := escapeString(body, i+1)
			if err != nil {
				return nil, err
			}
			i = end
			toks = append(toks, Token{KindString, body[start:i]})
		case c == '"':
			i++
			for {
				if i >= len(body) {
					return nil, &SyntaxError{start, "unterminated quoted identifier"}
				}
				if body[i] == '"' {
					if i+1 < len(body) && body[i+1] == '"' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			toks = append(toks, Token{KindQuotedIdent, body[start:i]})
		case c == '$':
			if i+1 < len(body) && isDigit(body[i+1]) {
				i++
				for i < len(body) && isDigit(body[i]) {
					i++
				}
				toks = append(toks, Token{KindParam, body[start:i]})
				break
			}
			end, ok, err := dollarString(body, i)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, &SyntaxError{i, "unexpected '$'"}
			}
			i = end
			toks = append(toks, Token{KindString, body[start:i]})
		case isIdentStart(c):
			for i < len(body) && isIdentPart(body[i]) {
				i++
			}
			toks = append(toks, Token{KindIdent, body[start:i]})
		case isDigit(c) || c == '.' && i+1 < len(body) && isDigit(body[i+1]):
			i = number(body, i)
			toks = append(toks, Token{KindNumber, body[start:i]})
		case c == '?':
			i++
			toks = append(toks, Token{KindParam, body[start:i]})
		case c == ';':
			return nil, &SyntaxError{i, "a statement separator ';' is not allowed in an expression"}
		default:
			switch c {
			case '(', '[', '{':
				if len(stack) >= MaxDepth {
					return nil, &SyntaxError{i, "nested too deeply"}
				}
				stack = append(stack, c)
			case ')', ']', '}':
				open := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]
				if len(stack) == 0 || stack[len(stack)-1] != open {
					return nil, &SyntaxError{i, fmt.Sprintf("unbalanced %q", c)}
				}
				stack = stack[:len(stack)-1]
			}
			i++
			// Multi-byte operators stay split: nothing here depends on them.
			toks = append(toks, Token{KindPunct, body[start:i]})
		}
	}
	if len(stack) > 0 {
		return nil, &SyntaxError{len(body), fmt.Sprintf("unclosed %q", stack[len(stack)-1])}
	}
	return toks, nil
}

// Expression lexes body as Lex does and also refuses a body with nothing
// but space and comments in it.
func Expression(body string) ([]Token, error) {
	toks, err := Lex(body)
	if err != nil {
		return nil, err
	}
	for _, t := range toks {
		if t.Kind != KindSpace && t.Kind != KindComment {
			return toks, nil
		}
	}
	return nil, &SyntaxError{0, "the expression is empty"}
}

// plainString scans '…' with ” as an escaped quote; a backslash is an
// ordinary character. It returns the offset after the closing quote.
func plainString(s string, i int) (int, error) {
	start := i
	i++
	for {
		if i >= len(s) {
			return 0, &SyntaxError{start, "unterminated string literal"}
		}
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1, nil
		}
		if s[i] == 0 {
			return 0, &SyntaxError{i, "NUL byte"}
		}
		i++
	}
}

// escapeString scans E'…' from its quote: a backslash escapes the next
// byte, ” is a quote.
func escapeString(s string, i int) (int, error) {
	start := i
	i++
	for {
		if i >= len(s) {
			return 0, &SyntaxError{start, "unterminated string literal"}
		}
		switch s[i] {
		case 0:
			return 0, &SyntaxError{i, "NUL byte"}
		case '\\':
			i += 2
			continue
		case '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1, nil
		}
		i++
	}
}

// dollarString scans $tag$…$tag$ at i; ok is false when no tag starts
// there.
func dollarString(s string, i int) (end int, ok bool, err error) {
	j := i + 1
	for j < len(s) && s[j] != '$' {
		if !isIdentPart(s[j]) {
			return 0, false, nil
		}
		j++
	}
	if j >= len(s) {
		return 0, false, nil
	}
	tag := s[i : j+1]
	k := strings.Index(s[j+1:], tag)
	if k < 0 {
		return 0, false, &SyntaxError{i, "unterminated dollar-quoted string"}
	}
	if strings.IndexByte(s[j+1:j+1+k], 0) >= 0 {
		return 0, false, &SyntaxError{i, "NUL byte"}
	}
	return j + 1 + k + len(tag), true, nil
}

func number(s string, i int) int {
	if s[i] == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X' || s[i+1] == 'b' || s[i+1] == 'B') {
		i += 2
		for i < len(s) && (isHex(s[i]) || s[i] == '_') {
			i++
		}
		return i
	}
	for i < len(s) && (isDigit(s[i]) || s[i] == '_') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && (isDigit(s[i]) || s[i] == '_') {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = j
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isIdentStart: letters, '_' and every byte of a multi-byte UTF-8 sequence
// (DuckDB allows non-ASCII letters in bare identifiers).
func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }
