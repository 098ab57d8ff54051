package rest

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/governance"
)

// TestDelegation: delegate=1 from a broker (or *) token asserts the
// principal and its session context; from any other token, or without
// delegate=1, the parameters are ignored and the caller is its token's
// subject, human, rest. The token cache's principal is never changed.
func TestDelegation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now, []Client{{ID: "gw", Secret: "x", Scopes: []string{"*"}}, {ID: "root", Secret: "x", Scopes: []string{"*"}},
		{ID: "eve", Secret: "x", Scopes: []string{"*"}}, {ID: "auditor", Secret: "x", Scopes: []string{"*"}}})
	tok := func(sub string, scopes ...string) string {
		tk, err := s.auth.Mint(sub, scopes)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	broker := tok("gw", "broker", "ns:analytics:r")
	star := tok("root", "*")
	plain := tok("eve", "ns:analytics:rw")
	gov := tok("auditor", "governance:admin", "ns:*:r")

	type want struct {
		subject, actor, channel, delegator string
		status                             int // 0: authenticated
	}
	cases := []struct {
		name, token, method, query string
		want                       want
	}{
		{"broker delegates", broker, "GET", "delegate=1&principal=alice&actor=agent&channel=mcp", want{"alice", "agent", "mcp", "gw", 0}},
		{"star delegates", star, "GET", "delegate=1&principal=alice&actor=human", want{"alice", "human", "rest", "root", 0}},
		{"broker without delegate=1", broker, "GET", "principal=alice&actor=agent&channel=mcp", want{"gw", "human", "rest", "", 0}},
		{"broker with delegate=true", broker, "GET", "delegate=true&principal=alice", want{"gw", "human", "rest", "", 0}},
		{"non-broker sends delegation", plain, "GET", "delegate=1&principal=alice&actor=human&channel=rest", want{"eve", "human", "rest", "", 0}},
		{"governance admin is no broker", gov, "GET", "delegate=1&principal=alice", want{"auditor", "human", "rest", "", 0}},
		{"non-broker claims agent to dodge nothing", plain, "POST", "delegate=1&actor=agent", want{"eve", "human", "rest", "", 0}},
		{"broker bad actor", broker, "GET", "delegate=1&principal=alice&actor=robot", want{status: 400}},
		{"broker bad channel", broker, "GET", "delegate=1&principal=alice&channel=smtp", want{status: 400}},
		{"delegated agent may not write", broker, "POST", "delegate=1&principal=alice&actor=agent", want{status: 403}},
		{"delegated agent may not delete", star, "DELETE", "delegate=1&principal=alice&actor=agent", want{status: 403}},
		{"delegated human may write", star, "POST", "delegate=1&principal=alice", want{"alice", "human", "rest", "root", 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(c.method)
			ctx.Request.SetRequestURI("/v1/lake/namespaces/analytics/tables/customers?" + c.query)
			ctx.Request.Header.Set("Authorization", "Bearer "+c.token)
			p, err := s.authenticate(&ctx)
			if c.want.status != 0 {
				e, ok := err.(*Error)
				if !ok || e.Code != c.want.status {
					t.Fatalf("err = %v, want status %d", err, c.want.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gp := p.govPrincipal("lake")
			got := want{gp.ID, gp.ActorOrDefault(), gp.ChannelOrDefault(), gp.Delegator, 0}
			if got != c.want {
				t.Fatalf("principal = %+v, want %+v", got, c.want)
			}
			hdr := string(ctx.Response.Header.Peek(HeaderDelegated))
			if (c.want.delegator != "") != (hdr != "") {
				t.Errorf("%s = %q", HeaderDelegated, hdr)
			}
			if c.want.delegator != "" && (gp.Scopes.IsBroker() || gp.Scopes.Governs(governance.GovRead)) {
				t.Errorf("a delegated principal keeps the broker's broker or governance scope: %+v", gp.Scopes)
			}
		})
	}
	// The cached principal of the broker's token is still the broker.
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v1/lake/namespaces")
	ctx.Request.Header.Set("Authorization", "Bearer "+broker)
	p, err := s.authenticate(&ctx)
	if err != nil || p.Subject != "gw" || p.isAgent() || p.Delegator != "" {
		t.Fatalf("broker after delegations = %+v, %v", p, err)
	}
}

// TestAgentWriteVend: the hook of write vends refuses an agent session,
// delegated or not, and lets a human through.
func TestAgentWriteVend(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := authServer(t, &now, authClients)
	for _, c := range []struct {
		p    Principal
		want int
	}{
		{Principal{Subject: "alice", session: session{Actor: governance.ActorAgent, Channel: governance.ChannelMCP, Delegator: "gw"}}, 403},
		{Principal{Subject: "bot", session: session{Actor: governance.ActorAgent}}, 403},
		{Principal{Subject: "alice"}, 0},
		{Principal{Subject: "alice", session: session{Actor: governance.ActorHuman, Delegator: "gw"}}, 0},
	} {
		var ctx fasthttp.RequestCtx
		err := s.refuseAgentWriteVend(&request{rc: &ctx, p: &c.p})
		got := 0
		if e, ok := err.(*Error); ok {
			got = e.Code
		} else if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%+v: %v, want %d", c.p, err, c.want)
		}
	}
}
