package plan

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// ReadRestrictions is a plan as the Iceberg read-restrictions proposal
// says it to clients (LoadTableResult's read-restrictions): a standard
// action per masked column, and the row filter as an Iceberg expression.
type ReadRestrictions struct {
	ColumnProjections []ColumnProjection `json:"required-column-projections,omitempty"`
	RowFilter         json.RawMessage    `json:"required-row-filter,omitempty"`
}

// ColumnProjection is one required column projection.
type ColumnProjection struct {
	FieldID int64  `json:"field-id"`
	Action  string `json:"action"`
}

// ReadRestrictions expresses pl for Iceberg clients; nil when the plan
// restricts nothing. It never says less than the plan enforces: a mask
// with a SQL body (no standard action) is announced as the standard action
// that reveals nothing of the value (replace-with-null, or
// mask-to-fixed-value for a required column), and a row filter that does
// not translate into an Iceberg expression as false (no rows). exact is
// false when either happened: a client applying the restrictions then
// sees less than the plan's view would show, never more.
func (pl *Plan) ReadRestrictions(t *Table) (rr *ReadRestrictions, exact bool) {
	if !pl.Governed() {
		return nil, true
	}
	rr, exact = &ReadRestrictions{}, true
	cols := make(map[int64]*Column, len(t.Columns))
	for i := range t.Columns {
		cols[t.Columns[i].ID] = &t.Columns[i]
	}
	for _, m := range pl.Masks {
		action := m.Action
		if action == model.ActionNone {
			exact = false
			action = model.ActionReplaceWithNull
			if c := cols[m.ColumnID]; c != nil && !c.Nullable {
				action = model.ActionFixedValue
			}
		}
		rr.ColumnProjections = append(rr.ColumnProjections, ColumnProjection{FieldID: m.ColumnID, Action: string(action)})
	}
	if len(pl.RowFilters) > 0 {
		byName := make(map[string]*Column, len(t.Columns))
		for i := range t.Columns {
			byName[strings.ToLower(t.Columns[i].Name)] = &t.Columns[i]
		}
		var parts []any
		for _, f := range pl.RowFilters {
			e, ok := translate(f.Expr, byName)
			if !ok {
				exact = false
				parts = []any{false}
				break
			}
			parts = append(parts, e)
		}
		expr := parts[0]
		for _, p := range parts[1:] {
			expr = map[string]any{"type": "and", "left": expr, "right": p}
		}
		rr.RowFilter, _ = json.Marshal(expr)
	}
	return rr, exact
}

// translate turns a bound row filter into an Iceberg expression: AND, OR,
// NOT, comparisons of a column with a literal, IS [NOT] NULL, [NOT] IN of
// literals and LIKE 'prefix%'. Anything else does not translate.
func translate(expr string, cols map[string]*Column) (any, bool) {
	toks, err := sqltext.Expression(expr)
	if err != nil {
		return nil, false
	}
	p := &parser{cols: cols}
	for _, t := range toks {
		if t.Kind != sqltext.KindSpace && t.Kind != sqltext.KindComment {
			p.toks = append(p.toks, t)
		}
	}
	e, ok := p.or()
	if !ok || p.i != len(p.toks) {
		return nil, false
	}
	return e, true
}

type parser struct {
	toks []sqltext.Token
	i    int
	cols map[string]*Column
}

func (p *parser) peek() (sqltext.Token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return sqltext.Token{}, false
}

// keyword consumes the keyword kw if it is next.
func (p *parser) keyword(kw string) bool {
	if t, ok := p.peek(); ok && t.Kind == sqltext.KindIdent && strings.EqualFold(t.Text, kw) {
		p.i++
		return true
	}
	return false
}

// punct consumes the punctuation s (one or two tokens) if it is next.
func (p *parser) punct(s string) bool {
	j := p.i
	for _, c := range s {
		if j >= len(p.toks) || p.toks[j].Kind != sqltext.KindPunct || p.toks[j].Text != string(c) {
			return false
		}
		j++
	}
	p.i = j
	return true
}

func (p *parser) or() (any, bool)  { return p.binary("or", p.and) }
func (p *parser) and() (any, bool) { return p.binary("and", p.not) }

// binary reads operands joined by keyword op, left-associative: a op b op
// c is (a op b) op c.
func (p *parser) binary(op string, operand func() (any, bool)) (any, bool) {
	l, ok := operand()
	for ok && p.keyword(op) {
		var r any
		if r, ok = operand(); ok {
			l = map[string]any{"type": op, "left": l, "right": r}
		}
	}
	return l, ok
}

