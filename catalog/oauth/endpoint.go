package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/httplimit"
)

// OAuth2 grant and token types (RFC 6749, RFC 8693).
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccess        = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

const contentTypeJSON = "application/json"

type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

type tokenBody struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
	Scope           string `json:"scope,omitempty"`
}

// refusal is a token request answered with an OAuth2 error: code and
// error are what the client sees, reason what the log and the audit
// trail say; charge counts it as a failed authentication.
type refusal struct {
	status int
	code   string
	desc   string
	reason string
	charge bool
}

// ServeToken serves POST /v1/oauth/tokens: the client-credentials grant,
// and token exchange of a still-valid token of ours for a fresh one (what
// Iceberg clients use to refresh). Errors use the OAuth2 error shape, not
// the ErrorModel, as the spec and clients expect. The caller has checked
// the method.
func (s *Server) ServeToken(ctx *fasthttp.RequestCtx) {
	now := s.now()
	ev := governance.Event{Source: governance.SourceCatalog, Action: governance.ActionIssueToken.String(),
		Method: ctx.Method()}
	ipKey := "ip:" + remoteKey(ctx)
	ev.Remote = []byte(ctx.RemoteIP().String())

	if ct := ctx.Request.Header.ContentType(); !bytes.HasPrefix(bytes.ToLower(ct), []byte("application/x-www-form-urlencoded")) {
		s.refuse(ctx, &ev, refusal{status: 400, code: "invalid_request", desc: "the body must be application/x-www-form-urlencoded", reason: "not a form"})
		return
	}
	form := ctx.PostArgs()
	grant := string(form.Peek("grant_type"))
	// Who is asking, as far as the request says before anything is
	// checked: what the limits count against.
	id := string(form.Peek("client_id"))
	if grant == GrantClientCredentials {
		if bid, _, err := basicAuth(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)); err == nil && bid != "" {
			id = bid
		}
	}
	ev.Principal = id
	if wait := max(s.perIP.wait(ipKey, now), s.perClientWait(id, now)); wait > 0 {
		s.limited(ctx, &ev, wait)
		return
	}

	var r *refusal
	switch grant {
	case GrantClientCredentials:
		r = s.clientCredentials(ctx, form, &ev)
	case GrantTokenExchange:
		r = s.tokenExchange(ctx, form, &ev)
	case "":
		r = &refusal{status: 400, code: "invalid_request", desc: "grant_type is required", reason: "no grant_type"}
	default:
		r = &refusal{status: 400, code: "unsupported_grant_type", desc: "supported grants: client_credentials, token exchange", reason: "unsupported grant " + strconv.Quote(grant)}
	}
	if r == nil {
		return
	}
	if r.charge {
		s.perIP.fail(ipKey, now)
		if id != "" {
			s.perClient.fail("client:"+id, now)
		}
	}
	s.refuse(ctx, &ev, *r)
}

func (s *Server) perClientWait(id string, now time.Time) time.Duration {
	if id == "" {
		return 0
	}
	return s.perClient.wait("client:"+id, now)
}

// remoteKey is the source address the per-address limit counts against.
func remoteKey(ctx *fasthttp.RequestCtx) string {
	if k, ok := httplimit.ClientKey(ctx.RemoteAddr()); ok {
		return k.String()
	}
	return ctx.RemoteAddr().String()
}

func (s *Server) clientCredentials(ctx *fasthttp.RequestCtx, form *fasthttp.Args, ev *governance.Event) *refusal {
	id, secret := string(form.Peek("client_id")), string(form.Peek("client_secret"))
	if h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(h) > 0 {
		if _, ok := cutPrefixFold(h, "bearer "); ok {
			// Iceberg Java sends its current token along when it asks
			// for a new one with client credentials (the REST spec's
			// OAuth2 flow); the form's credentials decide, the token
			// is neither needed nor trusted.
		} else {
			bid, bsecret, err := basicAuth(h)
			if err != nil {
				return &refusal{status: 401, code: "invalid_client", desc: err.Error(), reason: "bad Authorization header", charge: true}
			}
			if id != "" && id != bid {
				return &refusal{status: 400, code: "invalid_request", desc: "client_id differs between the form and the Authorization header", reason: "two client ids"}
			}
			id, secret = bid, bsecret
		}
	}
	ev.Principal = id
	if id == "" || secret == "" {
		return &refusal{status: 401, code: "invalid_client", desc: "client_id and client_secret are required (form fields or HTTP Basic)", reason: "no client credentials", charge: true}
	}
	client := s.clients[id]
	if client == nil || !client.SecretMatches(secret) {
		return &refusal{status: 401, code: "invalid_client", desc: "unknown client or wrong secret", reason: "unknown client or wrong secret", charge: true}
	}
	granted, err := grantScopes(client.Scopes, string(form.Peek("scope")))
	if err != nil {
		return &refusal{status: 400, code: "invalid_scope", desc: err.Error(), reason: err.Error()}
	}
	return s.writeToken(ctx, ev, client.ID, granted, client.Roles, s.now().Truncate(time.Second).Add(s.cfg.SessionTTL))
}

