package gateway

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/sigv4"
)

// benchSetup runs a gateway in front of a fake upstream answering every
// request with a 1 KiB body, both on in-memory listeners, and returns a
// client of the gateway, a client of the upstream and a signed GET.
func benchSetup(b *testing.B) (gw, direct *fasthttp.HostClient, req *fasthttp.Request) {
	payload := bytes.Repeat([]byte("x"), 1024)
	upLn := fasthttputil.NewInmemoryListener()
	up := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetContentType("application/octet-stream")
		ctx.Response.Header.Set("ETag", `"0123456789abcdef"`)
		ctx.SetBody(payload)
	}}
	go up.Serve(upLn)
	b.Cleanup(func() { up.Shutdown() })

	keyring, err := creds.NewKeyring(creds.Key{ID: "bench", Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	m, err := keyring.Mint(creds.Claims{Principal: "bench", Grants: []creds.Grant{{Bucket: "lake", Prefix: "data/", Access: creds.Read | creds.List}}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://upstream:7070", AccessKeyID: "k", SecretAccessKey: "s",
		PathStyle: true, dial: func(string) (net.Conn, error) { return upLn.Dial() }}},
		Deps{Logger: zap.NewNop(), Keyring: keyring})
	if err != nil {
		b.Fatal(err)
	}
	gwLn := fasthttputil.NewInmemoryListener()
	go s.Serve(gwLn)
	b.Cleanup(func() { s.Shutdown(b.Context()) })

	gw = &fasthttp.HostClient{Addr: "gateway:9000", Dial: func(string) (net.Conn, error) { return gwLn.Dial() }, MaxConns: 1024}
	direct = &fasthttp.HostClient{Addr: "upstream:7070", Dial: func(string) (net.Conn, error) { return upLn.Dial() }, MaxConns: 1024}

	r := &rawRequest{method: "GET", path: "/lake/data/part-00001.parquet", payload: sigv4.UnsignedPayload, contentLength: -1}
	head, _ := r.sign("gateway:9000", m, time.Now())
	req = new(fasthttp.Request)
	req.Header.DisableNormalizing()
	if err := req.Header.Read(bufio.NewReader(strings.NewReader(head))); err != nil {
		b.Fatal(err)
	}
	req.Header.SetHost("gateway:9000")
	return gw, direct, req
}

func benchGet(b *testing.B, c *fasthttp.HostClient, tmpl *fasthttp.Request) {
	b.ReportAllocs()
	b.SetBytes(1024)
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		tmpl.CopyTo(req)
		for pb.Next() {
			if err := c.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != 200 || len(resp.Body()) != 1024 {
				b.Errorf("status %d, %d bytes: %s", resp.StatusCode(), len(resp.Body()), resp.Body())
				return
			}
		}
	})
}

// BenchmarkServeGet is a 1 KiB GET through the gateway (verify, scope,
// re-sign, stream) against an in-memory upstream; BenchmarkDirectGet is the
// same client against the upstream alone, the baseline to subtract.
func BenchmarkServeGet(b *testing.B) {
	gw, _, req := benchSetup(b)
	benchGet(b, gw, req)
}

func BenchmarkDirectGet(b *testing.B) {
	_, direct, req := benchSetup(b)
	benchGet(b, direct, req)
}
