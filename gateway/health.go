package gateway

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"github.com/valyala/fasthttp/pprofhandler"

	"github.com/duckicelake/duckicelake/sigv4"
)

// readiness caches the last upstream probe, so a load balancer polling
// /readyz does not turn into upstream load.
type readiness struct {
	mu      sync.Mutex
	checked time.Time
	err     error
}

// Ready reports whether the upstream answers a root-signed ListBuckets with
// 200 within the ready timeout. The answer is cached for ReadyCacheTTL.
func (s *Server) Ready(ctx context.Context) error {
	r := &s.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checked.IsZero() && time.Since(r.checked) < s.cfg.ReadyCacheTTL {
		return r.err
	}
	r.err = s.probeUpstream(ctx)
	r.checked = time.Now()
	return r.err
}

func (s *Server) probeUpstream(ctx context.Context) error {
	timeout := s.cfg.ReadyTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.DisableNormalizing()
	req.UseHostHeader = true
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("/")
	req.Header.SetHostBytes(s.up.host)
	if s.up.tls {
		req.URI().SetScheme("https")
	}
	t := time.Now()
	date := sigv4.AppendAmzDate(nil, t)
	req.Header.SetBytesKV(hAmzDate, date)
	req.Header.SetBytesKV(hContentSHA256, emptySHA256Hex)
	sr := sigv4.SignRequest{
		Method:  []byte(fasthttp.MethodGet),
		RawPath: []byte("/"),
		Headers: []sigv4.Header{
			{Name: []byte("host"), Value: s.up.host},
			{Name: hAmzDate, Value: date},
			{Name: hContentSHA256, Value: emptySHA256Hex},
		},
		PayloadHash: emptySHA256Hex,
	}
	auth, _ := s.up.signer.AppendAuthorization(nil, &sr, t)
	req.Header.SetBytesKV(hAuthorization, auth)
	if err := s.up.client.DoTimeout(req, resp, timeout); err != nil {
		return fmt.Errorf("upstream unreachable: %w", err)
	}
	_ = resp.CloseBodyStream()
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("upstream answered ListBuckets with %d", resp.StatusCode())
	}
	return nil
}

// AdminHandler serves the operator endpoints, meant for a listener apart
// from the S3 one (a bucket may be called "metrics"):
//
//	/metrics  Prometheus exposition of g
//	/healthz  200 while the process serves
//	/readyz   200 when the upstream answers, 503 otherwise
//	/debug/pprof/…  Go's profiles, only when the process was started with
//	          DUCKICELAKE_PPROF=1 (off by default: profiling is for the
//	          operator's own listener, and costs CPU while it runs)
//
// Every other path goes to next (the catalog shares the listener), or is
// answered 404 when next is nil.
func (s *Server) AdminHandler(g prometheus.Gatherer, next fasthttp.RequestHandler) fasthttp.RequestHandler {
	metrics := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	pprof := pprofEnabled()
	return func(ctx *fasthttp.RequestCtx) {
		if pprof && bytes.HasPrefix(ctx.Path(), []byte("/debug/pprof/")) {
			pprofhandler.PprofHandler(ctx)
			return
		}
		switch string(ctx.Path()) {
		case "/metrics":
			metrics(ctx)
		case "/healthz":
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("ok\n")
		case "/readyz":
			ctx.SetContentType("text/plain; charset=utf-8")
			// The probe has its own deadline (ReadyTimeout); the RequestCtx
			// is no context.Context for outbound work.
			if err := s.Ready(context.Background()); err != nil {
				ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
				ctx.SetBodyString("not ready: " + err.Error() + "\n")
				return
			}
			ctx.SetBodyString("ready\n")
		default:
			if next != nil {
				next(ctx)
				return
			}
			ctx.Error("not found", fasthttp.StatusNotFound)
		}
	}
}

// pprofEnvVar names the environment variable that turns on /debug/pprof/ on
// the admin listener ("1" or "true").
const pprofEnvVar = "DUCKICELAKE_PPROF"

// pprofEnabled reports whether pprofEnvVar asks for the profiling endpoints.
func pprofEnabled() bool {
	switch os.Getenv(pprofEnvVar) {
	case "1", "true":
		return true
	}
	return false
}
