package rest

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/pct"
)

const contentTypeJSON = "application/json"

// nsSeparator separates the levels of a multi-level namespace in a path
// (the spec's default namespace-separator, %1F).
const nsSeparator = "\x1f"

// request is one routed API call.
type request struct {
	// ctx is what the request's work runs under (requestContext): its
	// deadline, cancelled when the client goes away.
	ctx context.Context
	// rc is the HTTP exchange: headers, body, the response.
	rc *fasthttp.RequestCtx
	p  *Principal
	// route is the route matched (nil before).
	route *route
	// err is the error answered, for the audit event.
	err *Error
	// The decoded path parameters, when the route has them.
	ns, table, view, name, name2 string
	// metadataOnly is set by a LoadTable that answered with metadata and
	// no credential: its audit event may be buffered (see audit).
	metadataOnly bool
	// reason and policies are what the audit event says of an answer that
	// is not an error: the policies a fail-open LoadTable could not apply.
	reason   string
	policies []string
}

// Handler serves the catalog's routes, /v1/…; anything else is answered
// 404 in the ErrorModel. Mount it on the catalog listener for /v1/.
//
// The route table (routes.go) drives it: the path is split into segments
// once, matched against the table's patterns (literals compared, {params}
// taken; no regexp, no allocation), and the route found is authorised here
// from its Action — the token's scope, then the Authorizer for table
// routes — before its handler runs; handlers decode, call and encode.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	path := ctx.Request.URI().PathOriginal()
	rest, ok := bytes.CutPrefix(path, []byte("/v1/"))
	if !ok {
		s.writeErrorFor(ctx, nil, errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s", path))
		return
	}
	var segs [8][]byte
	n := 0
	for n < len(segs) {
		i := bytes.IndexByte(rest, '/')
		if i < 0 {
			segs[n] = rest
			n++
			rest = nil
			break
		}
		segs[n] = rest[:i]
		n++
		rest = rest[i+1:]
	}
	seg := segs[:n]
	rt, allowed := s.match(seg, ctx.Method())
	if rest != nil {
		rt, allowed = nil, false
	}
	start := s.now()
	r := request{rc: ctx}
	err := s.serveRoute(&r, rt, allowed, seg)
	if err != nil {
		s.writeErrorFor(ctx, &r, err)
	}
	s.audit(&r, rt, start)
	s.metrics.observe(rt, ctx.Response.StatusCode(), s.now().Sub(start))
}

// serveRoute authenticates, decodes the path parameters, authorises and
// runs rt (nil: no route matched; allowed: the path exists for another
// method).
func (s *Server) serveRoute(r *request, rt *route, allowed bool, seg [][]byte) error {
	if rt != nil && rt.public {
		return rt.handle(s, r)
	}
	if rt == nil && allowed {
		// Which methods a route takes is the spec's, no secret: a wrong
		// method is 405 with or without a token (the token endpoint's GET).
		return methodNotAllowed(r.rc, s.allow(seg))
	}
	p, err := s.authenticate(r.rc)
	if err != nil {
		return err
	}
	r.p = p
	if rt == nil {
		return notFound(r)
	}
	r.route = rt
	if err := s.routeParams(r, rt, seg); err != nil {
		return err
	}
	if rt.enabled != nil && !rt.enabled(s) && !rt.handlerRefusesOff {
		return unsupported("%s %s: %s", r.rc.Method(), r.rc.Path(), rt.off)
	}
	rctx, done := s.requestContext(r.rc)
	defer done()
	r.ctx = rctx
	if err := s.authorizeRoute(r, rt); err != nil {
		return err
	}
	return rt.handle(s, r)
}

// match finds the route for a path's segments and method; allowed reports
// a path that exists for other methods only.
func (s *Server) match(seg [][]byte, method []byte) (rt *route, allowed bool) {
	for i := range s.routes {
		c := &s.routes[i]
		if !c.matches(seg) {
			continue
		}
		if c.method == string(method) {
			return c, false
		}
		allowed = true
	}
	return nil, allowed
}

func (c *route) matches(seg [][]byte) bool {
	if len(c.segs) != len(seg) {
		return false
	}
	for i, want := range c.segs {
		if want[0] != '{' && want != string(seg[i]) {
			return false
		}
	}
	return true
}

