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

// governancePut creates or updates one object (POST): the body is the
// object; the answer echoes it.
func (s *Server) governancePut(r *request, kind string) error {
	svc := s.gov.Admin
	var out any
	var err error
	switch kind {
	case "tags":
		out, err = putBody(s, r, svc.PutTag)
	case "object-tags":
		out, err = putBody(s, r, svc.PutObjectTag)
	case "masking-policies":
		out, err = putBody(s, r, svc.PutMaskingPolicy)
	case "row-access-policies":
		out, err = putBody(s, r, svc.PutRowAccessPolicy)
	case "policy-attachments":
		out, err = putBody(s, r, svc.PutAttachment)
	case "roles":
		out, err = putBody(s, r, svc.PutRole)
	case "role-grants":
		out, err = putBody(s, r, svc.PutRoleGrant)
	case "object-grants":
		out, err = putBody(s, r, svc.PutObjectGrant)
	default:
		return notFound(r)
	}
	if err != nil {
		return governanceError(err)
	}
	s.gov.changed(r.ctx)
	return writeJSON(r.rc, out)
}

// putBody decodes r's body as a T and applies it with put; the answer
// echoes what was applied. A malformed body is the readJSON 400 as it is.
func putBody[T any](s *Server, r *request, put func(context.Context, admin.Author, T) error) (any, error) {
	var in T
	if err := s.readJSON(r.rc, &in); err != nil {
		return nil, err
	}
	return in, put(r.ctx, s.author(r), in)
}

// governanceDelete deletes one object: by name in the path (tags,
// policies, roles) or by the same body that created it (associations).
func (s *Server) governanceDelete(r *request, kind string, names []string) error {
	ctx, a, svc := r.ctx, s.author(r), s.gov.Admin
	var err error
	switch kind {
	case "tags":
		err = svc.DeleteTag(ctx, a, names[0], names[1])
	case "masking-policies":
		err = svc.DeleteMaskingPolicy(ctx, a, names[0])
	case "row-access-policies":
		err = svc.DeleteRowAccessPolicy(ctx, a, names[0])
	case "roles":
		err = svc.DeleteRole(ctx, a, names[0])
	case "object-tags":
		var in admin.ObjectTag
		if err = s.readJSON(r.rc, &in); err == nil {
			err = svc.DeleteObjectTag(ctx, a, in)
		}
	case "policy-attachments":
		var in admin.Attachment
		if err = s.readJSON(r.rc, &in); err == nil {
			err = svc.DeleteAttachment(ctx, a, in)
		}
	case "role-grants":
		var in admin.RoleGrant
		if err = s.readJSON(r.rc, &in); err == nil {
			err = svc.DeleteRoleGrant(ctx, a, in)
		}
	case "object-grants":
		var in admin.ObjectGrant
		if err = s.readJSON(r.rc, &in); err == nil {
			err = svc.DeleteObjectGrant(ctx, a, in)
		}
	default:
		return notFound(r)
	}
	if err != nil {
		return governanceError(err)
	}
	s.gov.changed(ctx)
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (s *Server) governanceList(r *request, kind string) error {
	sn, err := s.gov.Admin.Load(r.ctx)
	if err != nil {
		return err
	}
	var out any
	switch kind {
	case "tags":
		out = sn.Tags()
	case "object-tags":
		out, err = sn.ObjectTags(r.ctx)
	case "masking-policies":
		out = sn.MaskingPolicies()
	case "row-access-policies":
		out = sn.RowAccessPolicies()
	case "policy-attachments":
		out, err = sn.Attachments(r.ctx)
	case "roles":
		out = sn.Roles()
	case "role-grants":
		out = sn.RoleGrants(string(r.rc.QueryArgs().Peek("principal")))
	case "object-grants":
		out, err = sn.ObjectGrants(r.ctx)
	default:
		return notFound(r)
	}
	if err != nil {
		return err
	}
	return writeJSON(r.rc, out)
}

func (s *Server) governanceGet(r *request, kind string, names []string) error {
	sn, err := s.gov.Admin.Load(r.ctx)
	if err != nil {
		return err
	}
	var out any
	switch kind {
	case "tags":
		out, err = sn.Tag(names[0], names[1])
	case "masking-policies":
		out, err = sn.MaskingPolicy(names[0])
	case "row-access-policies":
		out, err = sn.RowAccessPolicy(names[0])
	case "roles":
		out, err = sn.Role(names[0])
	default:
		return notFound(r)
	}
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
