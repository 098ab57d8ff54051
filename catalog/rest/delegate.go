package rest

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
)

// Broker delegation and session context (the seeds' "actor-aware
// governance"). A token with the broker scope (or "*") may assert, per
// request, the principal it speaks for and that principal's session
// context:
//
//	?delegate=1&principal=<end user>&actor=<human|agent>&channel=<rest|mcp|smcp>
//
// on any catalog route (LoadTable, credential vending, remote signing,
// listings; ducklake-credentials goes through the same hook). Without
// delegate=1, or from any other token, those parameters are ignored and
// the caller is its token's subject, actor human, channel rest: a client
// that merely passes a principal hint keeps governing as itself. A
// delegated request is audited with both identities (principal and
// delegator).
//
// An agent session is read-only on the catalog: anything but a read is
// refused 403 (audited error_agent_readonly) before it is routed, whatever
// the token's scopes.

// Query parameters of broker delegation.
const (
	paramDelegate  = "delegate"
	paramPrincipal = "principal"
	paramActor     = "actor"
	paramChannel   = "channel"
)

// HeaderDelegated is set on every answer to a request whose delegation was
// honoured: "<principal>; actor=<a>; channel=<c>". A broker checks it to
// fail closed if its delegation was not honoured (a token without the
// broker scope).
const HeaderDelegated = "X-Duckicelake-Delegated"

// session is the session context of a request's principal. The zero value
// is the token's own subject, actor human, channel rest.
type session struct {
	Actor, Channel string
	// Delegator is the broker that asserted the principal; empty when the
	// principal speaks for itself.
	Delegator string
}

func (s session) actor() string {
	if s.Actor == "" {
		return governance.ActorHuman
	}
	return s.Actor
}

func (s session) channel() string {
	if s.Channel == "" {
		return governance.ChannelREST
	}
	return s.Channel
}

// isAgent reports whether an AI agent drives the session.
func (s session) isAgent() bool { return s.Actor == governance.ActorAgent }

// govPrincipal is p as governance sees it.
func (p *Principal) govPrincipal(catalog string) governance.Principal {
	return governance.Principal{ID: p.Subject, Actor: p.actor(), Channel: p.channel(), Delegator: p.Delegator,
		Catalog: catalog, Scopes: p.gov}
}

// claims are the claims of a credential minted for p (its grants and
// expiry are the caller's to add).
func (p *Principal) claims(catalog string) creds.Claims {
	return creds.Claims{Principal: p.Subject, Actor: p.actor(), Channel: p.channel(), Catalog: catalog}
}

// delegate is the hook authenticate calls with the token's principal p: p
// itself, or — for a broker token sending delegate=1 — the principal it
// asserts. p may be shared (the token cache): it is never changed.
func (s *Server) delegate(ctx *fasthttp.RequestCtx, p *Principal) (*Principal, error) {
	args := ctx.QueryArgs()
	if string(args.Peek(paramDelegate)) != "1" {
		return p, s.agentReadOnly(ctx, p)
	}
	if !p.gov.IsBroker() {
		// Ignored, as the seeds say: a non-broker governs as itself.
		s.log.Info("delegation ignored: the token has no broker scope", zap.String("principal", p.Subject))
		return p, s.agentReadOnly(ctx, p)
	}
	d := *p
	d.Delegator = p.Subject
	if v := string(args.Peek(paramPrincipal)); v != "" {
		d.Subject = v
	}
	switch v := string(args.Peek(paramActor)); v {
	case "", governance.ActorHuman, governance.ActorAgent:
		d.Actor = v
	default:
		return nil, badRequest("delegation: actor must be %s or %s, not %q", governance.ActorHuman, governance.ActorAgent, v)
	}
	switch v := string(args.Peek(paramChannel)); v {
	case "", governance.ChannelREST, governance.ChannelMCP, governance.ChannelSMCP:
		d.Channel = v
	default:
		return nil, badRequest("delegation: channel must be %s, %s or %s, not %q",
			governance.ChannelREST, governance.ChannelMCP, governance.ChannelSMCP, v)
	}
	// The asserted principal reads and writes namespaces as far as the
	// broker's token allows, and no further; it governs nothing and
	// delegates nothing itself.
	d.gov = make(governance.Scopes, 0, len(p.gov))
	d.Scopes = nil
	for _, sc := range p.gov {
		if sc.Cap != 0 {
			d.gov = append(d.gov, governance.Scope{Namespace: sc.Namespace, AnyNamespace: sc.AnyNamespace, Cap: sc.Cap})
		}
	}
	ctx.Response.Header.Set(HeaderDelegated, d.Subject+"; actor="+d.actor()+"; channel="+d.channel())
	s.auditSession(ctx, &d, governance.OutcomeAllow, "broker delegation", 0, "")
	return &d, s.agentReadOnly(ctx, &d)
}

