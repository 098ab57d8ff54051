// Command httpbench measures one HTTP GET endpoint over real sockets: c
// workers on keep-alive connections for a fixed time, reporting requests per
// second and latency percentiles. It is the catalog's load tool (LoadTable
// cache hits); s3bench is the gateway's.
//
// Usage:
//
//	httpbench -url http://127.0.0.1:8181/v1/lake/namespaces/demo/tables/events \
//	          -header 'Authorization: Bearer …' -c 32 -duration 10s
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, "; ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	var headers headerList
	rawURL := flag.String("url", "", "the URL to GET")
	flag.Var(&headers, "header", "'Name: value' request header (repeatable)")
	conc := flag.Int("c", 32, "concurrent workers (one keep-alive connection each)")
	duration := flag.Duration("duration", 10*time.Second, "measurement time")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time first (fills caches)")
	wantStatus := flag.Int("status", 200, "the status every response must have")
	flag.Parse()
	u, err := url.Parse(*rawURL)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "httpbench: -url must be an absolute http URL")
		os.Exit(2)
	}
	client := &fasthttp.HostClient{Addr: u.Host, MaxConns: *conc * 2, ReadTimeout: 30 * time.Second}
	do := func(req *fasthttp.Request, resp *fasthttp.Response) error {
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != *wantStatus {
			return fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
		}
		return nil
	}
	newRequest := func() *fasthttp.Request {
		req := fasthttp.AcquireRequest()
		req.SetRequestURI(*rawURL)
		for _, h := range headers {
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				fmt.Fprintf(os.Stderr, "httpbench: header %q: want 'Name: value'\n", h)
				os.Exit(2)
			}
			req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		return req
	}
	// One request first, so a wrong URL or token fails loudly, not as a rate.
	{
		req, resp := newRequest(), fasthttp.AcquireResponse()
		if err := do(req, resp); err != nil {
			fmt.Fprintln(os.Stderr, "httpbench: first request:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "httpbench: %s answers %d with %d bytes\n", *rawURL, resp.StatusCode(), len(resp.Body()))
	}

	var measuring atomic.Bool
	var errs atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	lat := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			req, resp := newRequest(), fasthttp.AcquireResponse()
			samples := make([]time.Duration, 0, 1<<16)
			for {
				select {
				case <-stop:
					lat[w] = samples
					return
				default:
				}
				t0 := time.Now()
				err := do(req, resp)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				samples = append(samples, time.Since(t0))
			}
		}(w)
	}
	time.Sleep(*warmup)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(*duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()

	var all []time.Duration
	for _, s := range lat {
		all = append(all, s...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	fmt.Printf("| c | req/s | p50 | p99 | errors |\n|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %.0f | %s | %s | %d |\n", *conc, float64(len(all))/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), errs.Load())
	if s, ok := firstErr.Load().(string); ok {
		fmt.Fprintln(os.Stderr, "httpbench: first error:", s)
		os.Exit(1)
	}
}
