package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestReadyHidesDatabase: with the catalog database unreachable, /readyz
// says so without the database's user, name or address (issue 14); the
// log has the detail.
func TestReadyHidesDatabase(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://sekrituser@"+addr+"/sekritdb?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c := &catalogService{pool: pool}
	core, logs := observer.New(zap.InfoLevel)
	next := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("next") }
	h := catalogReady(next, c.Ready, zap.New(core))
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/readyz")
	h(&ctx)
	body := string(ctx.Response.Body())
	if ctx.Response.StatusCode() != 503 || body != "not ready: catalog database unreachable\n" {
		t.Errorf("/readyz: %d %q", ctx.Response.StatusCode(), body)
	}
	for _, leak := range []string{"sekrituser", "sekritdb", addr} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz shows %q: %q", leak, body)
		}
	}
	if logs.FilterMessage("not ready: catalog database unreachable").Len() != 1 {
		t.Errorf("the detail is not logged: %v", logs.All())
	} else if e := logs.All()[0].ContextMap()["error"]; !strings.Contains(e.(string), addr) {
		t.Errorf("logged error %q lacks the address", e)
	}
}
