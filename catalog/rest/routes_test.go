package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

// routerServer is a Server with the route table and no database: enough for
// every answer the router gives before a handler reaches Postgres.
func routerServer(t *testing.T) *Server {
	t.Helper()
	m, err := newRouteMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "lake", TokenTTL: time.Hour, SessionTTL: 12 * time.Hour, RequestTimeout: time.Minute,
		Clients: []Client{{ID: "u", Secret: "u-secret", Scopes: []string{"*"}}, {ID: "bob", Secret: "bob-secret", Scopes: []string{"*"}}}}
	s := &Server{cfg: cfg, routes: routeTable(), metrics: m, log: zap.NewNop(), now: time.Now, sink: governance.Discard}
	deps := Deps{Logger: s.log}
	if s.auth, err = newAuth(&cfg, []byte(strings.Repeat("k", 32)), &deps); err != nil {
		t.Fatal(err)
	}
	return s
}

func serveRoute(s *Server, method, path, token string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	if token != "" {
		ctx.Request.Header.Set("Authorization", "Bearer "+token)
	}
	s.Handler(&ctx)
	return &ctx
}

func errorType(t *testing.T, ctx *fasthttp.RequestCtx) string {
	t.Helper()
	var e errorResponse
	if err := json.Unmarshal(ctx.Response.Body(), &e); err != nil {
		t.Fatalf("not an ErrorModel: %q", ctx.Response.Body())
	}
	return e.Error.Type
}

// TestRouteTableEndpoints: /v1/config's endpoints are the table's enabled
// spec routes, so a route that is off is neither listed nor served.
func TestRouteTableEndpoints(t *testing.T) {
	s := routerServer(t)
	got := s.endpoints()
	for _, off := range []string{
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",       // no materializer
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign", // no signer
		"POST /v1/{prefix}/namespaces/{namespace}/register-view",       // no object store
	} {
		if slices.Contains(got, off) {
			t.Errorf("endpoints list %q, which this catalog does not serve", off)
		}
	}
	for _, on := range []string{"GET /v1/{prefix}/namespaces", "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/views/rename"} {
		if !slices.Contains(got, on) {
			t.Errorf("endpoints lack %q", on)
		}
	}
	s.mat = Materialized(nil)
	if !slices.Contains(s.endpoints(), "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}") {
		t.Error("with a materializer, LoadTable is not listed")
	}
	for i := range s.routes {
		r := &s.routes[i]
		if !r.public && r.handle != nil && r.action == governance.ActionUnknown {
			t.Errorf("%s %s has no action", r.method, r.pattern)
		}
	}
}

// TestRouterRefusals: what the router answers before any handler runs —
// authentication, unknown and disabled routes, names Postgres cannot hold,
// and the token's scope (the one authorisation call).
func TestRouterRefusals(t *testing.T) {
	s := routerServer(t)
	tok := func(scopes ...string) string {
		tk, err := s.auth.Mint("u", scopes)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	all, readSales := tok("*"), tok("ns:sales:r")
	for _, tt := range []struct {
		name, method, path, token string
		code                      int
		typ                       string
	}{
		{"no token", "GET", "/v1/lake/namespaces", "", 401, TypeNotAuthorized},
		{"no token, unknown route", "GET", "/v1/nowhere", "", 401, TypeNotAuthorized},
		{"unknown route", "GET", "/v1/nowhere", all, 404, TypeNotFound},
		{"too deep", "GET", "/v1/a/b/c/d/e/f/g/h/i", all, 404, TypeNotFound},
		{"other prefix", "GET", "/v1/other/namespaces", all, 404, TypeNoSuchWarehouse},
		{"LoadTable without a materializer", "GET", "/v1/lake/namespaces/sales/tables/t", all, 406, TypeUnsupported},
		{"plan is not served", "POST", "/v1/lake/namespaces/sales/tables/t/plan", all, 406, TypeUnsupported},
		{"sign without a signer", "POST", "/v1/lake/namespaces/sales/tables/t/sign", all, 406, TypeUnsupported},
		{"governance off", "GET", "/v1/lake/governance/tags", all, 406, TypeUnsupported},
		{"NUL in a namespace", "GET", "/v1/lake/namespaces/sa%00les", all, 400, TypeBadRequest},
		{"invalid UTF-8 namespace", "GET", "/v1/lake/namespaces/%FF", all, 400, TypeBadRequest},
		{"NUL in a table", "DELETE", "/v1/lake/namespaces/sales/tables/t%00", all, 400, TypeBadRequest},
		{"invalid UTF-8 view", "GET", "/v1/lake/namespaces/sales/views/%C3%28", all, 400, TypeBadRequest},
		{"read scope may not write", "DELETE", "/v1/lake/namespaces/sales/tables/t", readSales, 403, TypeForbidden},
		{"read scope on another namespace", "GET", "/v1/lake/namespaces/hr/tables", readSales, 403, TypeForbidden},
		{"create namespace needs every namespace", "POST", "/v1/lake/namespaces", readSales, 403, TypeForbidden},
		{"drop namespace needs every namespace", "DELETE", "/v1/lake/namespaces/sales", tok("ns:sales:rw"), 403, TypeForbidden},
		{"views need read", "GET", "/v1/lake/namespaces/hr/views/v", readSales, 403, TypeForbidden},
		{"register-view needs write (before the missing object store)", "POST", "/v1/lake/namespaces/sales/register-view", readSales, 403, TypeForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := serveRoute(s, tt.method, tt.path, tt.token)
			if ctx.Response.StatusCode() != tt.code || errorType(t, ctx) != tt.typ {
				t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.path, ctx.Response.StatusCode(), ctx.Response.Body(), tt.code, tt.typ)
			}
		})
	}
}

