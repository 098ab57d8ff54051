package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// Table is a table at its current schema, as planning sees it.
type Table struct {
	SchemaID, TableID int64
	Namespace, Name   string
	// Columns are the top-level columns in table order.
	Columns []Column
}

// Column is a top-level column.
type Column struct {
	ID       int64
	Name     string
	Type     ducklake.Type
	Nullable bool
}

// Tier is how a plan is enforced.
type Tier uint8

// The tiers. Cooperative: masking views and metadata signals, which a
// client naming the base table with base credentials can skip. Airtight:
// pre-masked copies and credentials that cannot reach the base bytes.
const (
	TierNone Tier = iota
	TierCooperative
	TierAirtight
)

// String is "none", "cooperative" or "airtight".
func (t Tier) String() string {
	switch t {
	case TierCooperative:
		return "cooperative"
	case TierAirtight:
		return "airtight"
	}
	return "none"
}

// Mask is a masked column.
type Mask struct {
	Column   string
	ColumnID int64
	Policy   string
	// Action is the policy's standard action, if it names one (then the
	// mask can be returned as a read-restriction).
	Action model.StandardAction
	// Expr is the DuckDB expression producing the masked value, over the
	// quoted column, cast to the column's type.
	Expr      string
	FileLayer bool
}

// RowFilter is one row-access policy's predicate, bound to the table's
// current column names.
type RowFilter struct {
	Policy string
	Expr   string
	// Columns are the current names of the columns it reads.
	Columns []string
}

// IssueKind classifies an Issue.
type IssueKind uint8

// The issue kinds.
const (
	// IssueMissingPolicy: an attachment names a policy that is gone.
	IssueMissingPolicy IssueKind = iota + 1
	// IssueTypeMismatch: a mask attached to a column no longer fits its
	// type.
	IssueTypeMismatch
	// IssueConflict: a second mask reaches an already masked column.
	IssueConflict
	// IssueMissingColumn: a row filter reads a column the table lacks.
	IssueMissingColumn
	// IssueBadBody: a body that cannot be spliced (it lexes badly).
	IssueBadBody
)

// Issue is a policy that reaches the table but cannot be applied. Reason
// names policies and columns, never a value.
type Issue struct {
	Kind   IssueKind
	Policy string
	Column string
	Reason string
}

// Plan is what governance enforces for one principal on one table.
type Plan struct {
	// Visible is false for an allowlisted table the principal holds no
	// granted role for: it must look absent.
	Visible bool
	// Masks are in column order, at most one per column.
	Masks []Mask
	// RowFilters are in policy-name order; Filter is their AND ("" for
	// none).
	RowFilters []RowFilter
	Filter     string
	Tier       Tier
	// Signature identifies the plan's shape (the table, its columns'
	// identities, each mask's policy and body, each filter's): principals
	// with the same shape share views and exports; a policy or schema
	// change rotates it. Empty for a plan with nothing to enforce.
	Signature string
	// ViewSQL is the SELECT a masking view or export runs ("" without
	// masks and filters).
	ViewSQL string
	// PolicyIDs name every policy in force: "masking:<name>",
	// "row-access:<name>", and "grant" when visibility came from an
	// allowlist.
	PolicyIDs []string
	// Issues are policies that apply but could not be planned.
	Issues []Issue
}

// Governed reports whether the plan restricts anything.
func (p *Plan) Governed() bool { return len(p.Masks) > 0 || len(p.RowFilters) > 0 }

// Options tune planning.
type Options struct {
	// AgentAirtight holds agent sessions to the airtight tier whenever a
	// restriction applies to them, whatever the policy's own tier.
	AgentAirtight bool
}

