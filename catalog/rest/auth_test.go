package rest

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// authServer is a Server with only what authentication needs (no database).
func authServer(t *testing.T, now *time.Time) *Server {
	t.Helper()
	cfg := Config{
		Name:     "lake",
		TokenKey: []byte(strings.Repeat("k", 32)),
		Clients: []Client{
			{ID: "etl", Secret: "etl-secret", Scopes: []string{"ns:sales:rw"}, Roles: []string{"writer"}},
			{ID: "admin", Secret: "admin secret&=", Scopes: []string{"*"}},
		},
	}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, tokenKey: cfg.TokenKey, log: zap.NewNop(), now: func() time.Time { return *now },
		clients: map[string]*Client{}, routes: routeTable()}
	for i := range s.cfg.Clients {
		s.clients[s.cfg.Clients[i].ID] = &s.cfg.Clients[i]
	}
	s.tokens.max = 4
	return s
}

func tokenRequest(s *Server, form url.Values, basic string) (*fasthttp.RequestCtx, map[string]any) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/oauth/tokens")
	ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
	if basic != "" {
		ctx.Request.Header.Set("Authorization", "Basic "+basic)
	}
	ctx.Request.SetBodyString(form.Encode())
	s.Handler(&ctx)
	var body map[string]any
	json.Unmarshal(ctx.Response.Body(), &body)
	return &ctx, body
}

