package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/testsupport/audittest"
)

var testKey = []byte(strings.Repeat("k", 32))

var testClients = []Client{
	{ID: "etl", Secret: "etl-secret", Scopes: []string{"ns:sales:rw"}, Roles: []string{"writer"}},
	{ID: "admin", Secret: "admin secret&=", Scopes: []string{"*"}},
}

type fixture struct {
	s     *Server
	now   *time.Time
	audit *audittest.Recorder
	logs  *observer.ObservedLogs
}

func newFixture(t *testing.T, now *time.Time, clients []Client, mod func(*Config)) *fixture {
	t.Helper()
	cfg := Config{Audience: "lake", Key: testKey, Clients: clients}
	if mod != nil {
		mod(&cfg)
	}
	core, logs := observer.New(zap.InfoLevel)
	f := &fixture{now: now, audit: &audittest.Recorder{}, logs: logs}
	s, err := New(cfg, Deps{Logger: zap.New(core), Audit: f.audit, Now: func() time.Time { return *f.now }})
	if err != nil {
		t.Fatal(err)
	}
	s.cache.Max = 4
	f.s = s
	return f
}

// request posts form to the token endpoint from remote, with an
// Authorization header when auth is set.
func (f *fixture) request(form url.Values, auth, remote string) (*fasthttp.RequestCtx, map[string]any) {
	var ctx fasthttp.RequestCtx
	addr, _ := net.ResolveTCPAddr("tcp", remote)
	ctx.Init(&fasthttp.Request{}, addr, nil)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/oauth/tokens")
	ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
	if auth != "" {
		ctx.Request.Header.Set("Authorization", auth)
	}
	ctx.Request.SetBodyString(form.Encode())
	f.s.ServeToken(&ctx)
	var body map[string]any
	json.Unmarshal(ctx.Response.Body(), &body)
	return &ctx, body
}

func (f *fixture) token(t *testing.T, form url.Values) string {
	t.Helper()
	ctx, body := f.request(form, "", "192.0.2.1:1000")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("token request %v: %d %s", form, ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return body["access_token"].(string)
}

func creds(id, secret string) url.Values {
	return url.Values{"grant_type": {GrantClientCredentials}, "client_id": {id}, "client_secret": {secret}}
}

func exchange(tok string) url.Values {
	return url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {tok}, "subject_token_type": {TokenTypeAccess}}
}

