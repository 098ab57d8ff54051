package rest

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

// route is one row of the catalog's route table: the one place that says
// which requests exist, what each does (its governance.Action, which the
// router authorises before the handler runs), who serves it, whether this
// catalog serves it (enabled) and whether /v1/config lists it (spec).
type route struct {
	method string
	// pattern is the path in the REST spec's notation,
	// "/v1/{prefix}/namespaces/{namespace}/tables/{table}"; it is also the
	// route's metrics label.
	pattern string
	action  governance.Action
	handle  func(*Server, *request) error
	// enabled says whether this catalog serves the route (nil: always); a
	// route that is off is answered 406 UnsupportedOperationException and
	// left out of /v1/config.
	enabled func(*Server) bool
	// off explains a route that is not enabled.
	off string
	// handlerRefusesOff: when off, the route still reaches its handler,
	// which checks the request first (a malformed body stays a 400) and
	// refuses with its own reason.
	handlerRefusesOff bool
	// spec: the route is the REST spec's and /v1/config lists it.
	spec bool
	// public: served without a bearer token (config, OAuth tokens).
	public bool
	// scopedByHandler: the namespaces the action is on come from the body
	// or the query, and the handler authorises them (authorizeScope).
	scopedByHandler bool

	segs []string // pattern after "/v1/", split at '/'
}

// Path parameters a pattern may hold.
const (
	paramPrefix    = "{prefix}"
	paramNamespace = "{namespace}"
	paramTable     = "{table}"
	paramView      = "{view}"
	paramName      = "{name}" // a governance object's name (kinds with one)
	paramName2     = "{name2}"
)

func hasMat(s *Server) bool     { return s.mat != nil }
func hasSigner(s *Server) bool  { return s.signer != nil }
func hasObjects(s *Server) bool { return s.objects != nil }
func hasGov(s *Server) bool     { return s.gov != nil }
func hasDirect(s *Server) bool {
	return s.gov != nil && s.gov.Direct != nil && s.gov.Direct.Access != nil
}
func canRegisterTable(s *Server) bool {
	return s.objects != nil && s.mat != nil
}

const (
	offMat     = service.NoMaterializer
	offSigner  = "remote signing is not configured on this catalog"
	offObjects = "this catalog has no storage client to read metadata files with"
	offGov     = "governance is not configured on this catalog"
	offDirect  = "DuckLake-direct vends are not configured on this catalog (they need governance and the catalog's Postgres)"
)

