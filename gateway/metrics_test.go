package gateway

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// counterValue sums the samples of a metric family whose label has value.
func counterValue(t *testing.T, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// TestAdminEndpoints: /metrics, /healthz and /readyz on the admin listener,
// with the request counters moving as requests are served.
func TestAdminEndpoints(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/m"), Body: strings.NewReader("12345")}); err != nil {
		t.Fatal(err)
	}
	_, _ = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("secret/m")})

	admin := &fasthttp.Server{Handler: e.srv.AdminHandler(e.registry, nil)}
	base := "http://" + testsupport.ServeLocal(t, admin.Serve, admin.ShutdownWithContext)

	get := func(path string) (int, string) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(base + path)
		if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode(), string(resp.Body())
	}
	if st, body := get("/healthz"); st != 200 {
		t.Fatalf("/healthz %d %s", st, body)
	}
	if st, body := get("/readyz"); st != 200 {
		t.Fatalf("/readyz %d %s", st, body)
	}
	if st, _ := get("/nope"); st != 404 {
		t.Fatalf("/nope %d", st)
	}
	if st, _ := get("/debug/pprof/heap"); st != 404 {
		t.Fatalf("/debug/pprof/heap without %s: %d", pprofEnvVar, st)
	}
	// A request is counted once its response has gone out, so the client
	// may see the response first: wait for the counts to settle.
	var lacks []string
	testsupport.Eventually(func() bool {
		st, body := get("/metrics")
		if st != 200 {
			t.Fatalf("/metrics %d", st)
		}
		lacks = lacks[:0]
		for _, want := range []string{
			`duckicelake_gateway_requests_total{decision="allow",op="PutObject",status="200"} 1`,
			`duckicelake_gateway_requests_total{decision="deny",op="GetObject",status="403"} 1`,
			`duckicelake_gateway_request_duration_seconds_count{op="PutObject"} 1`,
			`duckicelake_gateway_received_bytes_total 5`,
			`duckicelake_gateway_open_connections`,
		} {
			if !strings.Contains(body, want) {
				lacks = append(lacks, want)
			}
		}
		return len(lacks) == 0
	})
	for _, want := range lacks {
		t.Errorf("/metrics lacks %q", want)
	}
	// The S3 listener serves no admin paths: "metrics" is a bucket name.
	resp, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("metrics"), Key: aws.String("x")})
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		t.Fatal("the S3 listener answered an admin path")
	}
}

// TestAuditLine: one JSON line per request with who, what, the decision and
// the outcome.
func TestAuditLine(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/a.txt"), Body: strings.NewReader("abc")}); err != nil {
		t.Fatal(err)
	}
	_, _ = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("nope/b.txt")})
	lines := strings.Split(strings.TrimSpace(e.auditLog(2)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want 2:\n%s", len(lines), e.auditLog(2))
	}
	for _, want := range []string{`"msg":"s3"`, `"op":"PutObject"`, `"bucket":"` + b + `"`, `"key":"data/a.txt"`,
		`"principal":"alice"`, `"actor":"human"`, `"channel":"rest"`, `"decision":"allow"`, `"status":200`,
		`"bytes_in":3`, `"latency_ms":`, `"rid":"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("allow line lacks %s: %s", want, lines[0])
		}
	}
	for _, want := range []string{`"op":"GetObject"`, `"key":"nope/b.txt"`, `"decision":"deny"`, `"status":403`,
		`"error":"AccessDenied"`, `"reason":"the object key is outside the credential's scope"`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("deny line lacks %s: %s", want, lines[1])
		}
	}
}

// TestAdminPprof: the profiling endpoints exist only when asked for.
func TestAdminPprof(t *testing.T) {
	e := newEnv(t)
	t.Setenv(pprofEnvVar, "1")
	h := e.srv.AdminHandler(e.registry, nil)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/debug/pprof/heap?debug=1")
	h(&ctx)
	if st := ctx.Response.StatusCode(); st != 200 || !strings.Contains(string(ctx.Response.Body()), "heap profile") {
		t.Fatalf("/debug/pprof/heap: %d %.200s", st, ctx.Response.Body())
	}
}
