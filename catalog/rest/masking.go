package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/export"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// Masking views over REST. A principal's masking views for a namespace
// (catalog/maskview: one schema per plan shape, a view per governed table
// under the table's own name — over the base table in the cooperative
// tier, over the files of its masked copy in the airtight tier) are what DuckDB
// runs on the DuckLake-direct path; the same views are served here, read
// only, to the principal whose plans they are: LoadTable of a governed
// table advertises its view (duckicelake.masking-view-name), and the
// views API loads it. To everyone else a masking schema does not exist —
// it is in no listing, and any request naming it answers as for a
// namespace that was never there, so its name (a signature of someone's
// plans) discloses nothing.

// plannedTable is a table of a namespace with what governance makes of it
// for one principal.
type plannedTable struct {
	table ducklake.Table
	plan  plan.Plan
	pt    *plan.Table
	// viewed: read through its masking view (governed, masking views not
	// disabled on it; for the airtight tier, a view over its masked copy).
	viewed bool
	// exported is the masked copy an airtight table's view reads (nil in
	// the cooperative tier); exportErr why there is none when there should
	// be one — the table is then in no view and its base rows stay hidden.
	exported  *export.Export
	exportErr error
}

// planNamespace plans every table of namespace ns (schema schemaID) at
// snapshot snap for p, visible or not, and returns the masking-view set
// of the visible ones that are read through a view.
func (s *Server) planNamespace(ctx context.Context, p *governance.Principal, ns string, schemaID, snap int64) ([]plannedTable, maskview.Set, error) {
	set := maskview.Set{Namespace: ns}
	all, err := s.reader.Tables(ctx, snap)
	if err != nil {
		return nil, set, err
	}
	var tables []ducklake.Table
	for _, t := range all {
		if t.SchemaID == schemaID {
			tables = append(tables, t)
		}
	}
	disabled, err := s.maskingDisabled(ctx, tables)
	if err != nil {
		return nil, set, err
	}
	out := make([]plannedTable, 0, len(tables))
	for _, t := range tables {
		pl, pt, ok, err := s.gov.Engine.PlanTable(ctx, p, ns, t.Name)
		if err != nil {
			return nil, set, fmt.Errorf("plan %s.%s: %w", ns, t.Name, err)
		}
		if !ok {
			continue // dropped meanwhile
		}
		pt2 := plannedTable{table: t, plan: pl, pt: pt}
		if pl.Visible && pl.Governed() && s.gov.MaskViews != nil && !disabled[t.ID] {
			switch pl.Tier {
			case plan.TierCooperative:
				pt2.viewed = true
				set.Add(maskview.View{Table: t.Name, SQL: maskingViewSQL(&pl, pt, ns)})
			case plan.TierAirtight:
				if s.gov.Exports == nil {
					break // no copy to read: the base rows stay hidden
				}
				view, e, err := s.exportView(ctx, pt, &pl, snap)
				if err != nil {
					pt2.exportErr = err
					break
				}
				pt2.viewed, pt2.exported = true, e
				set.Add(view)
			}
		}
		out = append(out, pt2)
	}
	return out, set, nil
}

// maskSchemaEntry is a principal's (id, actor, channel) masking schema
// for a namespace, remembered while neither the governance state nor the
// catalog changed, so a governed LoadTable names its view without planning
// the namespace again (Server.maskSchemas).
type maskSchemaEntry struct {
	version, snap int64
	schema        string    // "" when no table of the namespace is viewed
	tables        []string  // the viewed tables, sorted
	lease         time.Time // the schema is leased until at least this
}

// maxMaskSchemas bounds Server.maskSchemas.
const maxMaskSchemas = 16384

// maskLease is how long a masking schema named to p must stay: until its
// token expires, or a vend TTL from now for a token without expiry.
func (s *Server) maskLease(p *Principal) time.Time {
	if p != nil && !p.Expiry.IsZero() {
		return p.Expiry
	}
	ttl := s.cfg.VendTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	return s.now().Add(ttl)
}

// maskingSchema is p's masking schema for namespace ns ("" when none of
// its tables is read through a view for p), written and leased until at
// least until, and the tables it holds views of.
func (s *Server) maskingSchema(ctx context.Context, p *governance.Principal, ns string, until time.Time) (string, []string, error) {
	if s.gov == nil || s.gov.MaskViews == nil {
		return "", nil, nil
	}
	st, err := s.currentState(ctx)
	if err != nil {
		return "", nil, err
	}
	version := s.gov.Engine.State().Version
	key := p.ID + "\x00" + p.ActorOrDefault() + "\x00" + p.ChannelOrDefault() + "\x00" + ns
	if e, ok := s.maskSchemas.Get(key); ok && e.version == version && e.snap == st.id && !e.lease.Before(until) {
		return e.schema, e.tables, nil
	}
	sc, err := s.schemaNamed(ctx, st.id, ns)
	if err != nil {
		return "", nil, err
	}
	_, set, err := s.planNamespace(ctx, p, ns, sc.ID, st.id)
	if err != nil {
		return "", nil, err
	}
	name, err := s.gov.MaskViews.Ensure(ctx, &set, until)
	if err != nil {
		return "", nil, err
	}
	tables := make([]string, len(set.Views))
	for i, v := range set.Views {
		tables[i] = v.Table
	}
	// Writing the schema made a snapshot: the entry is keyed at the
	// snapshot it was planned at, so the next call plans once more (the
	// plans are cached) and finds it written.
	s.maskSchemas.Put(key, maskSchemaEntry{version: version, snap: st.id, schema: name, tables: tables, lease: until.Add(time.Minute)})
	return name, tables, nil
}

