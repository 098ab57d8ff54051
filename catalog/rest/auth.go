package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/governance"
)

// Principal is who a request acts for: the subject of its access token and
// what the token's scopes allow.
type Principal struct {
	Subject string
	Roles   []string
	Scopes  []string
	Expiry  time.Time

	// gov are the parsed scopes (governance's grammar).
	gov governance.Scopes
	// session is the session context, set by broker delegation (delegate.go).
	session
}

// devPrincipal is the caller in dev mode when no token is sent.
var devPrincipal = &Principal{Subject: "dev", Scopes: []string{"*"}, gov: governance.AllScopes}

// CanRead reports whether p may read namespace ns.
func (p *Principal) CanRead(ns string) bool { return p.gov.CanRead(ns) }

// CanWrite reports whether p may change namespace ns.
func (p *Principal) CanWrite(ns string) bool { return p.gov.CanWrite(ns) }

// canAdmin reports whether p may create or drop namespaces: write on every
// namespace.
func (p *Principal) canAdmin() bool { return p.gov.CanAdmin() }

// issuer is the iss claim of the catalog's tokens.
const issuer = "duckicelake"

// tokenClaims is the JWT body.
type tokenClaims struct {
	Scopes []string `json:"scopes"`
	Roles  []string `json:"roles,omitempty"`
	jwt.RegisteredClaims
}

// issueToken signs an access token for sub.
func (s *Server) issueToken(sub string, scopes, roles []string) (string, time.Time, error) {
	now := s.now().Truncate(time.Second)
	exp := now.Add(s.cfg.TokenTTL)
	c := tokenClaims{
		Scopes: scopes,
		Roles:  roles,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   sub,
			Audience:  jwt.ClaimStrings{s.cfg.Name},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.tokenKey)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign token: %w", err)
	}
	return tok, exp, nil
}

// verifyToken checks an access token: HS256 under the catalog's key, issued
// by this catalog for this catalog name, within its validity window.
func (s *Server) verifyToken(tok []byte) (*Principal, error) {
	now := s.now()
	if p := s.tokens.get(tok, now); p != nil {
		return p, nil
	}
	var c tokenClaims
	_, err := jwt.ParseWithClaims(string(tok), &c, func(*jwt.Token) (any, error) { return s.tokenKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(s.cfg.Name),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithLeeway(5*time.Second))
	if err != nil {
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			return nil, notAuthorized("access token expired; request a new one")
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			return nil, notAuthorized("access token signature does not verify")
		default:
			return nil, notAuthorized("invalid access token")
		}
	}
	gov, err := governance.ParseScopes(c.Scopes)
	if err != nil {
		return nil, notAuthorized("invalid access token: %v", err)
	}
	p := &Principal{Subject: c.Subject, Roles: c.Roles, Scopes: c.Scopes, Expiry: c.ExpiresAt.Time, gov: gov}
	s.tokens.put(tok, p)
	return p, nil
}

// authenticate finds the request's principal from its bearer token.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx) (*Principal, error) {
	p, err := s.tokenPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return s.delegate(ctx, p)
}

func (s *Server) tokenPrincipal(ctx *fasthttp.RequestCtx) (*Principal, error) {
	h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(h) == 0 {
		if s.cfg.Dev {
			return devPrincipal, nil
		}
		return nil, notAuthorized("missing bearer token: get one from POST /v1/oauth/tokens (client credentials)")
	}
	tok, ok := cutPrefixFold(h, "bearer ")
	if !ok {
		return nil, notAuthorized("the Authorization header must be a bearer token")
	}
	return s.verifyToken(bytes.TrimSpace(tok))
}

func cutPrefixFold(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || !strings.EqualFold(string(b[:len(prefix)]), prefix) {
		return b, false
	}
	return b[len(prefix):], true
}

// tokenCache remembers verified tokens until they expire, so a request
// repeating a token skips the HMAC and JSON decoding.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[string]*Principal
	max int
}

func (c *tokenCache) get(tok []byte, now time.Time) *Principal {
	c.mu.RLock()
	p := c.m[string(tok)]
	c.mu.RUnlock()
	if p == nil || !now.Before(p.Expiry) {
		return nil
	}
	return p
}

func (c *tokenCache) put(tok []byte, p *Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*Principal)
	}
	if len(c.m) >= c.max {
		// Random eviction: map iteration order is unspecified.
		n := 0
		for k := range c.m {
			delete(c.m, k)
			if n++; n >= c.max/4+1 {
				break
			}
		}
	}
	c.m[string(tok)] = p
}

// OAuth2 grant and token types (RFC 6749, RFC 8693).
const (
	grantClientCredentials = "client_credentials"
	grantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess        = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

type oauthToken struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
	Scope           string `json:"scope,omitempty"`
}

