package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Enforcement on the catalog's table routes. The token's scope is checked
// by each handler; governance decides after it: an allowlisted table the
// principal may not see answers exactly as a missing table, a masked one
// is served stamped (the cooperative tier) or as its masked copy (the
// airtight tier).

var errGovernanceUnavailable = errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
	"governance could not decide about this table; retry")

// governTable decides a on table ns.table for r's principal, once its
// token's scope allows a (a scope refusal is the handler's to word, so it
// reads the same for a hidden table as for any other): a hidden table is
// NoSuchTable, any other denial a 403, an error denies (503).
func (s *Server) governTable(r *request, a governance.Action, ns, table string) error {
	if s.gov == nil || a == governance.ActionUnknown {
		return nil
	}
	p := s.governancePrincipal(r)
	res := governance.TableResource(ns, table)
	if d := governance.ScopeDecision(&p, a, &res); !d.Allow {
		return nil
	}
	d, err := s.gov.Engine.Authorize(r.ctx, &p, a, &res)
	if err != nil {
		s.log.Error("governance: table decision failed; denied", zap.String("table", ns+"."+table), zap.Error(err))
		return errGovernanceUnavailable
	}
	switch {
	case d.Allow:
		return nil
	case d.Hidden:
		return noSuchTable(ns, table)
	}
	return forbidden("%s", d.Reason)
}

// governedEntry is LoadTable's answer for r's principal: e itself for an
// ungoverned table, e stamped with the plan (cooperative tier), or the
// masked copy's shadow metadata (airtight tier). readOnly says the caller
// may not be vended write access.
func (s *Server) governedEntry(r *request, e *loadEntry, form byte, asOf int64) (_ *loadEntry, readOnly bool, _ error) {
	if s.gov == nil {
		return e, false, nil
	}
	p := s.governancePrincipal(r)
	pl, pt, ok, err := s.gov.Engine.PlanTable(r.ctx, &p, r.ns, r.table)
	if err != nil {
		s.log.Error("governance: plan failed; denied", zap.String("table", r.ns+"."+r.table), zap.Error(err))
		return nil, false, errGovernanceUnavailable
	}
	if !ok {
		return e, false, nil
	}
	if !pl.Visible {
		return nil, false, noSuchTable(r.ns, r.table)
	}
	if !pl.Governed() {
		return e, false, nil
	}
	if len(pl.Issues) > 0 {
		for _, is := range pl.Issues {
			s.log.Warn("governance: a policy cannot be applied", zap.String("table", r.ns+"."+r.table),
				zap.String("policy", is.Policy), zap.String("reason", is.Reason))
		}
		if s.gov.FailClosed || pl.Tier == plan.TierAirtight {
			return nil, false, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
				"a governance policy on table %s.%s cannot be applied (see the catalog log); the table is not served", r.ns, r.table)
		}
		// The cooperative tier fails open: what applies is stamped, the
		// rest is logged and on the request's audit record.
		r.reason, r.policies = unapplied(pl.Issues)
	}
	if pl.Tier == plan.TierAirtight {
		ge, err := s.shadowEntry(r, e, pt, &pl, form, asOf)
		return ge, true, err
	}
	// The masking view this principal reads the table through, for
	// view-capable engines (and DuckLake-direct sessions) to find.
	view, err := s.maskingViewName(r.ctx, &p, r.p, r.ns, r.table)
	if err != nil {
		s.log.Error("governance: masking view not named", zap.String("table", r.ns+"."+r.table), zap.Error(err))
		if s.gov.FailClosed {
			return nil, false, errGovernanceUnavailable
		}
		view = ""
	}
	ge, err := s.stampedEntry(e, pt, &pl, form, view)
	return ge, false, err
}

// govKey is the cache key of a governed answer: the ungoverned answer it
// derives from (its location says which table version) and the plan's
// signature.
func govKey(e *loadEntry, form byte, sig, tier string) []byte {
	return []byte(string(form) + "\x00" + e.location + "\x00" + sig + "\x00" + tier)
}

