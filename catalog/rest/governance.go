package rest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/export"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/engine"
	"github.com/duckicelake/duckicelake/governance/store"
)

// Governance authoring and reading: /v1/{prefix}/governance/…, the seeds'
// API with its JSON field names. Authoring needs governance:admin (or *),
// reading governance:read; a principal may read its own effective policies
// and audit records with neither.

// Governance is what the catalog enforces and authors governance with.
type Governance struct {
	// Engine decides and plans; it is also the Authorizer the catalog and
	// the gateway share.
	Engine *engine.Engine
	// Admin authors.
	Admin *admin.Service
	// Store reads the audit trail.
	Store *store.Store
	// Exports makes the masked copies the airtight tier serves; nil
	// refuses tables a principal may read only masked on the bytes.
	Exports *export.Manager
	// FailClosed makes the cooperative tier deny on a governance error
	// instead of serving unmasked with an audit record.
	FailClosed bool
	// Direct vends DuckLake-direct reader roles; nil refuses the vends.
	Direct *DuckLakeDirect
	// MaskViews writes the masking views DuckDB executes (the cooperative
	// tier on the DuckLake-direct path and the REST views API); nil: none,
	// and governed tables keep their base rows hidden from reader roles.
	MaskViews *maskview.Manager
}

// changed makes this process enforce a change at once; the others learn of
// it by NOTIFY.
func (g *Governance) changed(ctx context.Context) {
	_ = g.Engine.Reload(ctx)
}

// typeConflict is the ErrorModel type of a 409 governance refusal: a
// second mask on a column, a delete of something still referenced.
const typeConflict = "ConflictException"

// governanceError maps an authoring refusal to the ErrorModel.
func governanceError(err error) error {
	var ae *admin.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Kind {
	case admin.NotFound:
		return errorf(fasthttp.StatusNotFound, TypeNotFound, "%s", ae.Msg)
	case admin.Conflict:
		return errorf(fasthttp.StatusConflict, typeConflict, "%s", ae.Msg)
	}
	return badRequest("%s", ae.Msg)
}

var errNoGovernance = errorf(fasthttp.StatusNotAcceptable, TypeUnsupported,
	"governance is not configured on this catalog")

// governancePrincipal is the caller as governance sees it.
func (s *Server) governancePrincipal(r *request) governance.Principal { return s.principalOf(r.p) }

// principalOf is p as governance sees it.
func (s *Server) principalOf(p *Principal) governance.Principal { return p.govPrincipal(s.cfg.Name) }

func (s *Server) author(r *request) admin.Author {
	return admin.Author{Principal: s.governancePrincipal(r), RequestID: string(r.rc.Request.Header.Peek("X-Request-Id"))}
}

// governanceKind is one kind of governance object and what the API does
// with it. One row per kind drives both the routes (routes.go) and the
// handlers, so a kind's authoring, deleting and reading are stated once.
type governanceKind struct {
	// kind is the path segment and the key a listing is answered under.
	kind string
	// names is the path of one object after the kind's ("/{name}",
	// "/{name}/{name2}"): get and delete by name. "" for an association,
	// which is deleted by the same body that made it and has no GET.
	names string
	put   func(*Server, *request) (any, error)
	del   func(*Server, *request, []string) error
	list  func(*request, *admin.Snapshot) (any, error)
	get   func(*admin.Snapshot, []string) (any, error)
}