// handleToken serves POST /v1/oauth/tokens: the client-credentials grant,
// and token exchange of a still-valid token of ours for a fresh one (what
// Iceberg clients use to refresh). Errors use the OAuth2 error shape, not
// the ErrorModel, as the spec and clients expect.
func (s *Server) handleToken(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		s.writeError(ctx, errorf(fasthttp.StatusMethodNotAllowed, TypeMethodNotAllowed, "use POST for /v1/oauth/tokens"))
		return
	}
	if ct := ctx.Request.Header.ContentType(); !bytes.HasPrefix(bytes.ToLower(ct), []byte("application/x-www-form-urlencoded")) {
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	form := ctx.PostArgs()
	switch grant := string(form.Peek("grant_type")); grant {
	case grantClientCredentials:
		s.clientCredentials(ctx, form)
	case grantTokenExchange:
		s.tokenExchange(ctx, form)
	case "":
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "unsupported_grant_type", "supported grants: client_credentials, token exchange")
	}
}

func (s *Server) clientCredentials(ctx *fasthttp.RequestCtx, form *fasthttp.Args) {
	id, secret := string(form.Peek("client_id")), string(form.Peek("client_secret"))
	if h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(h) > 0 {
		bid, bsecret, err := basicAuth(h)
		if err != nil {
			writeOAuthError(ctx, fasthttp.StatusUnauthorized, "invalid_client", err.Error())
			return
		}
		if id != "" && id != bid {
			writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_request", "client_id differs between the form and the Authorization header")
			return
		}
		id, secret = bid, bsecret
	}
	if id == "" || secret == "" {
		writeOAuthError(ctx, fasthttp.StatusUnauthorized, "invalid_client", "client_id and client_secret are required (form fields or HTTP Basic)")
		return
	}
	client := s.clients[id]
	if client == nil || !client.secretMatches(secret) {
		writeOAuthError(ctx, fasthttp.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	granted, err := grantScopes(client.Scopes, string(form.Peek("scope")))
	if err != nil {
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_scope", err.Error())
		return
	}
	s.writeToken(ctx, client.ID, granted, client.Roles)
}

func (s *Server) tokenExchange(ctx *fasthttp.RequestCtx, form *fasthttp.Args) {
	subject := form.Peek("subject_token")
	switch string(form.Peek("subject_token_type")) {
	case tokenTypeAccess, tokenTypeJWT:
	default:
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_request", "subject_token_type must be an access token or JWT")
		return
	}
	p, err := s.verifyToken(subject)
	if err != nil {
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_grant", "subject_token is not a valid token of this catalog")
		return
	}
	granted, err := grantScopes(p.Scopes, string(form.Peek("scope")))
	if err != nil {
		writeOAuthError(ctx, fasthttp.StatusBadRequest, "invalid_scope", err.Error())
		return
	}
	s.writeToken(ctx, p.Subject, granted, p.Roles)
}

func (s *Server) writeToken(ctx *fasthttp.RequestCtx, sub string, scopes, roles []string) {
	tok, exp, err := s.issueToken(sub, scopes, roles)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	body, _ := json.Marshal(oauthToken{
		AccessToken:     tok,
		TokenType:       "bearer",
		ExpiresIn:       int64(exp.Sub(s.now()).Round(time.Second) / time.Second),
		IssuedTokenType: tokenTypeAccess,
		Scope:           strings.Join(scopes, " "),
	})
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetContentType(contentTypeJSON)
	ctx.SetBody(body)
}

// grantScopes decides the scopes of a new token. Scopes outside this
// catalog's grammar ("catalog", which Iceberg clients request by default,
// or DuckDB's "PRINCIPAL_ROLE:ALL") ask for nothing in particular; with no
// other scope requested the token gets everything allowed. Otherwise each
// requested scope must be covered by the allowed ones.
func grantScopes(allowed []string, requested string) ([]string, error) {
	have, err := governance.ParseScopes(allowed)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Fields(requested) {
		if !governance.IsScope(r) {
			continue
		}
		sc, err := governance.ParseScope(r)
		if err != nil {
			return nil, err
		}
		if !have.Covers(sc) {
			return nil, fmt.Errorf("scope %q is not allowed for this client", r)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return append([]string{}, allowed...), nil
	}
	return out, nil
}

// basicAuth decodes "Basic base64(id:secret)"; RFC 6749 §2.3.1 has both
// parts form-urlencoded before encoding.
func basicAuth(h []byte) (id, secret string, err error) {
	raw, ok := cutPrefixFold(h, "basic ")
	if !ok {
		return "", "", errors.New("the Authorization header must be HTTP Basic client credentials")
	}
	dec, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw)))
	if err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	i, s, ok := strings.Cut(string(dec), ":")
	if !ok {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	if id, err = url.QueryUnescape(i); err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	if secret, err = url.QueryUnescape(s); err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	return id, secret, nil
}

func writeOAuthError(ctx *fasthttp.RequestCtx, code int, typ, desc string) {
	body, _ := json.Marshal(oauthError{Error: typ, Description: desc})
	ctx.Response.Reset()
	ctx.SetStatusCode(code)
	ctx.SetContentType(contentTypeJSON)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if code == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Basic realm="duckicelake"`)
	}
	ctx.SetBody(body)
}