// routeTable is every route, in the order /v1/config lists them. Built
// once per Server (newRoutes); matching walks it without allocating.
func routeTable() []route {
	const ns = "/v1/{prefix}/namespaces/{namespace}"
	const tbl = ns + "/tables/{table}"
	const view = ns + "/views/{view}"
	rs := []route{
		{method: "GET", pattern: "/v1/config", handle: func(s *Server, r *request) error { s.handleConfig(r.rc); return nil }, public: true},
		{method: "HEAD", pattern: "/v1/config", handle: func(s *Server, r *request) error { s.handleConfig(r.rc); return nil }, public: true},
		{method: "POST", pattern: "/v1/oauth/tokens", handle: func(s *Server, r *request) error { s.handleToken(r.rc); return nil }, public: true},

		{method: "GET", pattern: "/v1/{prefix}/namespaces", action: governance.ActionListNamespaces, handle: (*Server).listNamespaces, scopedByHandler: true, spec: true},
		{method: "POST", pattern: "/v1/{prefix}/namespaces", action: governance.ActionCreateNamespace, handle: (*Server).createNamespace, spec: true},
		{method: "GET", pattern: ns, action: governance.ActionLoadNamespace, handle: (*Server).loadNamespace, spec: true},
		{method: "HEAD", pattern: ns, action: governance.ActionLoadNamespace, handle: (*Server).namespaceExists, spec: true},
		{method: "DELETE", pattern: ns, action: governance.ActionDropNamespace, handle: (*Server).dropNamespace, spec: true},
		{method: "POST", pattern: ns + "/properties", action: governance.ActionUpdateNamespace, handle: (*Server).updateProperties, spec: true},
		{method: "GET", pattern: ns + "/tables", action: governance.ActionListTables, handle: (*Server).listTables, spec: true},
		{method: "GET", pattern: tbl, action: governance.ActionLoadTable, handle: (*Server).loadTable, spec: true, enabled: hasMat, off: offMat},
		{method: "POST", pattern: ns + "/tables", action: governance.ActionCreateTable, handle: (*Server).createTable, spec: true, enabled: hasMat, off: offMat},
		{method: "POST", pattern: tbl, action: governance.ActionCommitTable, handle: (*Server).updateTable, spec: true, enabled: hasMat, off: offMat},
		{method: "POST", pattern: "/v1/{prefix}/transactions/commit", action: governance.ActionCommitTransaction, handle: (*Server).commitTransaction, scopedByHandler: true, spec: true, enabled: hasMat, off: offMat},
		{method: "HEAD", pattern: tbl, action: governance.ActionLoadTable, handle: (*Server).tableExists, spec: true},
		{method: "DELETE", pattern: tbl, action: governance.ActionDropTable, handle: (*Server).dropTable, spec: true},
		{method: "GET", pattern: tbl + "/credentials", action: governance.ActionLoadCredentials, handle: (*Server).loadCredentials, spec: true},
		{method: "POST", pattern: tbl + "/metrics", action: governance.ActionReportMetrics, handle: (*Server).reportMetrics, spec: true},
		{method: "POST", pattern: "/v1/{prefix}/tables/rename", action: governance.ActionRenameTable, handle: (*Server).renameTable, scopedByHandler: true, spec: true},
		{method: "POST", pattern: tbl + "/sign", action: governance.ActionSignRequest, handle: (*Server).signTable, scopedByHandler: true, spec: true, enabled: hasSigner, off: offSigner},

		{method: "GET", pattern: ns + "/views", action: governance.ActionListViews, handle: (*Server).listViews, spec: true},
		{method: "POST", pattern: ns + "/views", action: governance.ActionCreateView, handle: (*Server).createView, spec: true},
		{method: "GET", pattern: view, action: governance.ActionLoadView, handle: func(s *Server, r *request) error { return s.loadView(r, r.view) }, spec: true},
		{method: "HEAD", pattern: view, action: governance.ActionLoadView, handle: func(s *Server, r *request) error { return s.viewExists(r, r.view) }, spec: true},
		{method: "POST", pattern: view, action: governance.ActionReplaceView, handle: func(s *Server, r *request) error { return s.replaceView(r, r.view) }, spec: true},
		{method: "DELETE", pattern: view, action: governance.ActionDropView, handle: func(s *Server, r *request) error { return s.dropView(r, r.view) }, spec: true},
		{method: "POST", pattern: "/v1/{prefix}/views/rename", action: governance.ActionRenameView, handle: (*Server).renameView, scopedByHandler: true, spec: true},

		{method: "POST", pattern: ns + "/register", action: governance.ActionRegisterTable, handle: (*Server).registerTable, spec: true, enabled: canRegisterTable, off: offObjects, handlerRefusesOff: true},
		{method: "POST", pattern: ns + "/register-view", action: governance.ActionRegisterView, handle: (*Server).registerView, spec: true, enabled: hasObjects, off: offObjects, handlerRefusesOff: true},
		{method: "GET", pattern: ns + "/ducklake-credentials", action: governance.ActionVendDuckLake, handle: (*Server).ducklakeCredentials, enabled: hasDirect, off: offDirect},

		// The legacy signer path (PyIceberg's s3.signer default).
		{method: "POST", pattern: "/v1/aws/s3/sign", action: governance.ActionSignRequest, handle: (*Server).signLegacy, scopedByHandler: true, enabled: hasSigner, off: offSigner},

		{method: "GET", pattern: "/v1/{prefix}/governance/effective-policies", action: governance.ActionReadGovernance, handle: (*Server).effectivePolicies, scopedByHandler: true, enabled: hasGov, off: offGov},
		{method: "GET", pattern: "/v1/{prefix}/governance/audit", action: governance.ActionReadGovernance, handle: (*Server).auditTrail, scopedByHandler: true, enabled: hasGov, off: offGov},
	}
	// Governance objects (governanceKinds): list and put; get and delete by
	// name for named kinds, delete by body for associations.
	for i := range governanceKinds {
		k := &governanceKinds[i]
		base := "/v1/{prefix}/governance/" + k.kind
		rs = append(rs,
			route{method: "GET", pattern: base, action: governance.ActionReadGovernance, handle: func(s *Server, r *request) error { return s.governanceList(r, k) }},
			route{method: "POST", pattern: base, action: governance.ActionAdminGovernance, handle: func(s *Server, r *request) error { return s.governancePut(r, k) }},
			route{method: "DELETE", pattern: base + k.names, action: governance.ActionAdminGovernance, handle: func(s *Server, r *request) error { return s.governanceDelete(r, k) }},
		)
		if k.names != "" {
			rs = append(rs, route{method: "GET", pattern: base + k.names, action: governance.ActionReadGovernance, handle: func(s *Server, r *request) error { return s.governanceGet(r, k) }})
		}
	}
	// Spec routes this catalog does not serve: known, so answered 406
	// rather than 404, and never listed.
	never := func(*Server) bool { return false }
	for _, p := range []string{tbl + "/plan", tbl + "/plan/{name}", tbl + "/tasks", ns + "/functions", ns + "/functions/{name}", tbl + "/unregister"} {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			rs = append(rs, route{method: m, pattern: p, handle: nil, enabled: never, off: "not supported by this catalog (GET /v1/config lists the supported endpoints)"})
		}
	}
	for i := range rs {
		r := &rs[i]
		if strings.HasPrefix(r.pattern, "/v1/{prefix}/governance/") && r.enabled == nil {
			r.enabled, r.off = hasGov, offGov
		}
		r.segs = strings.Split(strings.TrimPrefix(r.pattern, "/v1/"), "/")
		if !r.public && r.action == governance.ActionUnknown && r.handle != nil {
			panic(fmt.Sprintf("rest: route %s %s has no action", r.method, r.pattern))
		}
	}
	return rs
}

// endpoints lists the spec routes this catalog serves, in the spec's
// notation, for /v1/config: the route table's enabled spec rows.
func (s *Server) endpoints() []string {
	var e []string
	for i := range s.routes {
		r := &s.routes[i]
		if r.spec && (r.enabled == nil || r.enabled(s)) {
			e = append(e, r.method+" "+r.pattern)
		}
	}
	return e
}

// names are the governance object names of the path ({name}, {name2}).
func (r *request) names() []string {
	switch {
	case r.name2 != "":
		return []string{r.name, r.name2}
	case r.name != "":
		return []string{r.name}
	}
	return nil
}

// checkPathName refuses a name Postgres cannot hold or compare as text:
// a NUL byte, or bytes that are not UTF-8.
func checkPathName(v string) error {
	if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
		return badRequest("names must be UTF-8 text without NUL bytes, got %q", v)
	}
	return nil
}