// governanceKinds are the seeds' governance objects.
var governanceKinds = []governanceKind{
	{kind: "tags", names: "/{name}/{name2}", put: putWith((*admin.Service).PutTag),
		del: func(s *Server, r *request, n []string) error {
			return s.gov.Admin.DeleteTag(r.ctx, s.author(r), n[0], n[1])
		},
		list: func(_ *request, sn *admin.Snapshot) (any, error) { return sn.Tags(), nil },
		get:  func(sn *admin.Snapshot, n []string) (any, error) { return sn.Tag(n[0], n[1]) }},
	{kind: "masking-policies", names: "/{name}", put: putWith((*admin.Service).PutMaskingPolicy),
		del:  deleteNamed((*admin.Service).DeleteMaskingPolicy),
		list: func(_ *request, sn *admin.Snapshot) (any, error) { return sn.MaskingPolicies(), nil },
		get:  func(sn *admin.Snapshot, n []string) (any, error) { return sn.MaskingPolicy(n[0]) }},
	{kind: "row-access-policies", names: "/{name}", put: putWith((*admin.Service).PutRowAccessPolicy),
		del:  deleteNamed((*admin.Service).DeleteRowAccessPolicy),
		list: func(_ *request, sn *admin.Snapshot) (any, error) { return sn.RowAccessPolicies(), nil },
		get:  func(sn *admin.Snapshot, n []string) (any, error) { return sn.RowAccessPolicy(n[0]) }},
	{kind: "roles", names: "/{name}", put: putWith((*admin.Service).PutRole),
		del:  deleteNamed((*admin.Service).DeleteRole),
		list: func(_ *request, sn *admin.Snapshot) (any, error) { return sn.Roles(), nil },
		get:  func(sn *admin.Snapshot, n []string) (any, error) { return sn.Role(n[0]) }},
	{kind: "object-tags", put: putWith((*admin.Service).PutObjectTag), del: deleteByBody((*admin.Service).DeleteObjectTag),
		list: func(r *request, sn *admin.Snapshot) (any, error) { return sn.ObjectTags(r.ctx) }},
	{kind: "policy-attachments", put: putWith((*admin.Service).PutAttachment), del: deleteByBody((*admin.Service).DeleteAttachment),
		list: func(r *request, sn *admin.Snapshot) (any, error) { return sn.Attachments(r.ctx) }},
	{kind: "role-grants", put: putWith((*admin.Service).PutRoleGrant), del: deleteByBody((*admin.Service).DeleteRoleGrant),
		list: func(r *request, sn *admin.Snapshot) (any, error) {
			return sn.RoleGrants(string(r.rc.QueryArgs().Peek("principal"))), nil
		}},
	{kind: "object-grants", put: putWith((*admin.Service).PutObjectGrant), del: deleteByBody((*admin.Service).DeleteObjectGrant),
		list: func(r *request, sn *admin.Snapshot) (any, error) { return sn.ObjectGrants(r.ctx) }},
}

// putWith is the put of a kind authored by put: r's body decoded as a T
// and applied; the answer echoes what was applied. A malformed body is
// the readJSON 400 as it is.
func putWith[T any](put func(*admin.Service, context.Context, admin.Author, T) error) func(*Server, *request) (any, error) {
	return func(s *Server, r *request) (any, error) {
		var in T
		if err := s.readJSON(r.rc, &in); err != nil {
			return nil, err
		}
		return in, put(s.gov.Admin, r.ctx, s.author(r), in)
	}
}

// deleteNamed is the delete of a kind named by one path segment.
func deleteNamed(del func(*admin.Service, context.Context, admin.Author, string) error) func(*Server, *request, []string) error {
	return func(s *Server, r *request, n []string) error { return del(s.gov.Admin, r.ctx, s.author(r), n[0]) }
}

// deleteByBody is the delete of an association: the body that made it.
func deleteByBody[T any](del func(*admin.Service, context.Context, admin.Author, T) error) func(*Server, *request, []string) error {
	return func(s *Server, r *request, _ []string) error {
		var in T
		if err := s.readJSON(r.rc, &in); err != nil {
			return err
		}
		return del(s.gov.Admin, r.ctx, s.author(r), in)
	}
}

// governancePut creates or updates one object (POST).
func (s *Server) governancePut(r *request, k *governanceKind) error {
	out, err := k.put(s, r)
	if err != nil {
		return governanceError(err)
	}
	s.gov.changed(r.ctx)
	return writeJSON(r.rc, out)
}

