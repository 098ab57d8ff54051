package rest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/sqltext"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/duckenv"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DuckLake-direct vends: GET /v1/{prefix}/namespaces/{ns}/ducklake-credentials
// [?table=t] hands a DuckDB client what it needs to ATTACH the DuckLake
// catalog itself, governed: a fresh Postgres reader role (governance/
// pgaccess) that sees, through row-level security, only the tables the
// principal's plans let it see in the vend's scope (the table, or the
// namespace), their files only where it may read their bytes raw; a
// read-only gateway credential for the same scope; and the statements to
// run. Every vend, granted or refused, is audited.

// DuckLakeDirect configures DuckLake-direct vends.
type DuckLakeDirect struct {
	// Access creates the reader roles.
	Access *pgaccess.Access
	// OwnerDSN is the catalog's DSN: reader DSNs take its host, port,
	// database and TLS settings (never its user or password).
	OwnerDSN string
	// TTL is a reader role's lifetime (the catalog's vend TTL when zero),
	// capped by the caller's token.
	TTL time.Duration
}

// ducklakeCredentials is the vend's answer.
type ducklakeCredentials struct {
	Role      string `json:"role"`
	DSN       string `json:"dsn"`
	ExpiresAt string `json:"expires_at"`
	Alias     string `json:"alias"`
	DataPath  string `json:"data_path"`
	// Attach is the ATTACH statement (read-only); SecretSQL the CREATE
	// SECRET for the gateway credential; PostAttachSQL what to run after
	// attaching, in order.
	Attach        string   `json:"attach"`
	SecretSQL     string   `json:"secret_sql,omitempty"`
	PostAttachSQL []string `json:"post_attach_sql"`
	// StorageCredentials is the gateway credential, as Iceberg's
	// LoadCredentials has it.
	StorageCredentials []storageCredential `json:"storage-credentials"`
	// Tables are the tables the role sees, and Restricted those of them it
	// sees without their rows (masked or filtered for this principal with
	// no masking view to serve them — a table whose masking views are
	// disabled, an airtight table on a catalog that makes no masked
	// copies — so their base rows stay hidden rather than served raw).
	// MaskedViews are the masking views (schema.table) the principal reads
	// the other governed tables through: over the base rows (cooperative
	// tier) or over the masked copy's files (airtight tier, whose base
	// rows stay hidden too).
	Tables      []string `json:"tables"`
	Restricted  []string `json:"restricted_tables"`
	MaskedViews []string `json:"masked_views"`
	// MaskingSchema holds the masking views (post_attach_sql puts it
	// first on the search path); absent when no table is masked by view.
	MaskingSchema string `json:"masking_schema,omitempty"`
	Enforcement   string `json:"enforcement"`
}

// directAlias is the attach alias the statements use.
const directAlias = "lake"

// ducklakeCredentials serves the vend.
func (s *Server) ducklakeCredentials(r *request) error {
	if !r.rc.IsGet() {
		return methodNotAllowed(r.rc, "GET")
	}
	p := s.governancePrincipal(r)
	args := r.rc.QueryArgs()
	if v := string(args.Peek("actor")); v != "" {
		// A session may declare itself an agent (never the reverse).
		if v != governance.ActorAgent && v != governance.ActorHuman {
			return badRequest("actor must be human or agent")
		}
		if v == governance.ActorAgent {
			p.Actor = v
		}
	}
	r.table = string(args.Peek("table"))
	out, err := s.vendDirect(r, &p, args)
	if aerr := s.auditDirect(r, &p, out, err); aerr != nil && err == nil {
		// A vend not on the record is not handed out (its role expires
		// unused).
		return errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "the audit trail is unavailable; no credential was vended")
	}
	if err != nil {
		return err
	}
	r.rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	return writeJSON(r.rc, out)
}