func TestTokenEndpoint(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now)

	ctx, body := tokenRequest(s, url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"etl-secret"}, "scope": {"catalog"}}, "")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("client credentials: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if body["token_type"] != "bearer" || body["issued_token_type"] != tokenTypeAccess || body["expires_in"] != float64(3600) || body["scope"] != "ns:sales:rw" {
		t.Errorf("token response = %v", body)
	}
	tok := body["access_token"].(string)
	p, err := s.verifyToken([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "etl" || !p.gov.CanWrite("sales") || p.gov.CanRead("hr") || p.gov.CanAdmin() || len(p.Roles) != 1 || p.Roles[0] != "writer" {
		t.Errorf("principal = %+v", p)
	}
	// The JWT carries what the brief names: sub, scopes, roles, exp.
	var claims map[string]any
	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(raw, &claims)
	for _, k := range []string{"sub", "scopes", "roles", "exp", "iss", "aud"} {
		if _, ok := claims[k]; !ok {
			t.Errorf("JWT has no %q claim: %s", k, raw)
		}
	}

	// HTTP Basic, with RFC 6749's form-encoding of id and secret.
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape("admin") + ":" + url.QueryEscape("admin secret&=")))
	ctx, body = tokenRequest(s, url.Values{"grant_type": {"client_credentials"}, "scope": {"ns:hr:r"}}, basic)
	if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:hr:r" {
		t.Fatalf("basic auth: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}

	// Token exchange refreshes a valid token.
	ctx, body = tokenRequest(s, url.Values{"grant_type": {grantTokenExchange}, "subject_token": {tok}, "subject_token_type": {tokenTypeAccess}}, "")
	if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:sales:rw" {
		t.Fatalf("token exchange: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}

	for _, tt := range []struct {
		name  string
		form  url.Values
		basic string
		code  int
		err   string
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"nope"}}, "", 401, "invalid_client"},
		{"unknown client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"who"}, "client_secret": {"x"}}, "", 401, "invalid_client"},
		{"no secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}}, "", 401, "invalid_client"},
		{"bad basic", url.Values{"grant_type": {"client_credentials"}}, "!!!", 401, "invalid_client"},
		{"scope beyond the client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"etl-secret"}, "scope": {"ns:hr:r"}}, "", 400, "invalid_scope"},
		{"unknown grant", url.Values{"grant_type": {"password"}}, "", 400, "unsupported_grant_type"},
		{"no grant", url.Values{}, "", 400, "invalid_request"},
		{"exchange of junk", url.Values{"grant_type": {grantTokenExchange}, "subject_token": {"x.y.z"}, "subject_token_type": {tokenTypeAccess}}, "", 400, "invalid_grant"},
	} {
		ctx, body := tokenRequest(s, tt.form, tt.basic)
		if ctx.Response.StatusCode() != tt.code || body["error"] != tt.err {
			t.Errorf("%s: %d %s; want %d %s", tt.name, ctx.Response.StatusCode(), ctx.Response.Body(), tt.code, tt.err)
		}
	}
}

func TestVerifyToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now)
	good, _, err := s.issueToken("etl", []string{"ns:sales:r"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(c jwt.Claims, key any, m jwt.SigningMethod) string {
		tok, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	claims := func(mod func(*tokenClaims)) *tokenClaims {
		c := &tokenClaims{Scopes: []string{"*"}, RegisteredClaims: jwt.RegisteredClaims{
			Issuer: issuer, Subject: "x", Audience: jwt.ClaimStrings{"lake"},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
		}}
		mod(c)
		return c
	}
	key := s.tokenKey
	for _, tt := range []struct {
		name, tok, err string
	}{
		{"other key", sign(claims(func(*tokenClaims) {}), []byte(strings.Repeat("o", 32)), jwt.SigningMethodHS256), "signature"},
		{"HS512", sign(claims(func(*tokenClaims) {}), key, jwt.SigningMethodHS512), "access token"},
		{"none", sign(claims(func(*tokenClaims) {}), jwt.UnsafeAllowNoneSignatureType, jwt.SigningMethodNone), "access token"},
		{"expired", sign(claims(func(c *tokenClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) }), key, jwt.SigningMethodHS256), "expired"},
		{"no expiry", sign(claims(func(c *tokenClaims) { c.ExpiresAt = nil }), key, jwt.SigningMethodHS256), "invalid"},
		{"other audience", sign(claims(func(c *tokenClaims) { c.Audience = jwt.ClaimStrings{"other"} }), key, jwt.SigningMethodHS256), "invalid"},
		{"other issuer", sign(claims(func(c *tokenClaims) { c.Issuer = "evil" }), key, jwt.SigningMethodHS256), "invalid"},
		{"bad scope", sign(claims(func(c *tokenClaims) { c.Scopes = []string{"root"} }), key, jwt.SigningMethodHS256), "scope"},
		{"garbage", "not-a-jwt", "invalid"},
		{"tampered", good[:len(good)-2] + "xx", "signature"},
	} {
		_, err := s.verifyToken([]byte(tt.tok))
		if err == nil || !strings.Contains(err.Error(), tt.err) || err.(*Error).Code != 401 {
			t.Errorf("%s: verifyToken = %v; want a 401 mentioning %q", tt.name, err, tt.err)
		}
	}

	// A cached token still expires.
	if _, err := s.verifyToken([]byte(good)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := s.verifyToken([]byte(good)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired cached token: %v", err)
	}
}

func TestAuthenticate(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now)
	good, _, _ := s.issueToken("etl", []string{"ns:sales:r"}, nil)
	req := func(auth string) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/v1/lake/namespaces")
		if auth != "" {
			ctx.Request.Header.Set("Authorization", auth)
		}
		return &ctx
	}
	if p, err := s.authenticate(req("Bearer " + good)); err != nil || p.Subject != "etl" {
		t.Errorf("bearer: %v %v", p, err)
	}
	if p, err := s.authenticate(req("bearer  " + good)); err != nil || p.Subject != "etl" {
		t.Errorf("lower-case bearer: %v %v", p, err)
	}
	for _, auth := range []string{"", "Basic eDp5", "Bearer", "Bearer x"} {
		if _, err := s.authenticate(req(auth)); err == nil {
			t.Errorf("authenticate(%q) succeeded", auth)
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

func TestTokenCacheEviction(t *testing.T) {
	var c tokenCache
	c.max = 8
	exp := time.Now().Add(time.Hour)
	for i := 0; i < 100; i++ {
		c.put([]byte{byte(i)}, &Principal{Expiry: exp})
		if len(c.m) > c.max {
			t.Fatalf("cache grew to %d entries", len(c.m))
		}
	}
	if c.get([]byte{99}, time.Now()) == nil {
		t.Error("the newest token is not cached")
	}
}