// TestServiceErrors: each kind of catalog/service refusal is answered
// with its Iceberg status and type and the service's message, and a kind
// the table lacks is a 500 rather than a guess.
func TestServiceErrors(t *testing.T) {
	for _, tc := range []struct {
		kind error
		code int
		typ  string
	}{
		{service.ErrNoSuchNamespace, 404, TypeNoSuchNamespace},
		{service.ErrNoSuchTable, 404, TypeNoSuchTable},
		{service.ErrNoSuchView, 404, TypeNoSuchView},
		{service.ErrAlreadyExists, 409, TypeAlreadyExists},
		{service.ErrNotEmpty, 409, TypeNamespaceNotEmpty},
		{service.ErrForbidden, 403, TypeForbidden},
		{service.ErrConflict, 409, TypeCommitFailed},
		{service.ErrInvalid, 400, TypeBadRequest},
		{service.ErrInvalidView, 400, typeIllegalArgument},
		{service.ErrUnprocessable, 422, TypeUnprocessableEntity},
		{service.ErrUnsupported, unsupported("x").Code, TypeUnsupported},
		{commit.ErrConflict, 409, TypeCommitFailed},
		{commit.ErrExists, 409, TypeAlreadyExists},
		{commit.ErrNotFound, 404, TypeNoSuchTable},
		{commit.ErrForbidden, 403, TypeForbidden},
		{commit.ErrUnsupported, unsupported("x").Code, TypeUnsupported},
		{commit.ErrInvalid, 400, TypeBadRequest},
		{errors.New("a kind nobody mapped"), 500, TypeInternalServerError},
	} {
		e := fromService(&service.Error{Kind: tc.kind, Message: "the message"})
		if e.Code != tc.code || e.Type != tc.typ || tc.code != 500 && e.Message != "the message" {
			t.Errorf("%v: answered %d %s %q, want %d %s", tc.kind, e.Code, e.Type, e.Message, tc.code, tc.typ)
		}
	}
	// Wrapped, as a change inside a commit returns it.
	var ctx fasthttp.RequestCtx
	s := &Server{log: zap.NewNop(), now: time.Now}
	s.writeError(&ctx, fmt.Errorf("commit: %w", service.NoSuchNamespace("gone")))
	if ctx.Response.StatusCode() != 404 || !bytes.Contains(ctx.Response.Body(), []byte("Namespace does not exist: gone")) {
		t.Errorf("wrapped refusal answered %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// syncRecorder records events, noting which came through RecordSync.
type syncRecorder struct {
	events []governance.Event
	sync   []bool
}

func (s *syncRecorder) Record(ev *governance.Event) {
	s.events, s.sync = append(s.events, *ev), append(s.sync, false)
}

func (s *syncRecorder) RecordSync(_ context.Context, ev *governance.Event) error {
	s.events, s.sync = append(s.events, *ev), append(s.sync, true)
	return nil
}

// TestAuditEvents: an audited route's refusal is one event, written
// durably (RecordSync) since it is a denial; a route that is not audited
// (a namespace listing) records none.
func TestAuditEvents(t *testing.T) {
	s := routerServer(t)
	rec := &syncRecorder{}
	s.sink = rec
	tk, err := s.auth.Mint("bob", []string{"ns:sales:r"})
	if err != nil {
		t.Fatal(err)
	}
	serveRoute(s, "DELETE", "/v1/lake/namespaces/sales/tables/orders", tk)
	serveRoute(s, "GET", "/v1/lake/namespaces/hr/tables", tk)
	if len(rec.events) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(rec.events), rec.events)
	}
	ev := rec.events[0]
	if !rec.sync[0] || ev.Action != "DropTable" || ev.Principal != "bob" || ev.Namespace != "sales" || ev.Table != "orders" ||
		ev.Decision != governance.OutcomeDeny || ev.Status != 403 || ev.Error != TypeForbidden || ev.Source != governance.SourceCatalog {
		t.Errorf("event %+v (sync %v)", ev, rec.sync[0])
	}
}
