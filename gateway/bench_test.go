package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// benchEnv is a gateway in front of a fake upstream, both on loopback TCP
// (so the benchmarks pay for real socket I/O, as in production): the
// upstream answers GET with the object of the path's size and drains PUT
// bodies.
type benchEnv struct {
	gw, direct     *fasthttp.HostClient
	gwHost, upHost string
	minted         creds.Minted
	small, large   []byte
}

const benchLarge = 64 << 20

func newBenchEnv(b *testing.B, audit *zap.Logger) *benchEnv {
	var sink governance.Sink
	if audit != nil {
		sink = governance.NewZapSink(audit)
	}
	return newBenchEnvDeps(b, "data/", Deps{Audit: sink})
}

// newBenchEnvDeps is newBenchEnv with the server's Deps (Logger and
// Keyring are filled in) and the minted credential's grant prefix.
func newBenchEnvDeps(b *testing.B, prefix string, deps Deps) *benchEnv {
	e := &benchEnv{small: bytes.Repeat([]byte("x"), 1024), large: make([]byte, benchLarge)}
	up := &fasthttp.Server{
		StreamRequestBody: true,
		ReadBufferSize:    64 << 10,
		WriteBufferSize:   64 << 10,
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.Response.Header.Set("ETag", `"0123456789abcdef"`)
			if ctx.IsPut() {
				if s := ctx.RequestBodyStream(); s != nil {
					_, _ = io.Copy(io.Discard, s)
				}
				return
			}
			ctx.Response.Header.SetContentType("application/octet-stream")
			if strings.HasSuffix(string(ctx.Path()), "/large") {
				ctx.Response.SetBodyRaw(e.large)
			} else {
				ctx.Response.SetBodyRaw(e.small)
			}
		},
	}
	upLn := listenLoopback(b)
	testsupport.Serve(b, upLn, up.Serve, up.ShutdownWithContext)

	keyring, err := creds.NewKeyring(creds.Key{ID: "bench", Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	e.minted, err = keyring.Mint(creds.Claims{Principal: "bench", Grants: []creds.Grant{
		{Bucket: "lake", Prefix: prefix, Access: creds.Read | creds.Write | creds.List}}})
	if err != nil {
		b.Fatal(err)
	}
	e.upHost = upLn.Addr().String()
	deps.Logger, deps.Keyring = zap.NewNop(), keyring
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://" + e.upHost, AccessKeyID: "k", SecretAccessKey: "s",
		PathStyle: true}}, deps)
	if err != nil {
		b.Fatal(err)
	}
	gwLn := listenLoopback(b)
	testsupport.Serve(b, gwLn, s.Serve, s.Shutdown)
	e.gwHost = gwLn.Addr().String()

	client := func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{Addr: addr, MaxConns: 1024, StreamResponseBody: true,
			ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	}
	e.gw, e.direct = client(e.gwHost), client(e.upHost)
	return e
}

func listenLoopback(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// request returns a signed request template (UNSIGNED-PAYLOAD, as the
// SDKs send over TLS and s3bench sends).
func (e *benchEnv) request(b *testing.B, method, key string, size int) *fasthttp.Request {
	cl := int64(-1)
	if method == "PUT" {
		cl = int64(size)
	}
	r := &rawRequest{method: method, path: "/lake/data/" + key, payload: sigv4.UnsignedPayload, contentLength: cl}
	// The gateway's signature check allows 15 minutes of skew: enough.
	head, _ := r.sign(e.gwHost, e.minted, time.Now())
	req := new(fasthttp.Request)
	req.Header.DisableNormalizing()
	if err := req.Header.Read(bufio.NewReader(strings.NewReader(head))); err != nil {
		b.Fatal(err)
	}
	req.UseHostHeader = true
	return req
}

// benchDo runs the request in parallel. Besides wall time it reports
// cpu-ns/op, the process's CPU time (client, gateway and upstream) per
// request: on a machine shared with other work it is the steadier number,
// and Serve minus Direct is the gateway's own cost.
func benchDo(b *testing.B, c *fasthttp.HostClient, tmpl *fasthttp.Request, body []byte, want int) {
	b.ReportAllocs()
	b.SetBytes(int64(max(len(body), want)))
	cpu0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		tmpl.CopyTo(req)
		req.UseHostHeader = true
		var r bytes.Reader
		buf := make([]byte, 256<<10)
		for pb.Next() {
			if body != nil {
				r.Reset(body)
				req.SetBodyStream(&r, len(body))
			}
			if err := c.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			var n int
			if s := resp.BodyStream(); s != nil {
				m, _ := io.CopyBuffer(io.Discard, s, buf)
				n = int(m)
				resp.CloseBodyStream()
			} else {
				n = len(resp.Body())
			}
			if resp.StatusCode() != 200 || n != want {
				b.Errorf("status %d, %d bytes: %.200s", resp.StatusCode(), n, resp.Body())
				return
			}
		}
	})
}

