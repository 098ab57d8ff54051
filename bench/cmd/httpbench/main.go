// Command httpbench measures HTTP GET endpoints over real sockets: c workers
// on keep-alive connections for a fixed time, reporting requests per second
// and latency percentiles. It is the catalog's load tool (LoadTable cache
// hits); s3bench is the gateway's.
//
// With several -target flags it measures them side by side in one run,
// interleaved round by round (A B, then B A, …: bench.Order) so that drift
// on a shared machine hits each alike, and reports the median and spread of
// each target's rounds and the ratio to the -vs targets per round
// (scripts/bench.sh compare uses it for two builds of the catalog).
//
// Usage:
//
//	httpbench -url http://127.0.0.1:8181/v1/lake/namespaces/demo/tables/events \
//	          -header 'Authorization: Bearer …' -c 32 -duration 10s
//	httpbench -target 'old|http://127.0.0.1:8181/v1/…' -target 'new|http://127.0.0.1:8282/v1/…' \
//	          -vs old -rounds 5 -header 'Authorization: Bearer …' -c 32 -duration 5s
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

	"github.com/duckicelake/duckicelake/bench"
)

type list []string

func (h *list) String() string     { return strings.Join(*h, "; ") }
func (h *list) Set(v string) error { *h = append(*h, v); return nil }

type target struct {
	name, url string
	client    *fasthttp.HostClient
}

// round is one measurement of one target.
type round struct {
	reqs     int
	elapsed  time.Duration
	lat      []time.Duration
	errs     int64
	firstErr string
}

func (r round) rate() float64 { return float64(r.reqs) / r.elapsed.Seconds() }

func main() {
	var headers, targetSpecs list
	rawURL := flag.String("url", "", "the URL to GET (one target; or use -target)")
	flag.Var(&targetSpecs, "target", "name|URL to GET (repeatable; measured interleaved round by round)")
	flag.Var(&headers, "header", "'Name: value' request header (repeatable; sent to every target)")
	conc := flag.Int("c", 32, "concurrent workers (one keep-alive connection each)")
	duration := flag.Duration("duration", 10*time.Second, "measurement time per target per round")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time before each measurement (fills caches, opens connections)")
	rounds := flag.Int("rounds", 1, "rounds; targets are interleaved within each round")
	vs := flag.String("vs", "", "targets to report ratios against, comma-separated (default: the first, when there are several)")
	wantStatus := flag.Int("status", 200, "the status every response must have")
	flag.Parse()

	var ts []*target
	if *rawURL != "" {
		targetSpecs = append(list{*rawURL + "|" + *rawURL}, targetSpecs...)
	}
	for _, spec := range targetSpecs {
		name, raw, ok := strings.Cut(spec, "|")
		u, err := url.Parse(raw)
		if !ok || err != nil || u.Host == "" {
			fmt.Fprintf(os.Stderr, "httpbench: target %q: want name|absolute http URL\n", spec)
			os.Exit(2)
		}
		ts = append(ts, &target{name: name, url: raw,
			client: &fasthttp.HostClient{Addr: u.Host, MaxConns: *conc * 2, ReadTimeout: 30 * time.Second}})
	}
	if len(ts) == 0 {
		fmt.Fprintln(os.Stderr, "httpbench: -url or -target is required")
		os.Exit(2)
	}
	var hdrs [][2]string
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(os.Stderr, "httpbench: header %q: want 'Name: value'\n", h)
			os.Exit(2)
		}
		hdrs = append(hdrs, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}
	refs, err := bench.References(names, *vs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpbench:", err)
		os.Exit(2)
	}
	if len(refs) == 0 && len(ts) > 1 {
		refs = []int{0}
	}

	b := &runner{headers: hdrs, conc: *conc, status: *wantStatus}
	// One request first per target, so a wrong URL or token fails loudly,
	// not as a rate.
	for _, t := range ts {
		n, err := b.probe(t)
		if err != nil {
			fmt.Fprintf(os.Stderr, "httpbench: first request to %s: %v\n", t.name, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "httpbench: %s answers %d with %d bytes\n", t.url, *wantStatus, n)
	}
	res := make([][]round, len(ts))
	for r := 0; r < *rounds; r++ {
		for _, i := range bench.Order(len(ts), r) {
			t := ts[i]
			got := b.measure(t, *warmup, *duration)
			if len(ts) > 1 || *rounds > 1 {
				fmt.Fprintf(os.Stderr, "  round %d/%d %s: %.0f req/s, %d errors\n", r+1, *rounds, t.name, got.rate(), got.errs)
			}
			res[i] = append(res[i], got)
		}
	}
	report(ts, names, refs, res, *conc)
	for i := range ts {
		for _, r := range res[i] {
			if r.firstErr != "" {
				fmt.Fprintf(os.Stderr, "httpbench: %s: first error: %s\n", ts[i].name, r.firstErr)
				os.Exit(1)
			}
		}
	}
}