// governanceDelete deletes one object: by name in the path (tags,
// policies, roles) or by the same body that created it (associations).
func (s *Server) governanceDelete(r *request, k *governanceKind) error {
	if err := k.del(s, r, r.names()); err != nil {
		return governanceError(err)
	}
	s.gov.changed(r.ctx)
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// governanceList answers the kind's objects under the kind's name:
// {"tags": [...]}, {"role-grants": [...]}.
func (s *Server) governanceList(r *request, k *governanceKind) error {
	sn, err := s.gov.Admin.Load(r.ctx)
	if err != nil {
		return err
	}
	out, err := k.list(r, sn)
	if err != nil {
		return err
	}
	return writeJSON(r.rc, map[string]any{k.kind: out})
}

func (s *Server) governanceGet(r *request, k *governanceKind) error {
	sn, err := s.gov.Admin.Load(r.ctx)
	if err != nil {
		return err
	}
	out, err := k.get(sn, r.names())
	if err != nil {
		return governanceError(err)
	}
	return writeJSON(r.rc, out)
}

// splitTable reads "ns.table" (the table may itself contain dots; the
// namespace, a DuckLake schema, is the part before the first).
func splitTable(s string) (ns, table string, err error) {
	ns, table, ok := strings.Cut(s, ".")
	if !ok || ns == "" || table == "" {
		return "", "", badRequest("table must be <namespace>.<table>, not %q", s)
	}
	return ns, table, nil
}

// effectivePolicies serves GET …/governance/effective-policies?table=ns.t
// [&principal=p]: for an admin about anyone, for anyone else about itself.
// A table the principal may not see answers as a missing table.
func (s *Server) effectivePolicies(r *request) error {
	args := r.rc.QueryArgs()
	ns, table, err := splitTable(string(args.Peek("table")))
	if err != nil {
		return err
	}
	caller := s.governancePrincipal(r)
	who := caller
	if pr := string(args.Peek("principal")); pr != "" && pr != caller.ID {
		if !caller.Scopes.Governs(governance.GovRead) {
			return forbidden("only governance:read may ask about another principal")
		}
		who = governance.Principal{ID: pr, Catalog: s.cfg.Name}
	}
	if v := string(args.Peek("actor")); v != "" {
		if v != governance.ActorHuman && v != governance.ActorAgent {
			return badRequest("actor must be human or agent")
		}
		if who.ID == caller.ID && !caller.Scopes.Governs(governance.GovRead) && v != caller.ActorOrDefault() {
			return forbidden("only governance:read may ask about another session context")
		}
		who.Actor = v
	}
	if v := string(args.Peek("channel")); v != "" {
		if v != governance.ChannelREST && v != governance.ChannelMCP && v != governance.ChannelSMCP {
			return badRequest("channel must be rest, mcp or smcp")
		}
		if who.ID == caller.ID && !caller.Scopes.Governs(governance.GovRead) && v != caller.ChannelOrDefault() {
			return forbidden("only governance:read may ask about another session context")
		}
		who.Channel = v
	}
	eff, ok, err := s.gov.Engine.Effective(r.ctx, &who, ns, table)
	if err != nil {
		return err
	}
	if !ok || !eff.Plan.Visible && !caller.Scopes.Governs(governance.GovRead) {
		return noSuchTable(ns, table)
	}
	return writeJSON(r.rc, eff)
}

// auditTrail serves GET …/governance/audit: filters principal, table
// (ns.t), decision, since and until (RFC 3339), limit, and cursor (the
// next-cursor of the previous page). Without governance:read a principal
// sees its own records only.
func (s *Server) auditTrail(r *request) error {
	if s.gov.Store == nil {
		return errNoGovernance
	}
	args := r.rc.QueryArgs()
	caller := s.governancePrincipal(r)
	q := store.Query{Principal: string(args.Peek("principal")), Decision: string(args.Peek("decision"))}
	if !caller.Scopes.Governs(governance.GovRead) {
		if q.Principal != "" && q.Principal != caller.ID {
			return forbidden("only governance:read may read another principal's audit records")
		}
		q.Principal = caller.ID
	}
	if t := string(args.Peek("table")); t != "" {
		ns, table, err := splitTable(t)
		if err != nil {
			return err
		}
		q.Namespace, q.Table = ns, table
	}
	switch q.Decision {
	case "", "allow", "deny", "none":
	default:
		return badRequest("decision must be allow, deny or none")
	}
	for _, tf := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := string(args.Peek(tf.name)); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return badRequest("%s must be an RFC 3339 time, e.g. 2026-12-01T00:00:00Z", tf.name)
			}
			*tf.dst = t
		}
	}
	for _, nf := range []struct {
		name string
		dst  *int64
	}{{"limit", nil}, {"cursor", &q.After}} {
		v := string(args.Peek(nf.name))
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badRequest("%s must be a non-negative integer", nf.name)
		}
		if nf.dst == nil {
			q.Limit = int(min(n, store.MaxAuditPage))
		} else {
			*nf.dst = n
		}
	}
	recs, next, err := s.gov.Store.Audit(r.ctx, q)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []store.Record{}
	}
	out := struct {
		Records    []store.Record `json:"records"`
		NextCursor *string        `json:"next-cursor"`
	}{Records: recs}
	if next > 0 {
		c := strconv.FormatInt(next, 10)
		out.NextCursor = &c
	}
	return writeJSON(r.rc, out)
}