// Principal is the planned-for principal: its effective roles (token
// roles, role grants and the synthetic actor:/channel: roles) and whether
// an agent drives the session.
type Principal struct {
	Roles model.RoleSet
	Agent bool
	// SeesAll plans an allowlisted table as if its grant were held: with
	// no roles, what reaches the table whoever may read it — what
	// authoring's checks and effective-policies' derived set look at (a
	// second mask on a table nobody may read yet is still a second mask).
	SeesAll bool
}

// Build plans t for p under st.
func Build(st *model.State, p Principal, t *Table, opt Options) Plan {
	var pl Plan
	roles, listed := st.Allowlist(t.SchemaID, t.TableID)
	pl.Visible = !listed || p.SeesAll || p.Roles.Any(roles)
	if listed {
		pl.PolicyIDs = append(pl.PolicyIDs, "grant")
	}
	if !pl.Visible {
		return pl
	}
	if !st.MayGovern(t.SchemaID, t.TableID) {
		return pl
	}
	tableTags := st.TableTags(t.SchemaID, t.TableID)
	byLower := make(map[string]*Column, len(t.Columns))
	byID := make(map[int64]*Column, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		byLower[strings.ToLower(c.Name)] = c
		byID[c.ID] = c
	}

	// Masks: direct column attachments, then every tag the column carries
	// (its schema's, its table's, its own).
	var allColumnTags []model.TagRef
	for i := range t.Columns {
		c := &t.Columns[i]
		colTags := st.ColumnTags(t.TableID, c.ID)
		allColumnTags = append(allColumnTags, colTags...)
		var reach []reached
		for _, a := range st.ColumnAttachments(t.TableID, c.ID) {
			if a.Kind == model.PolicyMasking {
				reach = append(reach, reached{policy: a.Policy, direct: true})
			}
		}
		for _, tag := range append(slices.Clip(tableTags), colTags...) {
			for _, a := range st.TagAttachments(tag) {
				if a.Kind == model.PolicyMasking {
					reach = append(reach, reached{policy: a.Policy})
				}
			}
		}
		m, issue, ok := maskFor(st, c, reach)
		if issue != nil {
			pl.Issues = append(pl.Issues, *issue)
		}
		if !ok {
			continue
		}
		pol := st.Mask(m.Policy)
		if p.Roles.Any(pol.UnmaskedRoles) {
			continue
		}
		pl.Masks = append(pl.Masks, m)
		pl.PolicyIDs = append(pl.PolicyIDs, "masking:"+m.Policy)
	}

	// Row filters: policies attached to the table, or to any tag it
	// carries at any level.
	rowAtt := map[string]model.Attachment{}
	for _, a := range st.TableAttachments(t.TableID) {
		if a.Kind == model.PolicyRowAccess {
			rowAtt[a.Policy] = a
		}
	}
	for _, tag := range append(slices.Clip(tableTags), allColumnTags...) {
		for _, a := range st.TagAttachments(tag) {
			if _, dup := rowAtt[a.Policy]; a.Kind == model.PolicyRowAccess && !dup {
				rowAtt[a.Policy] = a
			}
		}
	}
	names := make([]string, 0, len(rowAtt))
	for n := range rowAtt {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		pol := st.RowPolicy(n)
		if pol == nil {
			pl.Issues = append(pl.Issues, Issue{Kind: IssueMissingPolicy, Policy: n, Reason: "the attached row-access policy does not exist"})
			continue
		}
		if p.Roles.Any(pol.UnmaskedRoles) {
			continue
		}
		f, issue := bindFilter(pol, rowAtt[n], byLower, byID)
		if issue != nil {
			pl.Issues = append(pl.Issues, *issue)
			continue
		}
		pl.RowFilters = append(pl.RowFilters, f)
		pl.PolicyIDs = append(pl.PolicyIDs, "row-access:"+n)
	}
	if len(pl.RowFilters) > 0 {
		parts := make([]string, len(pl.RowFilters))
		for i, f := range pl.RowFilters {
			parts[i] = "(" + f.Expr + ")"
		}
		pl.Filter = strings.Join(parts, " AND ")
	}

	if !pl.Governed() {
		return pl
	}
	pl.Tier = TierCooperative
	for _, m := range pl.Masks {
		if m.FileLayer {
			pl.Tier = TierAirtight
		}
	}
	if p.Agent && opt.AgentAirtight {
		pl.Tier = TierAirtight
	}
	pl.Signature = signature(t, &pl)
	pl.ViewSQL = viewSQL(t, &pl)
	return pl
}