// allow is the Allow header of a path that exists for other methods.
func (s *Server) allow(seg [][]byte) string {
	var ms []string
	for i := range s.routes {
		if c := &s.routes[i]; c.matches(seg) && !slices.Contains(ms, c.method) {
			ms = append(ms, c.method)
		}
	}
	return strings.Join(ms, ", ")
}

// routeParams decodes rt's path parameters into r. A namespace of several
// levels cannot exist here and is answered as a missing one
// (absentNamespace).
func (s *Server) routeParams(r *request, rt *route, seg [][]byte) error {
	for i, name := range rt.segs {
		if name[0] != '{' {
			continue
		}
		b := seg[i]
		switch name {
		case paramPrefix:
			if prefix, err := unescape(b); err != nil || prefix != s.cfg.Name {
				return errorf(fasthttp.StatusNotFound, TypeNoSuchWarehouse,
					"no catalog %q here; this server's catalog is %q (GET /v1/config returns the prefix)", b, s.cfg.Name)
			}
		case paramNamespace:
			if levels, ok := multiLevel(b); ok {
				return absentNamespace(r, seg[1:], levels)
			}
			ns, err := decodeNamespace(b)
			if err != nil {
				return err
			}
			r.ns = ns
		case paramTable:
			t, err := unescape(b)
			if err != nil || t == "" {
				return badRequest("malformed table name in the path")
			}
			r.table = t
		case paramView:
			v, err := unescape(b)
			if err != nil || v == "" {
				return badRequest("malformed view name in the path")
			}
			r.view = v
		case paramName, paramName2:
			v, err := unescape(b)
			if err != nil || v == "" {
				return badRequest("malformed name in the path")
			}
			if name == paramName {
				r.name = v
			} else {
				r.name2 = v
			}
		}
	}
	for _, v := range [...]string{r.ns, r.table, r.view, r.name, r.name2} {
		if err := checkPathName(v); err != nil {
			return err
		}
	}
	return nil
}

// authorizeRoute is the catalog's one authorisation call for a route: the
// token's scope for the route's action on the path's namespace (or on the
// catalog), then, on table routes, the Authorizer (governTable). A route
// marked scopedByHandler decides from what it decodes (a list's parent,
// a rename's two names, a transaction's tables, a signed S3 request, "who"
// of effective-policies): its handler calls authorizeScope for those.
func (s *Server) authorizeRoute(r *request, rt *route) error {
	if !rt.scopedByHandler {
		if err := s.authorizeScope(r, rt.action, r.ns); err != nil {
			return err
		}
	}
	if r.table != "" {
		return s.governTable(r, rt.action, r.ns, r.table)
	}
	return nil
}

// allowsScope reports whether r's token allows action a on namespace ns.
func (s *Server) allowsScope(r *request, a governance.Action, ns string) bool {
	return s.principalAllows(r.p, a, ns)
}

// principalAllows reports whether p's token allows action a on namespace
// ns: the scope rule of authorizeScope, for callers that filter or choose
// rather than refuse.
func (s *Server) principalAllows(p *Principal, a governance.Action, ns string) bool {
	if governance.IsMaskedName(ns) {
		// Masking schemas are no one's to list or choose (masking.go).
		return false
	}
	gp := s.principalOf(p)
	res := governance.NamespaceResource(ns)
	return governance.ScopeDecision(&gp, a, &res).Allow
}

// authorizeScope refuses (403) what r's token does not allow: action a on
// namespace ns.
func (s *Server) authorizeScope(r *request, a governance.Action, ns string) error {
	if governance.IsMaskedName(ns) {
		return s.authorizeMasking(r, a, ns)
	}
	p := s.governancePrincipal(r)
	res := governance.NamespaceResource(ns)
	d := governance.ScopeDecision(&p, a, &res)
	if d.Allow {
		return nil
	}
	need, every := a.Needs()
	switch {
	case need == 0:
		return forbidden("%s", d.Reason)
	case every:
		return forbidden("%s needs write access to every namespace (scope ns:*:w or *)", a)
	case need&governance.CapWrite != 0:
		return forbidden("no write access to namespace %s", ns)
	}
	return forbidden("no read access to namespace %s", ns)
}