// stampedEntry is e with the plan stamped on its metadata and its
// read-restrictions and its masking view's name (view, "" for none),
// cached per (e, signature, view).
func (s *Server) stampedEntry(e *loadEntry, pt *plan.Table, pl *plan.Plan, form byte, view string) (*loadEntry, error) {
	key := govKey(e, form, pl.Signature, "c"+view)
	if g := s.govCache.get(key); g != nil {
		return g, nil
	}
	meta, err := stampMetadata(e.metadata, pt, pl, view)
	if err != nil {
		return nil, fmt.Errorf("stamp %s.%s: %w", pt.Namespace, pt.Name, err)
	}
	g := *e
	g.metadata = meta
	if g.restrictions, err = restrictionsJSON(pt, pl); err != nil {
		return nil, err
	}
	g.setBody(s.appendLoadResult(nil, &g, s.tableConfig, nil))
	g.etag = strings.TrimSuffix(e.etag, `"`) + "-" + pl.Signature + `"`
	s.govCache.put(key, &g)
	return &g, nil
}

// shadowEntry is LoadTable's answer from the masked copy: its shadow
// metadata (built now if there is none at the table's current state),
// stamped, with the table's path the copy's, so vending scopes credentials
// to the copy.
func (s *Server) shadowEntry(r *request, e *loadEntry, pt *plan.Table, pl *plan.Plan, form byte, asOf int64) (*loadEntry, error) {
	if s.gov.Exports == nil || s.objects == nil {
		return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
			"table %s.%s is masked on the bytes for this principal, and this catalog makes no masked copies; it is not served", r.ns, r.table)
	}
	exp, err := s.gov.Exports.Ensure(r.ctx, pt, pl, e.snap)
	if err != nil {
		s.log.Error("governance: masked copy failed; denied", zap.String("table", r.ns+"."+r.table), zap.Error(err))
		return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
			"the masked copy of table %s.%s could not be made; it is not served (see the catalog log)", r.ns, r.table)
	}
	if asOf != 0 && asOf != exp.Snapshot {
		return nil, errorf(fasthttp.StatusNotAcceptable, TypeUnsupported,
			"table %s.%s is masked on the bytes for this principal: only its current state exists as a masked copy "+
				"(snapshot %d); there is no masked copy of snapshot %d", r.ns, r.table, exp.Snapshot, asOf)
	}
	key := govKey(e, form, pl.Signature, "a"+exp.MetadataLocation)
	if g := s.govCache.get(key); g != nil {
		return g, nil
	}
	loc, err := objstore.Parse(exp.MetadataLocation)
	if err != nil {
		return nil, err
	}
	raw, err := s.objects.Get(r.ctx, loc, maxShadowMetadata)
	if err != nil {
		return nil, fmt.Errorf("read the shadow metadata of %s.%s: %w", r.ns, r.table, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("shadow metadata of %s.%s: %w", r.ns, r.table, err)
	}
	meta, err := stampMetadata(buf.Bytes(), pt, pl, "")
	if err != nil {
		return nil, err
	}
	g := *e
	g.table.Path = exp.Root.String()
	g.location, g.metadata = exp.MetadataLocation, meta
	if g.restrictions, err = restrictionsJSON(pt, pl); err != nil {
		return nil, err
	}
	g.setBody(s.appendLoadResult(nil, &g, s.tableConfig, nil))
	g.etag = `"` + pl.Signature + "-" + fmt.Sprint(exp.Snapshot) + `"`
	s.govCache.put(key, &g)
	return &g, nil
}

// vendTarget is where credentials for table t may reach for r's
// principal: the table's own path, or — for a principal held to the masked
// copy — the copy's, read-only (the copy is built now if it is missing).
func (s *Server) vendTarget(r *request, t ducklake.Table, snap int64) (ducklake.Table, bool, error) {
	if s.gov == nil {
		return t, false, nil
	}
	p := s.governancePrincipal(r)
	pl, pt, ok, err := s.gov.Engine.PlanTable(r.ctx, &p, r.ns, r.table)
	if err != nil {
		return t, false, errGovernanceUnavailable
	}
	if !ok || !pl.Governed() || pl.Tier != plan.TierAirtight {
		return t, false, nil
	}
	if s.gov.Exports == nil {
		return t, false, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
			"table %s.%s is masked on the bytes for this principal, and this catalog makes no masked copies", r.ns, r.table)
	}
	exp, err := s.gov.Exports.Ensure(r.ctx, pt, &pl, snap)
	if err != nil {
		s.log.Error("governance: masked copy failed; no credential vended", zap.String("table", r.ns+"."+r.table), zap.Error(err))
		return t, false, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
			"the masked copy of table %s.%s could not be made; no credential is vended", r.ns, r.table)
	}
	t.Path = exp.Root.String()
	return t, true, nil
}

// maxShadowMetadata bounds the shadow metadata.json read back.
const maxShadowMetadata = 64 << 20