// BenchmarkServeGet is a 1 KiB GET through the gateway (verify, scope,
// re-sign, stream, audit to a discarding zap core) against a loopback
// upstream; BenchmarkDirectGet is the same client against the upstream
// alone, the baseline to subtract. Likewise for PUT and 64 MiB objects.
func BenchmarkServeGet(b *testing.B) {
	e := newBenchEnv(b, zap.NewNop())
	benchDo(b, e.gw, e.request(b, "GET", "small", 0), nil, 1024)
}

func BenchmarkDirectGet(b *testing.B) {
	e := newBenchEnv(b, nil)
	benchDo(b, e.direct, e.request(b, "GET", "small", 0), nil, 1024)
}

// BenchmarkServeGetAudit is BenchmarkServeGet with the audit line encoded
// as in production (JSON, into a discarding writer).
func BenchmarkServeGetAudit(b *testing.B) {
	e := newBenchEnv(b, NewLogger(io.Discard, zap.InfoLevel))
	benchDo(b, e.gw, e.request(b, "GET", "small", 0), nil, 1024)
}

func BenchmarkServePut(b *testing.B) {
	e := newBenchEnv(b, zap.NewNop())
	benchDo(b, e.gw, e.request(b, "PUT", "small", 1024), e.small, 0)
}

func BenchmarkDirectPut(b *testing.B) {
	e := newBenchEnv(b, nil)
	benchDo(b, e.direct, e.request(b, "PUT", "small", 1024), e.small, 0)
}

func BenchmarkServeGetLarge(b *testing.B) {
	e := newBenchEnv(b, zap.NewNop())
	benchDo(b, e.gw, e.request(b, "GET", "large", 0), nil, benchLarge)
}

func BenchmarkDirectGetLarge(b *testing.B) {
	e := newBenchEnv(b, nil)
	benchDo(b, e.direct, e.request(b, "GET", "large", 0), nil, benchLarge)
}

func BenchmarkServePutLarge(b *testing.B) {
	e := newBenchEnv(b, zap.NewNop())
	benchDo(b, e.gw, e.request(b, "PUT", "large", benchLarge), e.large, 0)
}

func BenchmarkDirectPutLarge(b *testing.B) {
	e := newBenchEnv(b, nil)
	benchDo(b, e.direct, e.request(b, "PUT", "large", benchLarge), e.large, 0)
}

// processCPU returns the user plus system CPU time of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAudit encodes one audit line of an allowed GET by a minted
// credential, as JSON into a discarding writer.
func BenchmarkAudit(b *testing.B) {
	keyring, err := creds.NewKeyring(creds.Key{ID: "bench", Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "k", SecretAccessKey: "s"}},
		Deps{Audit: governance.NewZapSink(NewLogger(io.Discard, zap.InfoLevel)), Keyring: keyring})
	if err != nil {
		b.Fatal(err)
	}
	st := &reqState{srv: s, remote: []byte("127.0.0.1:53122"), method: []byte("GET"),
		akid: []byte("DLAK0123456789ABCDEF"), upRID: []byte("18C0A1B2C3D4E5F6"), decision: governance.OutcomeAllow,
		reason: "in scope", status: 200, bytesOut: 1024}
	s.appendRequestID(st.id[:0])
	st.req.Op, st.req.Bucket, st.req.Key = s3proto.OpGetObject, []byte("lake"), []byte("data/analytics/part-00001.parquet")
	st.cred.verified = true
	st.cred.claims = creds.Claims{Principal: "alice", Actor: "human", Channel: "rest", VendID: "v-0123456789"}
	b.ReportAllocs()
	for b.Loop() {
		s.audit(st, 1230*time.Microsecond)
	}
}
