package catalog_test

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// benchConcurrency is the number of concurrent clients (DESIGN.md §10:
// LoadTable cache hits at c=32, target ≥ 10,000 req/s on 2 cores).
const benchConcurrency = 32

// BenchmarkLoadTableCacheHit measures LoadTable answered from the
// catalog's response cache: a bearer token (verified, then cached), the
// current-snapshot lookup (memory, refreshed from Postgres every
// SnapshotTTL at its default), the cached bytes and the ETag. In process,
// over fasthttp's in-memory listener, with 32 concurrent clients.
func BenchmarkLoadTableCacheHit(b *testing.B) {
	for _, tc := range []struct {
		name   string
		header [2]string
	}{
		{"plain", [2]string{}},
		{"if-none-match", [2]string{"If-None-Match", ""}}, // filled with the ETag: 304s
	} {
		b.Run(tc.name, func(b *testing.B) { benchLoadTable(b, tc.header) })
	}
}

// BenchmarkLoadTableVended is LoadTable with a credential minted per
// request: not a cache hit for the body, for comparison.
func BenchmarkLoadTableVended(b *testing.B) {
	benchLoadTable(b, [2]string{"X-Iceberg-Access-Delegation", "vended-credentials"})
}

func benchLoadTable(b *testing.B, header [2]string) {
	env := newRestEnv(b, func(c *rest.Config, _ *rest.Deps) { c.SnapshotTTL = 0 }) // the default TTL
	// A table with some history, so the metadata is not trivially small.
	stmts := []string{"CREATE SCHEMA l.sales", "CREATE TABLE l.sales.t (id BIGINT, name VARCHAR, amount DECIMAL(10,2), ts TIMESTAMPTZ)"}
	for i := 0; i < 40; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO l.sales.t VALUES (%d, 'n%d', %d.5, now())", i, i, i))
	}
	var out any
	testsupport.DuckDB(b, &out, env.dsn, restDataPath, stmts...)
	tok := env.token("reader")

	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: env.srv.Handler, NoDefaultServerHeader: true, Concurrency: 1 << 16}
	testsupport.Serve(b, ln, srv.Serve, srv.ShutdownWithContext)
	client := &fasthttp.Client{
		Dial:            func(string) (net.Conn, error) { return ln.Dial() },
		MaxConnsPerHost: benchConcurrency * 2,
		ReadTimeout:     10 * time.Second,
	}
	const uri = "http://catalog/v1/lake/namespaces/sales/tables/t"

	// Warm the cache and learn the ETag.
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(uri)
	req.Header.Set("Authorization", "Bearer "+tok)
	if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
	bodyLen := len(resp.Body())
	if header[0] == "If-None-Match" {
		header[1] = string(resp.Header.Peek("ETag"))
	}
	want := 200
	if header[0] == "If-None-Match" {
		want = 304
	}

	b.ReportAllocs()
	b.SetParallelism((benchConcurrency + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(uri)
		req.Header.Set("Authorization", "Bearer "+tok)
		if header[0] != "" {
			req.Header.Set(header[0], header[1])
		}
		for pb.Next() {
			if err := client.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != want {
				b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(bodyLen), "body-bytes")
}