func (s *Server) vendDirect(r *request, p *governance.Principal, args *fasthttp.Args) (*ducklakeCredentials, error) {
	// Read on the namespace is the route's (authorizeRoute).
	if w := string(args.Peek("write")); w != "" && w != "0" && w != "false" {
		if p.ActorOrDefault() == governance.ActorAgent {
			return nil, forbidden("%s: an agent session is vended no write access", governance.ReasonAgentReadOnly)
		}
		if !s.principalAllows(r.p, governance.ActionCommitTable, r.ns) {
			return nil, forbidden("the token may not change namespace %s", r.ns)
		}
		// DuckLake's commit writes ducklake_snapshot and
		// ducklake_snapshot_changes rows that name no table, and allocates
		// catalog and file ids for the whole catalog in them: RLS cannot
		// confine that to a namespace, so no write role is vended.
		return nil, badRequest("write vends are not offered: a DuckLake commit writes catalog-wide rows (snapshots, their change lists, id counters) " +
			"that row-level security cannot confine to a namespace; write through the Iceberg REST API or with the owner's credentials")
	}
	if s.gov == nil || s.gov.Direct == nil || s.gov.Direct.Access == nil {
		return nil, unsupported("%s", "DuckLake-direct vends are not configured on this catalog (they need governance and the catalog's Postgres)")
	}
	d := s.gov.Direct
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return nil, err
	}
	schemas, err := s.reader.Schemas(r.ctx, snap)
	if err != nil {
		return nil, err
	}
	var schema *ducklake.Schema
	for i := range schemas {
		if schemas[i].Name == r.ns {
			schema = &schemas[i]
		}
	}
	if schema == nil {
		return nil, noSuchNamespace(r.ns)
	}
	if r.table != "" {
		if _, err := s.tableAt(r.ctx, snap, r.ns, r.table); err != nil {
			return nil, err
		}
	}
	// The masking views are the namespace's whole set for this principal
	// whatever the scope, so a table's vend, a namespace's vend and
	// LoadTable name one schema.
	planned, views, err := s.planNamespace(r.ctx, p, r.ns, schema.ID, snap)
	if err != nil {
		s.log.Error("governance: plan failed; no DuckLake-direct vend", zap.String("namespace", r.ns), zap.Error(err))
		return nil, errGovernanceUnavailable
	}

	out := &ducklakeCredentials{Alias: directAlias, DataPath: s.dataPath, Tables: []string{}, Restricted: []string{},
		MaskedViews: []string{}, PostAttachSQL: []string{}, StorageCredentials: []storageCredential{}, Enforcement: "row-level-security"}
	var grants []pgaccess.TableAccess
	var scope []ducklake.Table
	var exports []objstore.Location // the masked copies the views read
	for _, pt := range planned {
		t := pt.table
		if r.table != "" && t.Name != r.table {
			continue
		}
		scope = append(scope, t)
		if !pt.plan.Visible {
			if r.table != "" {
				return nil, noSuchTable(r.ns, r.table)
			}
			continue
		}
		if pt.exportErr != nil {
			// Its masked copy cannot be made: no vend rather than a
			// table the principal cannot read (or, worse, its base rows).
			// The reason is in the log: a copy's error may quote the data.
			return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
				"table %s.%s is masked on the bytes for this principal and its masked copy could not be made; no credential was vended (see the catalog log)",
				r.ns, t.Name)
		}
		// A governed table in the cooperative tier is read through its
		// masking view, which DuckDB runs over the base rows: the reader
		// sees those (a qualified base name reads them raw — the tier's
		// boundary). An airtight table is read through a masking view
		// over its masked copy's files, its base rows hidden (a qualified
		// base name reads nothing). Any other governed table keeps its
		// base rows hidden: served raw they would skip the masks and
		// filters.
		files := !pt.plan.Governed() || pt.viewed && pt.exported == nil
		grants = append(grants, pgaccess.TableAccess{TableID: t.ID, Files: files})
		out.Tables = append(out.Tables, r.ns+"."+t.Name)
		if !files && !pt.viewed {
			out.Restricted = append(out.Restricted, r.ns+"."+t.Name)
		}
		if pt.exported != nil {
			exports = append(exports, pt.exported.Root)
		}
	}
	if r.table != "" && len(scope) == 0 {
		return nil, noSuchTable(r.ns, r.table) // dropped meanwhile
	}

	ttl := d.TTL
	if ttl <= 0 {
		ttl = s.cfg.VendTTL
	}
	if ttl <= 0 {
		ttl = time.Hour
	}
	exp := s.now().Add(ttl)
	if !r.p.Expiry.IsZero() && r.p.Expiry.Before(exp) {
		exp = r.p.Expiry
	}
	scopeName := r.ns
	if r.table != "" {
		scopeName += "." + r.table
	}
	role, err := d.Access.CreateRole(r.ctx, pgaccess.Grant{Principal: p.ID, Scope: scopeName, Tables: grants, Expiry: exp})
	if err != nil {
		var ue *pgaccess.UnknownTableError
		switch {
		case errors.As(err, &ue):
			s.log.Error("DuckLake-direct: a catalog table cannot be policed; no reader role vended", zap.Strings("tables", ue.Tables))
			return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable,
				"the DuckLake catalog holds tables this catalog build cannot police with row-level security; no reader role is vended (see the catalog log)")
		case errors.Is(err, pgaccess.ErrNoExpiry):
			return nil, forbidden("the token expires too soon for a DuckLake-direct vend")
		}
		s.log.Error("DuckLake-direct: reader role not created", zap.Error(err))
		return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "no reader role could be created; retry")
	}
	out.Role, out.ExpiresAt = role.Name, role.Expiry.Format(time.RFC3339)
	if out.DSN, err = pgaccess.ReaderDSN(d.OwnerDSN, role); err != nil {
		return nil, err
	}
	if out.Attach, err = pgaccess.Attach(directAlias, out.DSN, s.cfg.Schema, s.dataPath); err != nil {
		return nil, err
	}
	out.PostAttachSQL = append(out.PostAttachSQL, "USE "+sqltext.MustIdent(directAlias)+"."+sqltext.MustIdent(r.ns))
	if len(views.Views) > 0 {
		// The masking schema first on the search path (USE resets it, so
		// after it): an unqualified name finds the masking view of a
		// governed table and the base table of any other.
		masked, err := s.gov.MaskViews.Ensure(r.ctx, &views, exp)
		if err != nil {
			s.log.Error("masking views: not written; no DuckLake-direct vend", zap.String("namespace", r.ns), zap.Error(err))
			return nil, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "the masking views could not be written; no credential was vended; retry")
		}
		for _, v := range views.Views {
			if r.table == "" || v.Table == r.table {
				out.MaskedViews = append(out.MaskedViews, masked+"."+v.Table)
			}
		}
		out.MaskingSchema = masked
		path, err := sqltext.String(sqltext.MustIdent(directAlias) + "." + sqltext.MustIdent(masked) + "," +
			sqltext.MustIdent(directAlias) + "." + sqltext.MustIdent(r.ns))
		if err != nil {
			return nil, badRequest("namespace %q cannot be put on a search path", r.ns)
		}
		out.PostAttachSQL = append(out.PostAttachSQL, "SET search_path = "+path)
	}

	// The gateway credential: read-only, the table's path (its masked
	// copy's for a principal held to it) or the namespace's.
	// A namespace-wide credential names no table: it is unbound.
	target := ducklake.Table{Name: r.table, Path: schema.Path}
	var bind creds.TableBinding
	if r.table != "" {
		if target, _, err = s.vendTarget(r, scope[0], snap); err != nil {
			return nil, err
		}
		if bind, err = bindTo(r.ns, target, snap); err != nil {
			return nil, err
		}
	}
	// A namespace's credential reads, besides, the masked copies its
	// masking views read (a table's is the copy's already); the gateway
	// serves a copy only to a principal whose plan has its signature, and
	// the base files of an airtight table to no one masked.
	var also []string
	if r.table == "" {
		for _, root := range exports {
			also = append(also, root.String())
		}
	}
	scs, err := s.vendAlso(r.p, r.ns, target, true, bind, also)
	if err != nil {
		return nil, err
	}
	if len(scs) > 0 {
		out.StorageCredentials = append(out.StorageCredentials, scs...)
		sc := scs[0]
		var more []string
		for _, c := range scs[1:] {
			more = append(more, c.Prefix)
		}
		if out.SecretSQL, err = duckenv.SecretSQL("duckicelake_"+directAlias, duckenv.S3{Endpoint: s.cfg.GatewayURL, Region: s.cfg.Region,
			AccessKeyID: sc.Config["s3.access-key-id"], Secret: sc.Config["s3.secret-access-key"], SessionToken: sc.Config["s3.session-token"],
			PathStyle: true, Scope: sc.Prefix, Scopes: more}); err != nil {
			return nil, fmt.Errorf("DuckLake-direct secret: %w", err)
		}
	}
	return out, nil
}

