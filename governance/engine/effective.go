package engine

import (
	"context"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/plan"
)

// Effective is GET …/governance/effective-policies: the policies that
// reach a table (whether or not the principal bypasses them) and the plan
// enforced for the principal.
type Effective struct {
	Principal string   `json:"principal"`
	Actor     string   `json:"actor"`
	Channel   string   `json:"channel"`
	Table     string   `json:"table"`
	Roles     []string `json:"roles"`
	// Derived is every policy that reaches the table.
	Derived Derived `json:"derived"`
	// Plan is what is enforced for the principal.
	Plan EnforcedPlan `json:"plan"`
}

// Derived lists the policies that reach a table.
type Derived struct {
	MaskingPolicies   []DerivedPolicy `json:"masking-policies"`
	RowAccessPolicies []DerivedPolicy `json:"row-access-policies"`
	Allowlisted       bool            `json:"allowlisted"`
}

// DerivedPolicy is a policy reaching the table, and whether the principal
// bypasses it (holds one of its unmasked-roles).
type DerivedPolicy struct {
	Policy   string `json:"policy"`
	Column   string `json:"column,omitempty"`
	Bypassed bool   `json:"bypassed"`
}

// EnforcedPlan is the plan, as the API shows it.
type EnforcedPlan struct {
	Visible       bool           `json:"visible"`
	Tier          string         `json:"tier"`
	MaskedColumns []MaskedColumn `json:"masked-columns"`
	RowFilter     string         `json:"row-filter,omitempty"`
	RowPolicies   []string       `json:"row-policies"`
	ViewSQL       string         `json:"view-sql,omitempty"`
	Signature     string         `json:"signature,omitempty"`
	PolicyIDs     []string       `json:"policy-ids"`
	Issues        []string       `json:"issues,omitempty"`
}

// MaskedColumn is one masked column of a plan.
type MaskedColumn struct {
	Column     string `json:"column"`
	Policy     string `json:"policy"`
	Action     string `json:"action,omitempty"`
	Expression string `json:"expression"`
	FileLayer  bool   `json:"file-layer-masking"`
}

// Effective derives the policies of ns.table for p; ok is false when the
// table does not exist.
func (e *Engine) Effective(ctx context.Context, p *governance.Principal, ns, table string) (Effective, bool, error) {
	t, err := e.TableByName(ctx, ns, table)
	if err != nil || t == nil {
		return Effective{}, false, err
	}
	st := e.state.Load()
	roles := e.rolesOf(st, p).roles
	pl := e.Plan(p, t, e.cat.Load().schemaVersion)
	// Everything that reaches the table: the plan of a principal who
	// bypasses nothing and sees everything.
	all := plan.Build(st, plan.Principal{SeesAll: true}, t, plan.Options{})
	_, listed := st.Allowlist(t.SchemaID, t.TableID)
	out := Effective{
		Principal: p.ID, Actor: p.ActorOrDefault(), Channel: p.ChannelOrDefault(), Table: ns + "." + table, Roles: append([]string{}, roles...),
		Derived: Derived{MaskingPolicies: []DerivedPolicy{}, RowAccessPolicies: []DerivedPolicy{}, Allowlisted: listed},
		Plan: EnforcedPlan{Visible: pl.Visible, Tier: pl.Tier.String(), MaskedColumns: []MaskedColumn{}, RowFilter: pl.Filter,
			RowPolicies: []string{}, ViewSQL: pl.ViewSQL, Signature: pl.Signature, PolicyIDs: append([]string{}, pl.PolicyIDs...)},
	}
	enforced := map[string]bool{}
	for _, m := range pl.Masks {
		enforced["m:"+m.Policy+":"+m.Column] = true
		out.Plan.MaskedColumns = append(out.Plan.MaskedColumns, MaskedColumn{Column: m.Column, Policy: m.Policy, Action: string(m.Action),
			Expression: m.Expr, FileLayer: m.FileLayer})
	}
	for _, f := range pl.RowFilters {
		enforced["r:"+f.Policy] = true
		out.Plan.RowPolicies = append(out.Plan.RowPolicies, f.Policy)
	}
	for _, m := range all.Masks {
		out.Derived.MaskingPolicies = append(out.Derived.MaskingPolicies, DerivedPolicy{Policy: m.Policy, Column: m.Column,
			Bypassed: pl.Visible && !enforced["m:"+m.Policy+":"+m.Column]})
	}
	for _, f := range all.RowFilters {
		out.Derived.RowAccessPolicies = append(out.Derived.RowAccessPolicies, DerivedPolicy{Policy: f.Policy,
			Bypassed: pl.Visible && !enforced["r:"+f.Policy]})
	}
	for _, is := range pl.Issues {
		out.Plan.Issues = append(out.Plan.Issues, is.Policy+": "+is.Reason)
	}
	return out, true, nil
}
