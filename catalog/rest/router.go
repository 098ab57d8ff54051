package rest

import (
	"bytes"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/internal/pct"
)

const contentTypeJSON = "application/json"

// nsSeparator separates the levels of a multi-level namespace in a path
// (the spec's default namespace-separator, %1F).
const nsSeparator = "\x1f"

// request is one routed API call.
type request struct {
	ctx *fasthttp.RequestCtx
	p   *Principal
	// ns and table are the decoded path parameters, when the route has them.
	ns, table string
}

// Handler serves the catalog's routes, /v1/…; anything else is answered
// 404 in the ErrorModel. Mount it on the catalog listener for /v1/.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	path := ctx.Request.URI().PathOriginal()
	rest, ok := bytes.CutPrefix(path, []byte("/v1/"))
	if !ok {
		s.writeError(ctx, errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s", path))
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
	if rest != nil {
		s.writeError(ctx, errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s", path))
		return
	}
	seg := segs[:n]

	switch {
	case n == 1 && string(seg[0]) == "config":
		s.handleConfig(ctx)
		return
	case n == 2 && string(seg[0]) == "oauth" && string(seg[1]) == "tokens":
		s.handleToken(ctx)
		return
	}

	p, err := s.authenticate(ctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	r := request{ctx: ctx, p: p}
	if err := s.route(&r, seg); err != nil {
		s.writeError(ctx, err)
	}
}

// route dispatches an authenticated request by its path segments after
// /v1/: {prefix}/namespaces/…, {prefix}/tables/rename.
func (s *Server) route(r *request, seg [][]byte) error {
	if len(seg) == 3 && string(seg[0]) == "aws" && string(seg[1]) == "s3" && string(seg[2]) == "sign" {
		if !r.ctx.IsPost() {
			return methodNotAllowed(r.ctx, "POST")
		}
		return s.signLegacy(r)
	}
	if len(seg) < 2 {
		return errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s", r.ctx.Path())
	}
	if prefix, err := unescape(seg[0]); err != nil || prefix != s.cfg.Name {
		return errorf(fasthttp.StatusNotFound, TypeNoSuchWarehouse,
			"no catalog %q here; this server's catalog is %q (GET /v1/config returns the prefix)", seg[0], s.cfg.Name)
	}
	method := string(r.ctx.Method())
	seg = seg[1:]
	switch string(seg[0]) {
	case "namespaces":
	case "tables":
		if len(seg) == 2 && string(seg[1]) == "rename" {
			if method != fasthttp.MethodPost {
				return methodNotAllowed(r.ctx, "POST")
			}
			return s.renameTable(r)
		}
		return notFound(r)
	case "views":
		return s.routeViewRename(r, seg[1:])
	case "governance":
		return s.routeGovernance(r, seg[1:])
	case "transactions":
		if len(seg) == 2 && string(seg[1]) == "commit" {
			if method != fasthttp.MethodPost {
				return methodNotAllowed(r.ctx, "POST")
			}
			return s.commitTransaction(r)
		}
		return notFound(r)
	default:
		return notFound(r)
	}

	// namespaces[/{ns}[/properties | /tables[/{table}[/credentials | /metrics]] | /views… | /register]]
	if len(seg) == 1 {
		switch method {
		case fasthttp.MethodGet:
			return s.listNamespaces(r)
		case fasthttp.MethodPost:
			return s.createNamespace(r)
		}
		return methodNotAllowed(r.ctx, "GET, POST")
	}
	if levels, ok := multiLevel(seg[1]); ok {
		return absentNamespace(r, seg, levels)
	}
	ns, err := decodeNamespace(seg[1])
	if err != nil {
		return err
	}
	r.ns = ns
	if len(seg) == 2 {
		switch method {
		case fasthttp.MethodGet:
			return s.loadNamespace(r)
		case fasthttp.MethodHead:
			return s.namespaceExists(r)
		case fasthttp.MethodDelete:
			return s.dropNamespace(r)
		}
		return methodNotAllowed(r.ctx, "GET, HEAD, DELETE")
	}
	switch string(seg[2]) {
	case "properties":
		if len(seg) != 3 {
			return notFound(r)
		}
		if method != fasthttp.MethodPost {
			return methodNotAllowed(r.ctx, "POST")
		}
		return s.updateProperties(r)
	case "tables":
	case "views":
		return s.routeViews(r, seg[3:])
	case "register", "register-view":
		if len(seg) != 3 {
			return notFound(r)
		}
		if method != fasthttp.MethodPost {
			return methodNotAllowed(r.ctx, "POST")
		}
		if string(seg[2]) == "register" {
			return s.registerTable(r)
		}
		return s.registerView(r)
	case "functions":
		return notImplemented(r)
	case "ducklake-credentials":
		if len(seg) != 3 {
			return notFound(r)
		}
		return s.ducklakeCredentials(r)
	default:
		return notFound(r)
	}
	if len(seg) == 3 {
		switch method {
		case fasthttp.MethodGet:
			return s.listTables(r)
		case fasthttp.MethodPost:
			return s.createTable(r)
		}
		return methodNotAllowed(r.ctx, "GET, POST")
	}
	table, err := unescape(seg[3])
	if err != nil || table == "" {
		return badRequest("malformed table name in the path")
	}
	r.table = table
	sub := ""
	if len(seg) == 5 {
		sub = string(seg[4])
	}
	if err := s.governTable(r, tableRouteAction(method, sub), r.ns, r.table); err != nil {
		return err
	}
	if len(seg) == 4 {
		switch method {
		case fasthttp.MethodGet:
			return s.loadTable(r)
		case fasthttp.MethodHead:
			return s.tableExists(r)
		case fasthttp.MethodDelete:
			return s.dropTable(r)
		case fasthttp.MethodPost:
			return s.updateTable(r)
		}
		return methodNotAllowed(r.ctx, "GET, HEAD, DELETE, POST")
	}
	if len(seg) != 5 {
		return notFound(r)
	}
	switch string(seg[4]) {
	case "credentials":
		if method != fasthttp.MethodGet {
			return methodNotAllowed(r.ctx, "GET")
		}
		return s.loadCredentials(r)
	case "metrics":
		if method != fasthttp.MethodPost {
			return methodNotAllowed(r.ctx, "POST")
		}
		return s.reportMetrics(r)
	case "sign":
		if method != fasthttp.MethodPost {
			return methodNotAllowed(r.ctx, "POST")
		}
		return s.signTable(r)
	case "plan", "tasks", "unregister":
		return notImplemented(r)
	}
	return notFound(r)
}

func notFound(r *request) error {
	return errorf(fasthttp.StatusNotFound, TypeNotFound, "no such route: %s %s", r.ctx.Method(), r.ctx.Path())
}

func notImplemented(r *request) error {
	return errorf(fasthttp.StatusNotImplemented, TypeUnsupported,
		"%s %s is not supported by this catalog (GET /v1/config lists the supported endpoints)", r.ctx.Method(), r.ctx.Path())
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) error {
	ctx.Response.Header.Set("Allow", allow)
	return errorf(fasthttp.StatusMethodNotAllowed, TypeMethodNotAllowed, "%s is not allowed here; use %s", ctx.Method(), allow)
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
	ns, err := unescape(seg)
	if err != nil {
		return nil, false
	}
	return multiLevelNamespace([]string{ns})
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
			return noSuchView(ns, name)
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
	return nil
}