// agentReadOnly refuses an agent session anything but a read: GET and
// HEAD, and the POSTs that read (remote signing, whose signer refuses an
// agent every write operation; metrics reports).
func (s *Server) agentReadOnly(ctx *fasthttp.RequestCtx, p *Principal) error {
	if !p.isAgent() || ctx.IsGet() || ctx.IsHead() {
		return nil
	}
	path := ctx.Path()
	if ctx.IsPost() && (bytes.HasSuffix(path, []byte("/sign")) || bytes.HasSuffix(path, []byte("/metrics"))) {
		return nil
	}
	s.auditSession(ctx, p, governance.OutcomeDeny, governance.ReasonAgentReadOnly, fasthttp.StatusForbidden, TypeForbidden)
	return forbidden("%s: %s %s is a change", governance.ReasonAgentReadOnly, ctx.Method(), path)
}

// auditSession records one catalog event about p's session (a broker
// delegation, an agent refused a change) in the audit sink.
func (s *Server) auditSession(ctx *fasthttp.RequestCtx, p *Principal, o governance.Outcome, reason string, status int, code string) {
	ev := governance.Event{
		Source: governance.SourceCatalog, RequestID: ctx.Request.Header.Peek("X-Request-Id"),
		Remote: []byte(ctx.RemoteAddr().String()), Method: ctx.Method(), Action: string(ctx.Path()),
		Principal: p.Subject, Actor: p.actor(), Channel: p.channel(), Delegator: p.Delegator,
		Decision: o, Reason: reason, Status: status, Error: code, Latency: time.Since(ctx.Time()),
	}
	s.sink.Record(&ev)
}

// VerifyBearer checks an access token of this catalog for a server in the
// same process (the MCP server's streamable HTTP endpoint): its subject
// and scopes. The error is safe to show the caller.
func (s *Server) VerifyBearer(tok string) (subject string, scopes governance.Scopes, err error) {
	p, err := s.verifyToken([]byte(tok))
	if err != nil {
		return "", nil, err
	}
	return p.Subject, p.gov, nil
}

// BrokerService is the in-process client the MCP server speaks to the
// catalog as: no secret (the token endpoint never issues it a token), its
// tokens minted by BrokerToken only. Configuring an OAuth client of this
// name is refused.
const BrokerService = "duckicelake-mcp"

// BrokerToken issues a short-lived broker token for a server in the same
// process that speaks to the catalog for its sessions (the MCP server): it
// may read every namespace and assert the principal and context it speaks
// for, and nothing else.
func (s *Server) BrokerToken() (string, error) {
	return s.auth.Mint(BrokerService, []string{governance.ScopeBroker, "ns:*:r"})
}

// refuseAgentWriteVend is the hook a route that vends write access on
// request calls first (ducklake-credentials with write=1): an agent
// session is refused 403, audited error_agent_readonly, whatever its
// token's scopes. Iceberg vending needs no call: vend drops write for an
// agent.
func (s *Server) refuseAgentWriteVend(r *request) error {
	if !r.p.isAgent() {
		return nil
	}
	s.auditSession(r.rc, r.p, governance.OutcomeDeny, governance.ReasonAgentReadOnly, fasthttp.StatusForbidden, TypeForbidden)
	return forbidden("%s: an agent session is vended no write access", governance.ReasonAgentReadOnly)
}
