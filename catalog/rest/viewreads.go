package rest

import (
	"context"
	"fmt"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// The cross-namespace view rule. A view stored in namespace ns is read by
// whoever may read ns, with the access of the engine that expands it: a
// view whose SQL reads namespace o would hand o's rows to ns's readers. So
// a view's SQL may name a namespace other than its own only when the token
// storing it may read that namespace; its default namespace likewise.
//
// The SQL is not parsed (every engine has its own dialect): it is split
// into tokens (governance/sqltext), and every dotted name — a.b, a.b.c,
// quoted or not, outside strings and comments — names its first part as a
// namespace, and for three or more parts (catalog.namespace.table) its
// second too. A part that is no namespace of this catalog (a table alias:
// t.col) constrains nothing; one that is, and that the token may not read,
// refuses the view, 403, logged and audited. SQL the lexer cannot split is
// refused too: what cannot be checked is not stored.

// checkViewReads applies the rule to the versions a create or replace
// stores in namespace ns for view name, as action.
func (s *Server) checkViewReads(r *request, action governance.Action, name string, versions ...*views.Version) error {
	named := map[string]bool{}
	for _, v := range versions {
		if v == nil {
			continue
		}
		if len(v.DefaultNamespace) > 0 {
			named[strings.Join(v.DefaultNamespace, ".")] = true
		}
		for _, rep := range v.Representations {
			refs, err := sqlNamespaces(rep.SQL)
			if err != nil {
				return badRequest("view SQL (%s): %v", rep.Dialect, err)
			}
			for _, n := range refs {
				named[n] = true
			}
		}
	}
	var unreadable []string
	for n := range named {
		if !strings.EqualFold(n, r.ns) && !s.principalAllows(r.p, governance.ActionLoadTable, n) {
			unreadable = append(unreadable, n)
		}
	}
	if len(unreadable) == 0 {
		return nil
	}
	live, err := s.namespaceNames(r.ctx)
	if err != nil {
		return err
	}
	for _, n := range unreadable {
		real, ok := live[strings.ToLower(n)]
		if !ok {
			continue
		}
		reason := fmt.Sprintf("the view reads namespace %s, which this token may not read", real)
		// The router logs and audits the refusal (one event per request).
		return forbidden("%s", reason)
	}
	return nil
}

// namespaceNames are the catalog's live namespaces, by lower-case name
// (engines fold unquoted names).
func (s *Server) namespaceNames(ctx context.Context) (map[string]string, error) {
	names, err := s.cat.LiveSchemaNames(ctx, s.db)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[strings.ToLower(n)] = n
	}
	return out, nil
}

// sqlNamespaces are the names a view's SQL may use as namespaces: the
// first part of every dotted name, and the second of every one with three
// or more parts.
func sqlNamespaces(sql string) ([]string, error) {
	// A statement may end in ';'; the lexer takes no separator.
	sql = strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
	toks, err := sqltext.Lex(sql)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(toks); {
		parts, next := dottedName(toks, i)
		if len(parts) >= 2 {
			out = append(out, parts[0])
			if len(parts) >= 3 {
				out = append(out, parts[1])
			}
		}
		i = next
	}
	return out, nil
}

// dottedName reads the name starting at toks[i]: identifiers joined by
// '.', with spaces and comments allowed around the dots. next is where
// scanning continues.
func dottedName(toks []sqltext.Token, i int) (parts []string, next int) {
	part, ok := identText(toks[i])
	if !ok {
		return nil, i + 1
	}
	parts = append(parts, part)
	next = i + 1
	for {
		j := skipBlank(toks, next)
		if j >= len(toks) || toks[j].Kind != sqltext.KindPunct || toks[j].Text != "." {
			return parts, next
		}
		k := skipBlank(toks, j+1)
		if k >= len(toks) {
			return parts, next
		}
		part, ok := identText(toks[k])
		if !ok {
			return parts, k // "a.*" and the like
		}
		parts = append(parts, part)
		next = k + 1
	}
}

func skipBlank(toks []sqltext.Token, i int) int {
	for i < len(toks) && (toks[i].Kind == sqltext.KindSpace || toks[i].Kind == sqltext.KindComment) {
		i++
	}
	return i
}

// identText is an identifier token's name: a quoted one unquoted.
func identText(t sqltext.Token) (string, bool) {
	switch t.Kind {
	case sqltext.KindIdent:
		return t.Text, true
	case sqltext.KindQuotedIdent:
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`), true
	}
	return "", false
}

// checkCreateViewReads applies the rule to a new view's version.
func (s *Server) checkCreateViewReads(r *request, name string, v *views.Version) error {
	return s.checkViewReads(r, governance.ActionCreateView, name, v)
}

// checkReplaceViewReads applies the rule to the versions a view commit
// adds.
func (s *Server) checkReplaceViewReads(r *request, name string, us []views.Update) error {
	var vs []*views.Version
	for _, u := range us {
		if u.ViewVersion != nil {
			vs = append(vs, u.ViewVersion)
		}
	}
	return s.checkViewReads(r, governance.ActionReplaceView, name, vs...)
}
