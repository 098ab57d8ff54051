package rest

import (
	"encoding/json"
	"github.com/duckicelake/duckicelake/governance"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// authServer is a Server with only what authentication needs (no database).
func authServer(t *testing.T, now *time.Time, clients []Client) *Server {
	t.Helper()
	cfg := Config{Name: "lake", TokenKey: []byte(strings.Repeat("k", 32)), Clients: clients}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	deps := Deps{Logger: zap.NewNop(), Now: func() time.Time { return *now }}
	s := &Server{cfg: cfg, log: deps.Logger, now: deps.Now, routes: routeTable(), sink: governance.Discard}
	var err error
	if s.auth, err = newAuth(&cfg, cfg.TokenKey, &deps); err != nil {
		t.Fatal(err)
	}
	return s
}

var authClients = []Client{
	{ID: "etl", Secret: "etl-secret", Scopes: []string{"ns:sales:rw"}, Roles: []string{"writer"}},
	{ID: "admin", Secret: "pw", Scopes: []string{"*"}},
}

// token gets a token through the router.
func token(t *testing.T, s *Server, form url.Values, auth string) (int, map[string]any) {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/oauth/tokens")
	ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
	if auth != "" {
		ctx.Request.Header.Set("Authorization", auth)
	}
	ctx.Request.SetBodyString(form.Encode())
	s.Handler(&ctx)
	var body map[string]any
	json.Unmarshal(ctx.Response.Body(), &body)
	return ctx.Response.StatusCode(), body
}

func TestHandleToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now, authClients)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"etl-secret"}}
	code, body := token(t, s, form, "")
	if code != 200 || body["scope"] != "ns:sales:rw" {
		t.Fatalf("token: %d %v", code, body)
	}
	p, err := s.verifyToken([]byte(body["access_token"].(string)))
	if err != nil || p.Subject != "etl" || !p.gov.CanWrite("sales") || p.gov.CanRead("hr") || len(p.Roles) != 1 {
		t.Errorf("principal %+v, %v", p, err)
	}
	// Iceberg Java's refresh with client credentials sends the current
	// token as a bearer (issue 15 item 2).
	if code, body := token(t, s, form, "Bearer "+body["access_token"].(string)); code != 200 {
		t.Errorf("client credentials with a bearer: %d %v", code, body)
	}
	// GET is the ErrorModel's 405.
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v1/oauth/tokens")
	s.Handler(&ctx)
	if ctx.Response.StatusCode() != 405 || !strings.Contains(string(ctx.Response.Body()), TypeMethodNotAllowed) {
		t.Errorf("GET: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// TestRemovedClientRefused: a token of a client the catalog no longer
// configures is a 401 on every route (issue 14 item 5).
func TestRemovedClientRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	before := authServer(t, &now, authClients)
	_, body := token(t, before, url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"etl-secret"}}, "")
	tok := body["access_token"].(string)
	after := authServer(t, &now, authClients[1:])
	_, err := after.authenticate(req("Bearer " + tok))
	if e, ok := err.(*Error); !ok || e.Code != 401 {
		t.Errorf("removed client's token: %v", err)
	}
}

func req(auth string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v1/lake/namespaces")
	if auth != "" {
		ctx.Request.Header.Set("Authorization", auth)
	}
	return &ctx
}

func TestAuthenticate(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now, authClients)
	good, err := s.auth.Mint("etl", []string{"ns:sales:r"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.authenticate(req("Bearer " + good)); err != nil || p.Subject != "etl" {
		t.Errorf("bearer: %v %v", p, err)
	}
	if p, err := s.authenticate(req("bearer  " + good)); err != nil || p.Subject != "etl" {
		t.Errorf("lower-case bearer: %v %v", p, err)
	}
	for _, auth := range []string{"", "Basic eDp5", "Bearer", "Bearer x"} {
		_, err := s.authenticate(req(auth))
		if e, ok := err.(*Error); !ok || e.Code != 401 {
			t.Errorf("authenticate(%q) = %v; want a 401", auth, err)
		}
	}
	// Dev mode: no token is the dev superuser; a bad token is still refused.
	s.cfg.Dev = true
	if p, err := s.authenticate(req("")); err != nil || p != devPrincipal || !p.gov.CanAdmin() {
		t.Errorf("dev without token: %v %v", p, err)
	}
	if _, err := s.authenticate(req("Bearer x")); err == nil {
		t.Error("dev mode accepted a bad token")
	}
}