// restrictionsJSON is the LoadTableResult's read-restrictions.
func restrictionsJSON(pt *plan.Table, pl *plan.Plan) ([]byte, error) {
	rr, _ := pl.ReadRestrictions(pt)
	if rr == nil {
		return nil, nil
	}
	return json.Marshal(rr)
}

// Properties the catalog stamps on a governed table's metadata; clients
// cannot set duckicelake.* properties themselves.
const (
	propMaskPrefix  = "duckicelake.mask."
	propRowFilter   = "iceberg.row-filter"
	propSignature   = "duckicelake.governance.signature"
	propTier        = "duckicelake.governance.tier"
	propMaskingView = "duckicelake.masking-view-name"
)

// stampMetadata adds the plan to a metadata document: per masked column a
// duckicelake.mask.<column> property (the DuckDB expression) and a note in
// the column's doc; the row filter as iceberg.row-filter; the plan's
// signature and tier; view, the masking view's name when there is one, as
// duckicelake.masking-view-name. It takes the statistics files out: they describe
// the raw data (NDV sketches, blob properties), which the principal may not
// see, and no masked statistics exist.
func stampMetadata(meta []byte, pt *plan.Table, pl *plan.Plan, view string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(meta, &doc); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	}
	delete(doc, "statistics")
	delete(doc, "partition-statistics")
	props := map[string]string{}
	if raw, ok := doc["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, fmt.Errorf("decode properties: %w", err)
		}
	}
	masked := map[int64]string{}
	for _, m := range pl.Masks {
		props[propMaskPrefix+m.Column] = m.Expr
		masked[m.ColumnID] = m.Policy
	}
	if pl.Filter != "" {
		props[propRowFilter] = pl.Filter
	}
	props[propSignature] = pl.Signature
	props[propTier] = pl.Tier.String()
	if view != "" {
		props[propMaskingView] = view
	}
	enc, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	doc["properties"] = enc
	if raw, ok := doc["schemas"]; ok && len(masked) > 0 {
		var schemas []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &schemas); err != nil {
			return nil, fmt.Errorf("decode schemas: %w", err)
		}
		for _, sc := range schemas {
			var fields []map[string]json.RawMessage
			if err := json.Unmarshal(sc["fields"], &fields); err != nil {
				return nil, fmt.Errorf("decode schema fields: %w", err)
			}
			for _, f := range fields {
				var id int64
				if err := json.Unmarshal(f["id"], &id); err != nil {
					continue
				}
				policy, ok := masked[id]
				if !ok {
					continue
				}
				var docText string
				if d, ok := f["doc"]; ok {
					_ = json.Unmarshal(d, &docText)
				}
				note := "masked by " + policy
				if docText != "" {
					docText += " (" + note + ")"
				} else {
					docText = note
				}
				f["doc"], _ = json.Marshal(docText)
			}
			if sc["fields"], err = json.Marshal(fields); err != nil {
				return nil, err
			}
		}
		if doc["schemas"], err = json.Marshal(schemas); err != nil {
			return nil, err
		}
	}
	return json.Marshal(doc)
}

// visibleTables filters the names of a listing to what p may see.
func (s *Server) visibleTables(r *request, ns string, names []string) ([]string, error) {
	if s.gov == nil || len(names) == 0 {
		return names, nil
	}
	p := s.governancePrincipal(r)
	rs := make([]governance.Resource, len(names))
	for i, n := range names {
		rs[i] = governance.TableResource(ns, n)
	}
	out := make([]governance.Decision, len(names))
	if err := s.gov.Engine.AuthorizeBatch(r.ctx, &p, governance.ActionLoadTable, rs, out); err != nil {
		s.log.Error("governance: listing decision failed; denied", zap.String("namespace", ns), zap.Error(err))
		return nil, errGovernanceUnavailable
	}
	kept := names[:0:0]
	for i, d := range out {
		if d.Allow || !d.Hidden {
			kept = append(kept, names[i])
		}
	}
	return kept, nil
}

// unapplied is the audit reason and policy ids of a fail-open answer: the
// policies of issues that could not be applied, and why (plan issues say
// nothing of the data).
func unapplied(issues []plan.Issue) (reason string, policies []string) {
	var b strings.Builder
	b.WriteString("fail open (governance.fail_closed is off): not applied: ")
	for i, is := range issues {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(is.Policy + ": " + is.Reason)
		if !slices.Contains(policies, is.Policy) {
			policies = append(policies, is.Policy)
		}
	}
	return b.String(), policies
}