type reached struct {
	policy string
	direct bool
}

// maskFor picks the one mask that reaches c. Masks reached through a tag
// apply only where the column's type fits the policy (its signature's
// type, or its action's applicability); a direct attachment that no longer
// fits, two masks on one column and a missing policy are issues.
func maskFor(st *model.State, c *Column, reach []reached) (Mask, *Issue, bool) {
	var picked *model.MaskingPolicy
	var issue *Issue
	seen := map[string]bool{}
	for _, r := range reach {
		if seen[r.policy] {
			continue
		}
		seen[r.policy] = true
		pol := st.Mask(r.policy)
		if pol == nil {
			issue = &Issue{Kind: IssueMissingPolicy, Policy: r.policy, Column: c.Name, Reason: "the attached masking policy does not exist"}
			continue
		}
		if !fits(pol, c) {
			if r.direct {
				issue = &Issue{Kind: IssueTypeMismatch, Policy: pol.Name, Column: c.Name,
					Reason: fmt.Sprintf("column %s is %s now, which the policy does not take", c.Name, c.Type)}
			}
			continue
		}
		if picked != nil {
			// Authoring refuses this; a schema change can still bring it
			// about. The name order decides, and the conflict is reported.
			a, b := picked.Name, pol.Name
			if b < a {
				picked = pol
				a, b = b, a
			}
			issue = &Issue{Kind: IssueConflict, Policy: b, Column: c.Name,
				Reason: fmt.Sprintf("column %s is also masked by %s; one mask per column", c.Name, a)}
			continue
		}
		picked = pol
	}
	if picked == nil {
		return Mask{}, issue, false
	}
	expr, err := MaskExpr(picked, c)
	if err != nil {
		return Mask{}, &Issue{Kind: IssueBadBody, Policy: picked.Name, Column: c.Name, Reason: err.Error()}, false
	}
	return Mask{Column: c.Name, ColumnID: c.ID, Policy: picked.Name, Action: picked.Action, Expr: expr, FileLayer: picked.FileLayer}, issue, true
}

// fits reports whether policy pol can mask column c.
func fits(pol *model.MaskingPolicy, c *Column) bool {
	if pol.ArgType != "" {
		typ, err := model.SQLType(c.Type)
		if err != nil || typ != pol.ArgType {
			return false
		}
	}
	if pol.Action != model.ActionNone {
		return pol.Action.AppliesTo(c.Type, c.Nullable)
	}
	return pol.ArgType != ""
}

// MaskExpr is the DuckDB expression applying pol to column c.
func MaskExpr(pol *model.MaskingPolicy, c *Column) (string, error) {
	col, err := sqltext.Ident(c.Name)
	if err != nil {
		return "", err
	}
	if pol.Action != model.ActionNone {
		return pol.Action.Expr(col, c.Type, c.Nullable)
	}
	typ, err := model.SQLType(c.Type)
	if err != nil {
		return "", err
	}
	toks, err := sqltext.Expression(pol.Body)
	if err != nil {
		return "", fmt.Errorf("the policy body does not lex: %w", err)
	}
	param := strings.ToLower(pol.Param)
	if param == "" {
		param = "val"
	}
	body := sqltext.Substitute(toks, map[string]string{param: col})
	return "CAST((" + body + ") AS " + typ + ")", nil
}