type runner struct {
	headers [][2]string
	conc    int
	status  int
}

func (b *runner) newRequest(t *target) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(t.url)
	for _, h := range b.headers {
		req.Header.Set(h[0], h[1])
	}
	return req
}

func (b *runner) do(t *target, req *fasthttp.Request, resp *fasthttp.Response) error {
	if err := t.client.Do(req, resp); err != nil {
		return err
	}
	if resp.StatusCode() != b.status {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
	}
	return nil
}

func (b *runner) probe(t *target) (int, error) {
	req, resp := b.newRequest(t), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := b.do(t, req, resp); err != nil {
		return 0, err
	}
	return len(resp.Body()), nil
}

// measure runs b.conc workers against t: warmup unmeasured, then d measured.
func (b *runner) measure(t *target, warmup, d time.Duration) round {
	var measuring atomic.Bool
	var errs atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	lat := make([][]time.Duration, b.conc)
	var wg sync.WaitGroup
	for w := 0; w < b.conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			req, resp := b.newRequest(t), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			samples := make([]time.Duration, 0, 1<<16)
			for {
				select {
				case <-stop:
					lat[w] = samples
					return
				default:
				}
				t0 := time.Now()
				err := b.do(t, req, resp)
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
	time.Sleep(warmup)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	r := round{elapsed: elapsed, errs: errs.Load()}
	for _, s := range lat {
		r.lat = append(r.lat, s...)
	}
	r.reqs = len(r.lat)
	if s, ok := firstErr.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

func report(ts []*target, names []string, refs []int, res [][]round, conc int) {
	head, align := bench.RatioColumns(names, refs)
	fmt.Printf("| target | c | req/s median | per round min / max | p50 | p99 |%s errors |\n", head)
	fmt.Printf("|---|---:|---:|---:|---:|---:|%s---:|\n", align)
	rates := make([][]float64, len(ts))
	for i := range ts {
		for _, r := range res[i] {
			rates[i] = append(rates[i], r.rate())
		}
	}
	for i, t := range ts {
		var all []time.Duration
		var errs int64
		for _, r := range res[i] {
			all = append(all, r.lat...)
			errs += r.errs
		}
		slices.Sort(all)
		pct := func(p float64) time.Duration {
			if len(all) == 0 {
				return 0
			}
			return all[min(len(all)-1, int(p*float64(len(all))))]
		}
		sp := bench.SpreadOf(rates[i])
		fmt.Printf("| %s | %d | %.0f | %.0f / %.0f | %s | %s |", t.name, conc, sp.Median, sp.Min, sp.Max,
			pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
		for _, ri := range refs {
			if ri == i {
				fmt.Printf(" 1.00× |")
				continue
			}
			// Per round: the two were measured one after the other.
			fmt.Printf(" %s |", bench.Ratios(rates[i], rates[ri]).Ratio())
		}
		fmt.Printf(" %d |\n", errs)
	}
}