// maskingViewName is the masking view (schema.table) through which p
// reads table of namespace ns, "" when it reads no view.
func (s *Server) maskingViewName(ctx context.Context, p *governance.Principal, rp *Principal, ns, table string) (string, error) {
	schema, tables, err := s.maskingSchema(ctx, p, ns, s.maskLease(rp))
	if err != nil || schema == "" {
		return "", err
	}
	if _, ok := slices.BinarySearch(tables, table); !ok {
		return "", nil
	}
	return schema + "." + table, nil
}

// authorizeMasking decides action a on masking schema ns for r's
// principal: reads of its own masking schema (its views, the namespace,
// the absence of tables in it) pass to the handler, other actions on it
// are refused as read-only; any other principal's request answers as for
// a namespace that does not exist.
func (s *Server) authorizeMasking(r *request, a governance.Action, ns string) error {
	own, err := s.ownsMaskingSchema(r, ns)
	if err != nil {
		s.log.Error("masking views: could not decide on a masking schema; denied", zap.String("namespace", ns), zap.Error(err))
		return errGovernanceUnavailable
	}
	if !own {
		s.log.Info("masking views: a masking schema not the caller's; answered as absent", zap.String("principal", r.p.Subject), zap.String("namespace", ns), zap.Stringer("action", a))
		switch {
		case r.view != "":
			return service.NoSuchView(ns, r.view)
		case r.table != "":
			return noSuchTable(ns, r.table)
		}
		return noSuchNamespace(ns)
	}
	switch a {
	case governance.ActionLoadView, governance.ActionListViews, governance.ActionLoadNamespace,
		governance.ActionLoadTable, governance.ActionListTables:
		return nil
	}
	return forbidden("namespace %s holds governance's masking views: it is read-only", ns)
}

// ownsMaskingSchema reports whether masking schema ns is r's principal's
// own: a live one whose base namespace its token may read and whose plans
// there make exactly this schema.
func (s *Server) ownsMaskingSchema(r *request, ns string) (bool, error) {
	if s.gov == nil || s.gov.MaskViews == nil {
		return false, nil
	}
	base, ok, err := s.gov.MaskViews.Namespace(r.ctx, ns)
	if err != nil || !ok {
		return false, err
	}
	if !s.principalAllows(r.p, governance.ActionLoadTable, base) {
		return false, nil
	}
	p := s.governancePrincipal(r)
	schema, _, err := s.maskingSchema(r.ctx, &p, base, s.maskLease(r.p))
	if err != nil {
		if e := (*Error)(nil); errors.Is(err, service.ErrNoSuchNamespace) || errors.As(err, &e) && e.Code == fasthttp.StatusNotFound {
			return false, nil // the base namespace is gone
		}
		return false, err
	}
	return schema == ns, nil
}

// maskingViewMetadata is the Iceberg metadata of masking view v of
// schema ns: the view as DuckLake holds it, its default namespace the base
// table's, its schema the base table's current one (a mask keeps its
// column's type).
func (s *Server) maskingViewMetadata(r *request, v *service.View, ns string) (*views.Metadata, string, error) {
	base, ok, err := s.gov.MaskViews.Namespace(r.ctx, ns)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", service.NoSuchView(ns, r.view)
	}
	md, loc, err := v.IcebergMetadata(base)
	if err != nil {
		return nil, "", err
	}
	br := *r
	br.ns, br.table = base, r.view
	e, err := s.loadEntry(&br, formRefs, 0)
	if err != nil {
		return nil, "", fmt.Errorf("masking view %s.%s: its table: %w", ns, r.view, err)
	}
	fields, err := currentFields(e.metadata)
	if err != nil {
		return nil, "", fmt.Errorf("masking view %s.%s: %w", ns, r.view, err)
	}
	md.Schemas = []views.Schema{views.NewSchema(0, fields)}
	if md.Properties == nil {
		md.Properties = map[string]string{}
	}
	md.Properties[propMaskedTable] = base + "." + r.view
	return md, loc, nil
}