func (p *parser) not() (any, bool) {
	if p.keyword("not") {
		c, ok := p.not()
		return map[string]any{"type": "not", "child": c}, ok
	}
	return p.predicate()
}

// predicate: ( expr ) | term op literal | term IS [NOT] NULL |
// term [NOT] IN (literals) | term [NOT] LIKE 'prefix%'.
func (p *parser) predicate() (any, bool) {
	save := p.i
	if p.punct("(") {
		if e, ok := p.or(); ok && p.punct(")") {
			return e, true
		}
		p.i = save // a parenthesised column: "(col) = 1"
	}
	name, ok := p.term()
	if !ok {
		return nil, false
	}
	switch {
	case p.keyword("is"):
		neg := p.keyword("not")
		if !p.keyword("null") {
			return nil, false
		}
		if neg {
			return map[string]any{"type": "not-null", "term": name}, true
		}
		return map[string]any{"type": "is-null", "term": name}, true
	case p.keyword("not"):
		if p.keyword("in") {
			vals, ok := p.list()
			return map[string]any{"type": "not-in", "term": name, "values": vals}, ok
		}
		if p.keyword("like") {
			prefix, ok := p.likePrefix()
			return map[string]any{"type": "not-starts-with", "term": name, "value": prefix}, ok
		}
		return nil, false
	case p.keyword("in"):
		vals, ok := p.list()
		return map[string]any{"type": "in", "term": name, "values": vals}, ok
	case p.keyword("like"):
		prefix, ok := p.likePrefix()
		return map[string]any{"type": "starts-with", "term": name, "value": prefix}, ok
	}
	for _, op := range []struct{ sql, ice string }{
		{"<=", "lt-eq"}, {">=", "gt-eq"}, {"<>", "not-eq"}, {"!=", "not-eq"}, {"=", "eq"}, {"<", "lt"}, {">", "gt"},
	} {
		if p.punct(op.sql) {
			v, ok := p.literal()
			return map[string]any{"type": op.ice, "term": name, "value": v}, ok
		}
	}
	return nil, false
}

// term is a column reference, possibly parenthesised; its name as the
// table spells it.
func (p *parser) term() (string, bool) {
	if p.punct("(") {
		n, ok := p.term()
		return n, ok && p.punct(")")
	}
	t, ok := p.peek()
	if !ok {
		return "", false
	}
	var name string
	switch t.Kind {
	case sqltext.KindIdent:
		name = t.Text
	case sqltext.KindQuotedIdent:
		name = strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	default:
		return "", false
	}
	c := p.cols[strings.ToLower(name)]
	if c == nil {
		return "", false
	}
	p.i++
	return c.Name, true
}

// literal is a number, a string, true or false, optionally negative.
func (p *parser) literal() (any, bool) {
	neg := p.punct("-")
	t, ok := p.peek()
	if !ok {
		return nil, false
	}
	switch {
	case t.Kind == sqltext.KindNumber:
		p.i++
		text := strings.ReplaceAll(t.Text, "_", "")
		if neg {
			text = "-" + text
		}
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return f, true
		}
		return nil, false
	case neg:
		return nil, false
	case t.Kind == sqltext.KindString && strings.HasPrefix(t.Text, "'"):
		p.i++
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], "''", "'"), true
	case t.Kind == sqltext.KindIdent && (strings.EqualFold(t.Text, "true") || strings.EqualFold(t.Text, "false")):
		p.i++
		return strings.EqualFold(t.Text, "true"), true
	}
	return nil, false
}

func (p *parser) list() ([]any, bool) {
	if !p.punct("(") {
		return nil, false
	}
	var out []any
	for {
		v, ok := p.literal()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if p.punct(")") {
			return out, true
		}
		if !p.punct(",") {
			return nil, false
		}
	}
}

// likePrefix reads a LIKE pattern that is a literal prefix and one
// trailing %: the one LIKE that Iceberg's starts-with says exactly.
func (p *parser) likePrefix() (string, bool) {
	v, ok := p.literal()
	s, isStr := v.(string)
	if !ok || !isStr || !strings.HasSuffix(s, "%") {
		return "", false
	}
	prefix := s[:len(s)-1]
	if strings.ContainsAny(prefix, "%_\\") {
		return "", false
	}
	return prefix, true
}