// auditDirect records a vend: who, what scope, granted or why not.
func (s *Server) auditDirect(r *request, p *governance.Principal, out *ducklakeCredentials, err error) error {
	ev := governance.Event{Source: governance.SourceCatalog, RequestID: r.rc.Request.Header.Peek("X-Request-Id"),
		Method: r.rc.Method(), Action: governance.ActionVendDuckLake.String(), Principal: p.ID, Actor: p.ActorOrDefault(),
		Channel: p.ChannelOrDefault(), Namespace: r.ns, Table: r.table, Status: fasthttp.StatusOK}
	if err != nil {
		e := &Error{Code: fasthttp.StatusInternalServerError, Type: TypeInternalServerError, Message: "internal error"}
		errors.As(err, &e) // writeError logs what is not an *Error
		ev.Decision, ev.Reason, ev.Status, ev.Error = governance.OutcomeDeny, e.Message, e.Code, e.Type
		s.log.Info("DuckLake-direct vend refused", zap.String("principal", p.ID), zap.String("namespace", r.ns),
			zap.String("table", r.table), zap.Int("status", e.Code), zap.String("reason", e.Message))
	} else {
		ev.Decision, ev.Reason = governance.OutcomeAllow, "reader role "+out.Role+" vended"
	}
	// A vend discloses: on the trail before the answer.
	if err := governance.RecordSync(r.ctx, s.sink, &ev); err != nil {
		s.log.Error("DuckLake-direct vend: audit trail write failed", zap.String("principal", p.ID), zap.Error(err))
		return err
	}
	return nil
}

// maskingViewSQL is the masking view's SELECT for plan pl of table pt in
// namespace ns, over the base table in whatever catalog the reader
// attached (maskview.CatalogRef).
func maskingViewSQL(pl *plan.Plan, pt *plan.Table, ns string) string {
	return pl.SelectFrom(pt, maskview.CatalogRef+"."+sqltext.MustIdent(ns)+"."+sqltext.MustIdent(pt.Name))
}

// maskingDisabled says which of tables have masking views switched off
// (commit.MaskingDisabledProperty), in one query.
func (s *Server) maskingDisabled(ctx context.Context, tables []ducklake.Table) (map[int64]bool, error) {
	ids := make([]int64, len(tables))
	for i, t := range tables {
		ids[i] = t.ID
	}
	return s.cat.TablesFlagged(ctx, s.db, ids, commit.MaskingDisabledProperty)
}