// propMaskedTable names, on a masking view, the table it masks.
const propMaskedTable = "duckicelake.masked-table"

// currentFields is the fields array of the current schema of a table's
// metadata document.
func currentFields(meta []byte) (json.RawMessage, error) {
	var doc struct {
		Current *int `json:"current-schema-id"`
		Schemas []struct {
			ID     int             `json:"schema-id"`
			Fields json.RawMessage `json:"fields"`
		} `json:"schemas"`
	}
	if err := json.Unmarshal(meta, &doc); err != nil {
		return nil, fmt.Errorf("decode the table's metadata: %w", err)
	}
	if doc.Current == nil {
		return nil, fmt.Errorf("the table's metadata has no current-schema-id")
	}
	for _, sc := range doc.Schemas {
		if sc.ID == *doc.Current {
			return sc.Fields, nil
		}
	}
	return nil, fmt.Errorf("the table's metadata has no schema %d", *doc.Current)
}

// errExportUnapplicable stands for an airtight plan with policies that
// cannot be applied: no masked copy is made of it.
var errExportUnapplicable = errors.New("a governance policy on the table cannot be applied")

// exportView is the masking view of airtight table pt under plan pl: its
// masked copy current as of snapshot snap (built now when missing or
// behind), read by its files. The view's shape is the copy's (table and
// plan signature), so a refresh rewrites the view in place and the
// masking schema keeps its name.
func (s *Server) exportView(ctx context.Context, pt *plan.Table, pl *plan.Plan, snap int64) (maskview.View, *export.Export, error) {
	if len(pl.Issues) > 0 {
		return maskview.View{}, nil, errExportUnapplicable
	}
	e, err := s.gov.Exports.Ensure(ctx, pt, pl, snap)
	if err != nil {
		s.log.Error("governance: masked copy failed; no masking view over it", zap.String("table", pt.Namespace+"."+pt.Name), zap.Error(err))
		return maskview.View{}, nil, err
	}
	sql, err := exportViewSQL(pl, pt, e)
	if err != nil {
		return maskview.View{}, nil, err
	}
	return maskview.View{Table: pt.Name, SQL: sql, Shape: exportShape(pt, pl), Version: e.Snapshot}, e, nil
}

// exportShape is the shape of the masking view over the copy of (pt, pl).
func exportShape(pt *plan.Table, pl *plan.Plan) string {
	return "export t" + strconv.FormatInt(pt.TableID, 10) + "/" + pl.Signature
}

// exportViewSQL is the SELECT of the masking view over export e of pt
// under pl: the plan's columns, by name, from the copy's files (which hold
// the plan's output: filtered, masked, masked columns in the types their
// masks give). A copy with no rows has no file to read; the view is then
// the plan's SELECT over no rows of the table's types, so its columns keep
// the types the copy would have.
func exportViewSQL(pl *plan.Plan, pt *plan.Table, e *export.Export) (string, error) {
	var files []string
	for _, f := range e.Files {
		if f.Records == 0 {
			continue // every row filtered out
		}
		lit, err := sqltext.String(f.Location)
		if err != nil {
			return "", fmt.Errorf("masked copy of %s.%s: file %q: %w", pt.Namespace, pt.Name, f.Location, err)
		}
		files = append(files, lit)
	}
	var b strings.Builder
	if len(files) == 0 {
		b.WriteString("(SELECT ")
		for i, c := range pt.Columns {
			typ, err := model.SQLType(c.Type)
			if err != nil {
				return "", fmt.Errorf("masked copy of %s.%s: column %s: %w", pt.Namespace, pt.Name, c.Name, err)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("CAST(NULL AS " + typ + ") AS " + sqltext.MustIdent(c.Name))
		}
		b.WriteString(" WHERE false) AS " + sqltext.MustIdent(pt.Name))
		return pl.SelectFrom(pt, b.String()), nil
	}
	b.WriteString("SELECT ")
	for i, c := range pt.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sqltext.MustIdent(c.Name))
	}
	b.WriteString(" FROM read_parquet([" + strings.Join(files, ", ") + "])")
	return b.String(), nil
}

// exportRefreshed moves the masking views over the copy of (t, pl) to the
// files of e, its refresh: an open DuckLake-direct session reads them on
// its next query (export.Manager.OnRefresh).
func (s *Server) exportRefreshed(ctx context.Context, t *plan.Table, pl *plan.Plan, e *export.Export) {
	sql, err := exportViewSQL(pl, t, e)
	if err == nil {
		_, err = s.gov.MaskViews.Replace(ctx, exportShape(t, pl), sql, e.Snapshot)
	}
	if err != nil {
		// The next vend's Ensure rewrites it; until then the view reads
		// the previous copy's files, which are kept past every credential
		// that could read them.
		s.log.Warn("masking views: not moved to a refreshed masked copy", zap.String("table", t.Namespace+"."+t.Name), zap.Error(err))
	}
}