func (s *Server) tokenExchange(ctx *fasthttp.RequestCtx, form *fasthttp.Args, ev *governance.Event) *refusal {
	switch string(form.Peek("subject_token_type")) {
	case TokenTypeAccess, TokenTypeJWT:
	default:
		return &refusal{status: 400, code: "invalid_request", desc: "subject_token_type must be an access token or JWT", reason: "bad subject_token_type"}
	}
	// Verify re-checks the client: gone, the token is refused; narrowed,
	// so are the scopes it can pass on.
	id, err := s.Verify(form.Peek("subject_token"))
	if err != nil {
		return &refusal{status: 400, code: "invalid_grant", desc: "subject_token is not a valid token of this catalog", reason: "subject token: " + err.Error(), charge: true}
	}
	ev.Principal = id.Subject
	if id.SessionExpiry.IsZero() {
		return &refusal{status: 400, code: "invalid_grant", desc: "subject_token carries no session bound; authenticate with client credentials", reason: "subject token without sess_exp"}
	}
	if !s.now().Before(id.SessionExpiry) {
		return &refusal{status: 400, code: "invalid_grant", desc: "the session has ended; authenticate with client credentials", reason: "session ended"}
	}
	granted, err := grantScopes(id.Scopes, string(form.Peek("scope")))
	if err != nil {
		return &refusal{status: 400, code: "invalid_scope", desc: err.Error(), reason: err.Error()}
	}
	return s.writeToken(ctx, ev, id.Subject, granted, id.Roles, id.SessionExpiry)
}

func (s *Server) writeToken(ctx *fasthttp.RequestCtx, ev *governance.Event, sub string, scopes, roles []string, sessExp time.Time) *refusal {
	tok, exp, err := s.mint(sub, scopes, roles, sessExp)
	if err != nil {
		s.log.Error("oauth: mint", zap.Error(err))
		return &refusal{status: 500, code: "server_error", desc: "the token could not be signed", reason: err.Error()}
	}
	body, _ := json.Marshal(tokenBody{
		AccessToken:     tok,
		TokenType:       "bearer",
		ExpiresIn:       int64(exp.Sub(s.now()).Round(time.Second) / time.Second),
		IssuedTokenType: TokenTypeAccess,
		Scope:           strings.Join(scopes, " "),
	})
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetContentType(contentTypeJSON)
	ctx.SetBody(body)
	ev.Decision, ev.Status, ev.Reason = governance.OutcomeAllow, fasthttp.StatusOK, "token issued"
	s.audit.Record(ev)
	return nil
}

// refuse answers r, logs it and audits it.
func (s *Server) refuse(ctx *fasthttp.RequestCtx, ev *governance.Event, r refusal) {
	WriteError(ctx, r.status, r.code, r.desc)
	s.log.Info("oauth: token request refused", zap.String("client_id", ev.Principal), zap.ByteString("remote", ev.Remote),
		zap.Int("status", r.status), zap.String("error", r.code), zap.String("reason", r.reason))
	ev.Decision, ev.Status, ev.Error, ev.Reason = governance.OutcomeDeny, r.status, r.code, r.reason
	s.audit.Record(ev)
}

// limited answers a request over a failure limit: 429 with Retry-After,
// audited; logged at most once a second with the number left out since.
func (s *Server) limited(ctx *fasthttp.RequestCtx, ev *governance.Event, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	WriteError(ctx, fasthttp.StatusTooManyRequests, "slow_down",
		"too many failed authentications from this client or address; retry after "+strconv.FormatInt(secs, 10)+"s")
	ctx.Response.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
	const reason = "too many failed authentications"
	ev.Decision, ev.Status, ev.Error, ev.Reason = governance.OutcomeDeny, fasthttp.StatusTooManyRequests, "slow_down", reason
	s.audit.Record(ev)
	skipped, ok := s.limitedLog.Due()
	if !ok {
		return
	}
	s.log.Warn("oauth: token request refused", zap.String("client_id", ev.Principal), zap.ByteString("remote", ev.Remote),
		zap.Int("status", fasthttp.StatusTooManyRequests), zap.String("reason", reason),
		zap.Int64("retry_after_s", secs), zap.Int64("limited_unlogged", skipped))
}

// WriteError answers an OAuth2 error (RFC 6749 §5.2).
func WriteError(ctx *fasthttp.RequestCtx, status int, code, desc string) {
	body, _ := json.Marshal(errorBody{Error: code, Description: desc})
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType(contentTypeJSON)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if status == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Basic realm="duckicelake"`)
	}
	ctx.SetBody(body)
}

// basicAuth decodes "Basic base64(id:secret)"; RFC 6749 §2.3.1 has both
// parts form-urlencoded before encoding.
func basicAuth(h []byte) (id, secret string, err error) {
	raw, ok := cutPrefixFold(h, "basic ")
	if !ok {
		return "", "", errors.New("the Authorization header must be HTTP Basic client credentials (or the bearer token being replaced)")
	}
	dec, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw)))
	if err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	i, sec, ok := strings.Cut(string(dec), ":")
	if !ok {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	if id, err = url.QueryUnescape(i); err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	if secret, err = url.QueryUnescape(sec); err != nil {
		return "", "", errors.New("malformed HTTP Basic credentials")
	}
	return id, secret, nil
}

// CutPrefixFold cuts prefix from b, ignoring ASCII case.
func CutPrefixFold(b []byte, prefix string) ([]byte, bool) { return cutPrefixFold(b, prefix) }

func cutPrefixFold(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || !strings.EqualFold(string(b[:len(prefix)]), prefix) {
		return b, false
	}
	return b[len(prefix):], true
}
