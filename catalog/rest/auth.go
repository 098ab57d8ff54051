package rest

import (
	"bytes"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/oauth"
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

// newAuth builds the token endpoint and verifier (catalog/oauth) from the
// catalog's configuration.
func newAuth(cfg *Config, key []byte, deps *Deps) (*oauth.Server, error) {
	return oauth.New(oauth.Config{
		Audience: cfg.Name, Key: key, TokenTTL: cfg.TokenTTL, SessionTTL: cfg.SessionTTL,
		Clients:              cfg.Clients,
		MaxFailuresPerClient: cfg.MaxAuthFailuresPerClient, MaxFailuresPerIP: cfg.MaxAuthFailuresPerIP,
		FailureWindow: cfg.AuthFailureWindow,
		Services:      []oauth.Client{{ID: BrokerService, Scopes: []string{governance.ScopeBroker, "ns:*:r"}}},
	}, oauth.Deps{Logger: deps.Logger, Audit: deps.Audit, Now: deps.Now})
}

// verifyToken checks an access token (oauth.Server.Verify) and makes its
// principal.
func (s *Server) verifyToken(tok []byte) (*Principal, error) {
	id, err := s.auth.Verify(tok)
	if err != nil {
		var te *oauth.TokenError
		if errors.As(err, &te) {
			return nil, notAuthorized("%s", te.Reason)
		}
		return nil, err
	}
	return &Principal{Subject: id.Subject, Roles: id.Roles, Scopes: id.Scopes, Expiry: id.Expiry, gov: id.Gov}, nil
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
	tok, ok := oauth.CutPrefixFold(h, "bearer ")
	if !ok {
		return nil, notAuthorized("the Authorization header must be a bearer token")
	}
	return s.verifyToken(bytes.TrimSpace(tok))
}

// handleToken serves POST /v1/oauth/tokens (oauth.Server.ServeToken).
func (s *Server) handleToken(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		s.writeError(ctx, errorf(fasthttp.StatusMethodNotAllowed, TypeMethodNotAllowed, "use POST for /v1/oauth/tokens"))
		return
	}
	s.auth.ServeToken(ctx)
}