func TestTokenEndpoint(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, &now, testClients, nil)

	form := creds("etl", "etl-secret")
	form.Set("scope", "catalog")
	ctx, body := f.request(form, "", "192.0.2.1:1000")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("client credentials: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if body["token_type"] != "bearer" || body["issued_token_type"] != TokenTypeAccess || body["expires_in"] != float64(3600) || body["scope"] != "ns:sales:rw" {
		t.Errorf("token response = %v", body)
	}
	tok := body["access_token"].(string)
	id, err := f.s.Verify([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "etl" || !id.Gov.CanWrite("sales") || id.Gov.CanRead("hr") || id.Gov.CanAdmin() || !slices.Equal(id.Roles, []string{"writer"}) {
		t.Errorf("identity = %+v", id)
	}
	if !id.SessionExpiry.Equal(now.Add(DefaultSessionTTL)) {
		t.Errorf("session expiry = %v; want %v", id.SessionExpiry, now.Add(DefaultSessionTTL))
	}
	// The JWT carries sub, scopes, roles, exp and the session bound.
	var claims map[string]any
	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(raw, &claims)
	for _, k := range []string{"sub", "scopes", "roles", "exp", "iss", "aud", "sess_exp"} {
		if _, ok := claims[k]; !ok {
			t.Errorf("JWT has no %q claim: %s", k, raw)
		}
	}

	// HTTP Basic, with RFC 6749's form-encoding of id and secret.
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape("admin")+":"+url.QueryEscape("admin secret&=")))
	ctx, body = f.request(url.Values{"grant_type": {GrantClientCredentials}, "scope": {"ns:hr:r"}}, basic, "192.0.2.1:1000")
	if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:hr:r" {
		t.Fatalf("basic auth: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}

	// Token exchange refreshes a valid token.
	ctx, body = f.request(exchange(tok), "", "192.0.2.1:1000")
	if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:sales:rw" {
		t.Fatalf("token exchange: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}

	for _, tt := range []struct {
		name string
		form url.Values
		auth string
		code int
		err  string
	}{
		{"wrong secret", creds("etl", "nope"), "", 401, "invalid_client"},
		{"unknown client", creds("who", "x"), "", 401, "invalid_client"},
		{"no secret", url.Values{"grant_type": {GrantClientCredentials}, "client_id": {"etl"}}, "", 401, "invalid_client"},
		{"bad basic", url.Values{"grant_type": {GrantClientCredentials}}, "Basic !!!", 401, "invalid_client"},
		{"other scheme", url.Values{"grant_type": {GrantClientCredentials}}, "Digest x", 401, "invalid_client"},
		{"bearer without form credentials", url.Values{"grant_type": {GrantClientCredentials}}, "Bearer " + tok, 401, "invalid_client"},
		{"scope beyond the client", url.Values{"grant_type": {GrantClientCredentials}, "client_id": {"etl"}, "client_secret": {"etl-secret"}, "scope": {"ns:hr:r"}}, "", 400, "invalid_scope"},
		{"unknown grant", url.Values{"grant_type": {"password"}}, "", 400, "unsupported_grant_type"},
		{"no grant", url.Values{}, "", 400, "invalid_request"},
		{"exchange of junk", exchange("x.y.z"), "", 400, "invalid_grant"},
	} {
		ctx, body := f.request(tt.form, tt.auth, "192.0.2.9:1000")
		if ctx.Response.StatusCode() != tt.code || body["error"] != tt.err {
			t.Errorf("%s: %d %s; want %d %s", tt.name, ctx.Response.StatusCode(), ctx.Response.Body(), tt.code, tt.err)
		}
	}
	// Every answer is audited: three tokens issued, ten refusals, each
	// refusal logged with its reason.
	allow, deny := 0, 0
	for _, ev := range f.audit.Events() {
		if ev.Action != "IssueToken" || ev.Source != governance.SourceCatalog {
			t.Errorf("audit event %+v", ev)
		}
		switch ev.Decision {
		case governance.OutcomeAllow:
			allow++
		case governance.OutcomeDeny:
			deny++
			if ev.Reason == "" || ev.Status < 400 {
				t.Errorf("refusal audited without reason or status: %+v", ev)
			}
		}
	}
	if allow != 3 || deny != 10 {
		t.Errorf("audited %d issued, %d refused; want 3, 10", allow, deny)
	}
	if n := f.logs.FilterMessage("oauth: token request refused").FilterFieldKey("reason").Len(); n != 10 {
		t.Errorf("%d refusals logged; want 10", n)
	}
}

// TestBearerOnClientCredentials: Iceberg Java sends its current token as
// a bearer when it asks for a new one with client credentials (issue 15
// item 2); the form's credentials decide.
func TestBearerOnClientCredentials(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, &now, testClients, nil)
	old := f.token(t, creds("etl", "etl-secret"))
	for _, auth := range []string{"Bearer " + old, "bearer " + old, "Bearer not-even-a-token"} {
		ctx, body := f.request(creds("etl", "etl-secret"), auth, "192.0.2.1:1000")
		if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:sales:rw" {
			t.Errorf("client credentials with %q: %d %s", auth[:10], ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	// The bearer is not a way in: a wrong secret stays wrong.
	if ctx, _ := f.request(creds("etl", "nope"), "Bearer "+old, "192.0.2.1:1000"); ctx.Response.StatusCode() != 401 {
		t.Errorf("wrong secret with a bearer: %d", ctx.Response.StatusCode())
	}
}

// TestRemovedClient: after a restart without a client, its tokens stop
// working and cannot be exchanged (issue 14 item 5).
func TestRemovedClient(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	before := newFixture(t, &now, testClients, nil)
	tok := before.token(t, creds("etl", "etl-secret"))

	after := newFixture(t, &now, testClients[1:], nil) // etl removed
	if _, err := after.s.Verify([]byte(tok)); err == nil || !strings.Contains(err.Error(), "no longer configured") {
		t.Errorf("token of a removed client: %v", err)
	}
	if ctx, body := after.request(exchange(tok), "", "192.0.2.1:1000"); ctx.Response.StatusCode() != 400 || body["error"] != "invalid_grant" {
		t.Errorf("exchange for a removed client: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// TestNarrowedClient: after a restart with fewer scopes or roles, a
// client's old token is narrowed to what both allow, and so is what token
// exchange issues (issue 14 item 5).
func TestNarrowedClient(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	wide := []Client{{ID: "etl", Secret: "pw", Scopes: []string{"ns:sales:rw", "ns:hr:r"}, Roles: []string{"writer", "auditor"}}}
	tok := newFixture(t, &now, wide, nil).token(t, creds("etl", "pw"))

	narrow := []Client{{ID: "etl", Secret: "pw", Scopes: []string{"ns:sales:r"}, Roles: []string{"auditor"}}}
	f := newFixture(t, &now, narrow, nil)
	id, err := f.s.Verify([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(id.Scopes, []string{"ns:sales:r"}) || id.Gov.CanWrite("sales") || id.Gov.CanRead("hr") || !slices.Equal(id.Roles, []string{"auditor"}) {
		t.Errorf("narrowed identity = %+v", id)
	}
	ctx, body := f.request(exchange(tok), "", "192.0.2.1:1000")
	if ctx.Response.StatusCode() != 200 || body["scope"] != "ns:sales:r" {
		t.Fatalf("exchange: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	fresh, _ := f.s.Verify([]byte(body["access_token"].(string)))
	if !slices.Equal(fresh.Roles, []string{"auditor"}) {
		t.Errorf("exchanged token's roles = %v", fresh.Roles)
	}
	// Asking the exchange for a scope the client lost is refused.
	form := exchange(tok)
	form.Set("scope", "ns:sales:w")
	if ctx, body := f.request(form, "", "192.0.2.1:1000"); ctx.Response.StatusCode() != 400 || body["error"] != "invalid_scope" {
		t.Errorf("exchange asking for a lost scope: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func TestNarrowScopes(t *testing.T) {
	for _, tt := range []struct {
		token, client, want []string
	}{
		{[]string{"ns:a:rw"}, []string{"ns:a:rw"}, []string{"ns:a:rw"}},
		{[]string{"ns:a:rw"}, []string{"ns:a:r"}, []string{"ns:a:r"}},
		{[]string{"ns:a:rw"}, []string{"ns:*:r"}, []string{"ns:a:r"}},
		{[]string{"ns:a:rw"}, []string{"ns:b:rw"}, nil},
		{[]string{"*"}, []string{"ns:a:r", "governance:read"}, []string{"ns:a:r", "governance:read"}},
		{[]string{"*"}, []string{"ns:*:rw"}, []string{"ns:*:rw"}},
		{[]string{"ns:*:w"}, []string{"ns:a:rw"}, []string{"ns:a:w"}},
		{[]string{"governance:admin"}, []string{"governance:read"}, []string{"governance:read"}},
		{[]string{"broker", "ns:a:r"}, []string{"ns:a:r"}, []string{"ns:a:r"}},
		{[]string{"*"}, []string{"*"}, []string{"*"}},
		{[]string{"ns:a:r"}, nil, nil},
	} {
		if got := narrowScopes(tt.token, tt.client); !slices.Equal(got, tt.want) {
			t.Errorf("narrowScopes(%v, %v) = %v; want %v", tt.token, tt.client, got, tt.want)
		}
		// Whatever comes out is covered by both sides.
		tok, _ := governance.ParseScopes(tt.token)
		cl, _ := governance.ParseScopes(tt.client)
		out, _ := governance.ParseScopes(narrowScopes(tt.token, tt.client))
		for _, o := range out {
			if !tok.Covers(o) || !cl.Covers(o) {
				t.Errorf("narrowScopes(%v, %v) yields %+v, beyond one side", tt.token, tt.client, o)
			}
		}
	}
}

// TestSessionBound: token exchange never yields a token valid past the
// session's end, and refuses once it has passed (issue 14 item 5).
func TestSessionBound(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	start := now
	f := newFixture(t, &now, testClients, func(c *Config) { c.SessionTTL = 150 * time.Minute })
	tok := f.token(t, creds("etl", "etl-secret"))
	for i := 0; ; i++ {
		now = now.Add(50 * time.Minute)
		ctx, body := f.request(exchange(tok), "", "192.0.2.1:1000")
		if !now.Before(start.Add(150 * time.Minute)) {
			if ctx.Response.StatusCode() != 400 || body["error"] != "invalid_grant" {
				t.Fatalf("exchange after the session ended: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
			break
		}
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("exchange %d: %d %s", i, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		tok = body["access_token"].(string)
		id, err := f.s.Verify([]byte(tok))
		if err != nil {
			t.Fatal(err)
		}
		if id.Expiry.After(start.Add(150*time.Minute)) || !id.SessionExpiry.Equal(start.Add(150*time.Minute)) {
			t.Errorf("exchange %d: token expires %v, session %v; the session started %v", i, id.Expiry, id.SessionExpiry, start)
		}
	}
	// A token without a session bound (minted before sessions were) is
	// not exchanged: its client authenticates again.
	legacy, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{Scopes: []string{"ns:sales:r"}, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: Issuer, Subject: "etl", Audience: jwt.ClaimStrings{"lake"}, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}}).SignedString(testKey)
	if err != nil {
		t.Fatal(err)
	}
	if ctx, body := f.request(exchange(legacy), "", "192.0.2.1:1000"); ctx.Response.StatusCode() != 400 || body["error"] != "invalid_grant" {
		t.Errorf("exchange of a token without sess_exp: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// TestFailureLimits: failed authentications per client id and per source
// address are bounded; beyond the bound every attempt, right secret or not,
// is answered 429 with Retry-After, audited and logged, until the window
// has refilled.
func TestFailureLimits(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, &now, testClients, func(c *Config) {
		c.MaxFailuresPerClient, c.MaxFailuresPerIP, c.FailureWindow = 10, 30, time.Minute
	})
	// 300 wrong secrets for one client, from many addresses, at one
	// instant: ten are answered, the rest refused.
	codes := map[int]int{}
	for i := 0; i < 300; i++ {
		ctx, body := f.request(creds("etl", "guess"), "", "198.51.100."+itoa(i%200)+":4000")
		codes[ctx.Response.StatusCode()]++
		if ctx.Response.StatusCode() == 429 {
			if ra := string(ctx.Response.Header.Peek("Retry-After")); ra == "" || ra == "0" || body["error"] != "slow_down" {
				t.Fatalf("429 without Retry-After or OAuth error: %q %s", ra, ctx.Response.Body())
			}
		}
	}
	if codes[401] != 10 || codes[429] != 290 {
		t.Errorf("answers: %v; want 10×401, 290×429", codes)
	}
	// The right secret is refused too while the client is locked out.
	if ctx, _ := f.request(creds("etl", "etl-secret"), "", "192.0.2.1:1000"); ctx.Response.StatusCode() != 429 {
		t.Errorf("right secret during the lockout: %d", ctx.Response.StatusCode())
	}
	// Another client is not locked out.
	f.token(t, creds("admin", "admin secret&="))

	// One address trying many client ids: 30 answered, then 429, also for
	// a client it has not tried yet.
	codes = map[int]int{}
	for i := 0; i < 100; i++ {
		ctx, _ := f.request(creds("c"+itoa(i), "guess"), "", "203.0.113.7:5000")
		codes[ctx.Response.StatusCode()]++
	}
	if codes[401] != 30 || codes[429] != 70 {
		t.Errorf("answers from one address: %v; want 30×401, 70×429", codes)
	}
	if ctx, _ := f.request(creds("admin", "admin secret&="), "", "203.0.113.7:5001"); ctx.Response.StatusCode() != 429 {
		t.Errorf("right secret from a locked-out address: %d", ctx.Response.StatusCode())
	}
	// IPv6 addresses count by /64.
	for i := 0; i < 30; i++ {
		f.request(creds("v6-"+itoa(i), "guess"), "", "[2001:db8::"+itoa(i+1)+"]:5000")
	}
	if ctx, _ := f.request(creds("admin", "admin secret&="), "", "[2001:db8::ffff]:5000"); ctx.Response.StatusCode() != 429 {
		t.Errorf("another address of the same /64: %d", ctx.Response.StatusCode())
	}

	// Audited and logged.
	limited := 0
	for _, ev := range f.audit.Events() {
		if ev.Status == 429 {
			limited++
			if ev.Decision != governance.OutcomeDeny || ev.Reason == "" || ev.Action != "IssueToken" {
				t.Errorf("429 audited as %+v", ev)
			}
		}
	}
	if limited != 290+1+70+1+1 {
		t.Errorf("%d 429s audited; want %d", limited, 290+1+70+1+1)
	}
	if f.logs.FilterMessage("oauth: token request refused").FilterField(zap.Int("status", 429)).Len() == 0 {
		t.Error("no 429 logged")
	}

	// After the window, the client may try again; a success costs nothing.
	now = now.Add(time.Minute)
	f.token(t, creds("etl", "etl-secret"))
	for i := 0; i < 20; i++ {
		f.token(t, creds("etl", "etl-secret"))
	}
	// Failed exchanges count against the address.
	codes = map[int]int{}
	for i := 0; i < 40; i++ {
		ctx, _ := f.request(exchange("forged"), "", "192.0.2.200:1")
		codes[ctx.Response.StatusCode()]++
	}
	if codes[400] != 30 || codes[429] != 10 {
		t.Errorf("forged exchanges: %v; want 30×400, 10×429", codes)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestFailureLimiterBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := newFailureLimiter(3, time.Minute, 64)
	for i := 0; i < 10_000; i++ {
		l.fail("k"+itoa(i), now)
		if len(l.m) > 64 {
			t.Fatalf("limiter grew to %d keys", len(l.m))
		}
	}
	// The bucket refills evenly: one attempt back after a third of the window.
	for i := 0; i < 3; i++ {
		l.fail("x", now)
	}
	if w := l.wait("x", now); w != time.Minute/3 {
		t.Errorf("wait = %v; want %v", w, time.Minute/3)
	}
	if w := l.wait("x", now.Add(time.Minute/3)); w != 0 {
		t.Errorf("wait after a third of the window = %v", w)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, &now, testClients, nil)
	good, err := f.s.Mint("etl", []string{"ns:sales:r"})
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
	mk := func(mod func(*claims)) *claims {
		c := &claims{Scopes: []string{"*"}, RegisteredClaims: jwt.RegisteredClaims{
			Issuer: Issuer, Subject: "admin", Audience: jwt.ClaimStrings{"lake"},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
		}}
		mod(c)
		return c
	}
	key := testKey
	for _, tt := range []struct {
		name, tok, err string
	}{
		{"other key", sign(mk(func(*claims) {}), []byte(strings.Repeat("o", 32)), jwt.SigningMethodHS256), "signature"},
		{"HS512", sign(mk(func(*claims) {}), key, jwt.SigningMethodHS512), "access token"},
		{"none", sign(mk(func(*claims) {}), jwt.UnsafeAllowNoneSignatureType, jwt.SigningMethodNone), "access token"},
		{"expired", sign(mk(func(c *claims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) }), key, jwt.SigningMethodHS256), "expired"},
		{"no expiry", sign(mk(func(c *claims) { c.ExpiresAt = nil }), key, jwt.SigningMethodHS256), "invalid"},
		{"other audience", sign(mk(func(c *claims) { c.Audience = jwt.ClaimStrings{"other"} }), key, jwt.SigningMethodHS256), "invalid"},
		{"other issuer", sign(mk(func(c *claims) { c.Issuer = "evil" }), key, jwt.SigningMethodHS256), "invalid"},
		{"bad scope", sign(mk(func(c *claims) { c.Scopes = []string{"root"} }), key, jwt.SigningMethodHS256), "scope"},
		{"unknown subject", sign(mk(func(c *claims) { c.Subject = "mallory" }), key, jwt.SigningMethodHS256), "no longer configured"},
		{"garbage", "not-a-jwt", "invalid"},
		{"tampered", good[:len(good)-2] + "xx", "signature"},
	} {
		_, err := f.s.Verify([]byte(tt.tok))
		var te *TokenError
		if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &te) {
			t.Errorf("%s: Verify = %v; want a TokenError mentioning %q", tt.name, err, tt.err)
		}
	}

	// A cached token still expires.
	if _, err := f.s.Verify([]byte(good)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := f.s.Verify([]byte(good)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired cached token: %v", err)
	}
}

func TestTokenCacheEviction(t *testing.T) {
	var c tokenCache
	c.Max = 8
	exp := time.Now().Add(time.Hour)
	for i := 0; i < 100; i++ {
		c.put([]byte{byte(i)}, &Identity{Expiry: exp})
		if c.Len() > c.Max {
			t.Fatalf("cache grew to %d entries", c.Len())
		}
	}
	if c.get([]byte{99}, time.Now()) == nil {
		t.Error("the newest token is not cached")
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"short key", Config{Key: []byte("short")}},
		{"duplicate client", Config{Key: testKey, Clients: []Client{{ID: "a"}, {ID: "a"}}}},
		{"bad scope", Config{Key: testKey, Clients: []Client{{ID: "a", Scopes: []string{"root"}}}}},
		{"session shorter than a token", Config{Key: testKey, TokenTTL: time.Hour, SessionTTL: time.Minute}},
	} {
		if _, err := New(tt.cfg, Deps{}); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}