func notFound(r *request) error {
	return errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s %s", r.rc.Method(), r.rc.Path())
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) error {
	// The Allow header goes with the error: writeError resets the response.
	e := errorf(fasthttp.StatusMethodNotAllowed, TypeMethodNotAllowed, "%s is not allowed here; use %s", ctx.Method(), allow)
	e.allow = allow
	return e
}

// unescape percent-decodes one path segment. '+' stays '+'.
func unescape(b []byte) (string, error) {
	if bytes.IndexByte(b, '%') < 0 {
		return string(b), nil
	}
	out, ok := pct.AppendDecode(make([]byte, 0, len(b)), b, false)
	if !ok {
		return "", errMalformedEscape
	}
	return string(out), nil
}

var errMalformedEscape = badRequest("malformed percent-encoding in the path")

// decodeNamespace decodes the namespace path parameter. DuckLake schemas
// have one level, so a multi-level namespace is refused with an explanation.
func decodeNamespace(seg []byte) (string, error) {
	ns, err := unescape(seg)
	if err != nil {
		return "", err
	}
	if err := checkNamespace([]string{ns}); err != nil {
		return "", err
	}
	return ns, nil
}

// multiLevel reports whether a namespace path parameter names a namespace
// of more than one level, and its levels.
func multiLevel(seg []byte) ([]string, bool) {
	if !mayHoldSeparator(seg) {
		return nil, false // the common case, decided without decoding
	}
	ns, err := unescape(seg)
	if err != nil {
		return nil, false
	}
	return multiLevelNamespace([]string{ns})
}

// mayHoldSeparator reports whether a path segment may decode to a string
// holding nsSeparator: it holds the byte, or an escape of it.
func mayHoldSeparator(seg []byte) bool {
	return bytes.IndexByte(seg, nsSeparator[0]) >= 0 ||
		bytes.Contains(seg, []byte("%1f")) || bytes.Contains(seg, []byte("%1F"))
}

// multiLevelNamespace reports whether a namespace given as levels (a JSON
// Namespace, or one level holding the %1F-separated levels) has more than
// one level, none empty: a well-formed namespace that cannot exist here.
func multiLevelNamespace(levels []string) ([]string, bool) {
	if len(levels) == 1 && strings.Contains(levels[0], nsSeparator) {
		levels = strings.Split(levels[0], nsSeparator)
	}
	return levels, len(levels) > 1 && !slices.Contains(levels, "")
}

// absentNamespace answers a request about a namespace of several levels.
// Such a namespace cannot exist here (DuckLake schemas have one level), so
// it is answered as any missing namespace is, with the route's "does not
// exist" error: NoSuchTable for a table in it, NoSuchView for a view,
// NoSuchNamespace otherwise. Iceberg clients rely on that: Java's loads
// table ns.tbl.files as table "files" of namespace ns.tbl first and, on
// NoSuchTable, falls back to metadata table "files" of table ns.tbl.
// Creating such a namespace stays a 400 (checkNamespace).
func absentNamespace(r *request, seg [][]byte, levels []string) error {
	ns := strings.Join(levels, ".")
	if len(seg) < 4 {
		if len(seg) == 3 {
			switch string(seg[2]) {
			case "properties", "tables", "views", "register", "register-view":
			default:
				return notFound(r)
			}
		}
		return noSuchNamespace(ns)
	}
	name, err := unescape(seg[3])
	if err != nil || name == "" {
		return badRequest("malformed name in the path")
	}
	switch string(seg[2]) {
	case "tables":
		return noSuchTable(ns, name)
	case "views":
		if len(seg) == 4 {
			return service.NoSuchView(ns, name)
		}
	}
	return notFound(r)
}

// checkNamespace validates a namespace given as levels (a JSON Namespace or
// a decoded path parameter).
func checkNamespace(levels []string) error {
	if len(levels) == 1 && strings.Contains(levels[0], nsSeparator) {
		levels = strings.Split(levels[0], nsSeparator)
	}
	switch {
	case len(levels) == 0 || len(levels) == 1 && levels[0] == "":
		return badRequest("empty namespace")
	case len(levels) > 1:
		return badRequest("namespace %q has %d levels; this catalog's namespaces are DuckLake schemas, which have exactly one level",
			strings.Join(levels, "."), len(levels))
	}
	return checkPathName(levels[0])
}
