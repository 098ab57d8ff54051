// Package sqltext builds the DuckDB SQL that governance generates — masking
// views, row filters, export queries — from names and policy bodies it does
// not trust: it quotes identifiers and string literals, and it splits a
// policy body into tokens so that the names a body refers to (a mask's
// "val", a row filter's columns) can be replaced by the columns they stand
// for without ever touching the inside of a string literal, a quoted
// identifier or a comment.
//
// It is a lexer, not a parser: DuckDB itself parses and types every body
// when it is authored (governance's validator). What this package
// guarantees is narrower and is what generated SQL needs: a body it accepts
// is one self-contained expression (no statement separator, balanced
// parentheses, every literal and comment closed), and a substitution
// changes identifier tokens and nothing else.
//
// sqltext imports only the standard library.
package sqltext