// bindFilter binds a row-access policy's columns to the table's current
// column names: through the attachment's column ids when it has them (a
// rename keeps working), by name otherwise.
func bindFilter(pol *model.RowPolicy, a model.Attachment, byLower map[string]*Column, byID map[int64]*Column) (RowFilter, *Issue) {
	toks, err := sqltext.Expression(pol.Body)
	if err != nil {
		return RowFilter{}, &Issue{Kind: IssueBadBody, Policy: pol.Name, Reason: fmt.Sprintf("the policy body does not lex: %v", err)}
	}
	repl := make(map[string]string, len(pol.Columns))
	var cols []string
	for _, name := range pol.Columns {
		key := strings.ToLower(name)
		var c *Column
		if id, ok := a.Bindings[key]; ok {
			c = byID[id]
		} else {
			c = byLower[key]
		}
		if c == nil {
			return RowFilter{}, &Issue{Kind: IssueMissingColumn, Policy: pol.Name, Column: name,
				Reason: fmt.Sprintf("the table has no column %s, which the policy reads", name)}
		}
		q := sqltext.MustIdent(c.Name)
		repl[key] = q
		cols = append(cols, c.Name)
	}
	return RowFilter{Policy: pol.Name, Expr: sqltext.Substitute(toks, repl), Columns: cols}, nil
}

// signature hashes the plan's shape: the table and every column's
// identity (so a schema change rotates it), each mask (column, policy,
// expression) and each filter (policy, expression).
func signature(t *Table, pl *Plan) string {
	h := sha256.New()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(strconv.Itoa(len(p))))
			h.Write([]byte{':'})
			h.Write([]byte(p))
		}
	}
	w("table", strconv.FormatInt(t.TableID, 10))
	for _, c := range t.Columns {
		w("col", strconv.FormatInt(c.ID, 10), c.Name, c.Type.String(), strconv.FormatBool(c.Nullable))
	}
	for _, m := range pl.Masks {
		w("mask", strconv.FormatInt(m.ColumnID, 10), m.Policy, m.Expr, strconv.FormatBool(m.FileLayer))
	}
	for _, f := range pl.RowFilters {
		w("filter", f.Policy, f.Expr)
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// viewSQL is the masking SELECT over the table by its name.
func viewSQL(t *Table, pl *Plan) string {
	return pl.SelectFrom(t, sqltext.MustIdent(t.Namespace)+"."+sqltext.MustIdent(t.Name))
}

// SelectFrom is the plan's SELECT over source, a relation (a quoted table
// name, or a subquery in parentheses with an alias) with t's columns: the
// filters on raw rows in an inner query, the masks over its result, every
// column under its own name. Exports read a snapshot and one file with it;
// views the table by name (ViewSQL).
func (pl *Plan) SelectFrom(t *Table, source string) string {
	masked := make(map[int64]string, len(pl.Masks))
	for _, m := range pl.Masks {
		masked[m.ColumnID] = m.Expr
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		col := sqltext.MustIdent(c.Name)
		if e, ok := masked[c.ID]; ok {
			b.WriteString(e)
			b.WriteString(" AS ")
		}
		b.WriteString(col)
	}
	b.WriteString(" FROM ")
	if pl.Filter == "" {
		b.WriteString(source)
	} else {
		b.WriteString("(SELECT * FROM ")
		b.WriteString(source)
		b.WriteString(" WHERE ")
		b.WriteString(pl.Filter)
		b.WriteString(") AS ")
		b.WriteString(sqltext.MustIdent(t.Name))
	}
	return b.String()
}

// TableOf is the planning view of DuckLake table t of namespace ns with
// top-level fields fields (ducklake.Reader.Columns).
func TableOf(ns string, t ducklake.Table, fields []ducklake.Field) *Table {
	tb := &Table{SchemaID: t.SchemaID, TableID: t.ID, Namespace: ns, Name: t.Name, Columns: make([]Column, len(fields))}
	for i, f := range fields {
		tb.Columns[i] = Column{ID: f.ID, Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return tb
}
