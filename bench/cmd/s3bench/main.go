// Command s3bench measures S3 endpoints side by side in one run: the same
// operations, concurrency and objects against each target, interleaved round
// by round (in reverse order every other round: bench.Order) so that drift on
// a shared machine hits every target alike, and
// reported as ratios to reference targets (-vs: the backend direct by
// default; scripts/bench.sh adds the bare relay, the floor any proxy hop
// reaches, and in compare mode the other build's gateway). Every ratio is
// also given per round — min, median and max over the rounds of the ratio
// of the two targets measured one after the other — so that a figure says
// how often it is reached, not only its best case.
//
// Usage:
//
//	s3bench -target 'direct|http://127.0.0.1:7070|AK|SK|' \
//	        -target 'relay|http://127.0.0.1:7071|AK|SK|' \
//	        -target 'gateway|http://127.0.0.1:9000|AK|SK|TOKEN' \
//	        -vs direct,relay \
//	        -bucket lake -prefix bench/ -ops get1k,put1k,head,list -duration 5s -rounds 3
//
// Requests are signed with duckicelake's own SigV4 signer and sent with
// fasthttp so that the client costs as little CPU as possible: the client
// shares the machine with the servers it measures.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/bench"

	"github.com/duckicelake/duckicelake/sigv4"
)

type target struct {
	name   string
	host   string // host:port
	pid    int    // a server process whose resident memory to sample, 0 = none
	signer sigv4.Signer
	client *fasthttp.HostClient
}

type targetList []string

func (t *targetList) String() string     { return strings.Join(*t, ",") }
func (t *targetList) Set(v string) error { *t = append(*t, v); return nil }

type opSpec struct {
	name        string
	method      string
	size        int  // object size for put/get
	concurrency int  // default concurrency
	large       bool // report MB/s
}

var ops = map[string]opSpec{
	"get1k":  {"get1k", "GET", 1 << 10, 32, false},
	"put1k":  {"put1k", "PUT", 1 << 10, 32, false},
	"head":   {"head", "HEAD", 1 << 10, 32, false},
	"list":   {"list", "GET", 0, 32, false},
	"get64m": {"get64m", "GET", 64 << 20, 4, true},
	"put64m": {"put64m", "PUT", 64 << 20, 4, true},
	"get1g":  {"get1g", "GET", 1 << 30, 4, true},
	"put1g":  {"put1g", "PUT", 1 << 30, 4, true},
}

func main() {
	var targets targetList
	flag.Var(&targets, "target", "name|endpoint|access key|secret|session token[|pid to sample RSS of] (repeatable; the first prepares the objects)")
	vs := flag.String("vs", "", "targets to report ratios against, comma-separated (default: the first)")
	bucket := flag.String("bucket", "lake", "bucket")
	prefix := flag.String("prefix", "bench/", "key prefix (the gateway credential must grant it rwl)")
	opList := flag.String("ops", "get1k,put1k,head,list,get64m,put64m", "operations, comma-separated")
	duration := flag.Duration("duration", 5*time.Second, "time per target per round")
	rounds := flag.Int("rounds", 3, "rounds; targets are interleaved within each round")
	region := flag.String("region", "us-east-1", "signing region")
	smallC := flag.Int("c-small", 32, "concurrency for small-object operations")
	largeC := flag.Int("c-large", 4, "concurrency for large-object operations")
	flag.Parse()
	if len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "s3bench: at least one -target is required")
		os.Exit(2)
	}
	var ts []*target
	for _, spec := range targets {
		t, err := parseTarget(spec, *region)
		if err != nil {
			fmt.Fprintln(os.Stderr, "s3bench:", err)
			os.Exit(2)
		}
		ts = append(ts, t)
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}
	refs, err := bench.References(names, *vs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(2)
	}
	if len(refs) == 0 {
		refs = []int{0}
	}
	b := &runner{bucket: *bucket, prefix: *prefix, duration: *duration}
	for _, name := range strings.Split(*opList, ",") {
		op, ok := ops[strings.TrimSpace(name)]
		if !ok {
			fmt.Fprintf(os.Stderr, "s3bench: unknown op %q\n", name)
			os.Exit(2)
		}
		op.concurrency = *smallC
		if op.large {
			op.concurrency = *largeC
		}
		if err := b.prepare(ts[0], op); err != nil {
			fmt.Fprintf(os.Stderr, "s3bench: prepare %s: %v\n", op.name, err)
			os.Exit(1)
		}
		res := make([]result, len(ts))
		perRound := make([][]result, len(ts))
		for r := 0; r < *rounds; r++ {
			for _, i := range bench.Order(len(ts), r) {
				t := ts[i]
				fmt.Fprintf(os.Stderr, "  %s round %d/%d %s …", op.name, r+1, *rounds, t.name)
				got := b.run(t, op)
				fmt.Fprintf(os.Stderr, " %s\n", got.summary(op))
				res[i].add(got)
				perRound[i] = append(perRound[i], got)
			}
		}
		report(op, ts, names, refs, res, perRound)
	}
}

func parseTarget(spec, region string) (*target, error) {
	parts := strings.Split(spec, "|")
	if len(parts) != 5 && len(parts) != 6 {
		return nil, fmt.Errorf("target %q: want name|endpoint|access|secret|token[|pid]", spec)
	}
	pid := 0
	if len(parts) == 6 && parts[5] != "" {
		var err error
		if pid, err = strconv.Atoi(parts[5]); err != nil {
			return nil, fmt.Errorf("target %q: bad pid: %v", spec, err)
		}
	}
	u, err := url.Parse(parts[1])
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("target %q: bad endpoint", spec)
	}
	return &target{
		name: parts[0],
		host: u.Host,
		pid:  pid,
		signer: sigv4.Signer{AccessKeyID: parts[2], SecretAccessKey: parts[3], SessionToken: parts[4],
			Region: region, Service: "s3"},
		client: &fasthttp.HostClient{
			Addr:                u.Host,
			MaxConns:            512,
			StreamResponseBody:  true,
			ReadBufferSize:      64 << 10,
			WriteBufferSize:     64 << 10,
			MaxIdleConnDuration: time.Minute,
			ReadTimeout:         5 * time.Minute,
			WriteTimeout:        5 * time.Minute,
		},
	}, nil
}

type runner struct {
	bucket, prefix string
	duration       time.Duration
	payload        []byte
}

type result struct {
	requests, bytes, errors int64
	elapsed                 time.Duration
	firstErr                string
	peakRSS                 int64 // bytes; 0 when not sampled
}

func (r *result) add(o result) {
	r.peakRSS = max(r.peakRSS, o.peakRSS)
	r.requests += o.requests
	r.bytes += o.bytes
	r.errors += o.errors
	r.elapsed += o.elapsed
	if r.firstErr == "" {
		r.firstErr = o.firstErr
	}
}

func (r result) reqPerSec() float64 { return float64(r.requests) / r.elapsed.Seconds() }
func (r result) mbPerSec() float64  { return float64(r.bytes) / (1 << 20) / r.elapsed.Seconds() }

func (r result) summary(op opSpec) string {
	s := fmt.Sprintf("%.0f req/s", r.reqPerSec())
	if op.large {
		s = fmt.Sprintf("%.1f MiB/s", r.mbPerSec())
	}
	if r.peakRSS > 0 {
		s += fmt.Sprintf(", peak RSS %.1f MiB", float64(r.peakRSS)/(1<<20))
	}
	if r.errors > 0 {
		s += fmt.Sprintf(" (%d errors, first: %s)", r.errors, r.firstErr)
	}
	return s
}

// sampleRSS records the largest resident set of pid until ctx ends.
func sampleRSS(ctx context.Context, pid int, peak *atomic.Int64) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if i := bytes.Index(b, []byte("VmRSS:")); i >= 0 {
				f := strings.Fields(string(b[i+len("VmRSS:"):]))
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb*1024 > peak.Load() {
						peak.Store(kb * 1024)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (b *runner) key(op opSpec, i int) string {
	return b.prefix + op.name + "/obj-" + strconv.Itoa(i)
}

const objectsPerOp = 64

// prepare writes the objects that reads will fetch, through the baseline.
func (b *runner) prepare(t *target, op opSpec) error {
	// list reads the get1k objects, which it writes itself when run alone.
	if need := max(op.size, 1<<10); need > len(b.payload) {
		b.payload = make([]byte, need)
		for i := range b.payload {
			b.payload[i] = byte(i * 7)
		}
	}
	if op.method == "PUT" {
		return nil
	}
	size := op.size
	src := op
	if op.name == "list" {
		size, src = 1<<10, ops["get1k"]
	}
	n := objectsPerOp
	if op.large {
		n = op.concurrency
	}
	for i := 0; i < n; i++ {
		if err := b.do(t, "PUT", b.key(src, i), "", b.payload[:size], nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *runner) run(t *target, op opSpec) result {
	var reqs, bytesDone, errs atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), b.duration)
	defer cancel()
	var wg sync.WaitGroup
	var peak atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	if t.pid > 0 {
		go func() { sampleRSS(sampleCtx, t.pid, &peak); close(sampled) }()
	} else {
		close(sampled)
	}
	start := time.Now()
	for w := 0; w < op.concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i += op.concurrency {
				var err error
				var n int
				switch {
				case op.name == "list":
					err = b.do(t, "GET", "", "list-type=2&max-keys=100&prefix="+url.QueryEscape(b.prefix+"get1k/"), nil, &n)
				case op.method == "PUT":
					n = op.size
					// Large objects overwrite one key per worker: the disk
					// holds c objects per target, not one per request.
					idx := w*1000 + i%objectsPerOp
					if op.large {
						idx = w
					}
					err = b.do(t, "PUT", b.key(op, idx), "", b.payload[:op.size], nil)
				default:
					idx := i % objectsPerOp
					if op.large {
						idx = w
					}
					err = b.do(t, op.method, b.key(op, idx), "", nil, &n)
				}
				if err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				reqs.Add(1)
				bytesDone.Add(int64(n))
			}
		}(w)
	}
	wg.Wait()
	stopSampling()
	<-sampled
	r := result{requests: reqs.Load(), bytes: bytesDone.Load(), errors: errs.Load(), elapsed: time.Since(start),
		peakRSS: peak.Load()}
	if s, ok := firstErr.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

var errStatus = errors.New("unexpected status")

// do sends one signed request; for reads it drains the body and reports its size in n.
func (b *runner) do(t *target, method, key, query string, body []byte, n *int) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	path := "/" + b.bucket
	if key != "" {
		path += "/" + key
	}
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	// The host goes in before req.URI() parses the request URI: the URI
	// takes its host from the header then, and the Host line sent comes
	// from the URI (a list request went out without one: 400).
	req.Header.SetHost(t.host)
	if query != "" {
		req.URI().SetQueryString(query)
	}
	now := time.Now().UTC()
	amzDate := now.Format("20060102T150405Z")
	headers := []sigv4.Header{
		{Name: []byte("host"), Value: []byte(t.host)},
		{Name: []byte("x-amz-content-sha256"), Value: []byte(sigv4.UnsignedPayload)},
		{Name: []byte("x-amz-date"), Value: []byte(amzDate)},
	}
	if t.signer.SessionToken != "" {
		headers = append(headers, sigv4.Header{Name: []byte("x-amz-security-token"), Value: []byte(t.signer.SessionToken)})
	}
	for _, h := range headers[1:] {
		req.Header.SetBytesKV(h.Name, h.Value)
	}
	sr := sigv4.SignRequest{
		Method: []byte(method), RawPath: req.URI().PathOriginal(), RawQuery: req.URI().QueryString(),
		Headers: headers, PayloadHash: []byte(sigv4.UnsignedPayload),
	}
	auth, _ := t.signer.AppendAuthorization(nil, &sr, now)
	req.Header.SetBytesV("Authorization", auth)
	if body != nil {
		req.SetBodyStream(bytes.NewReader(body), len(body))
	}
	if method == "HEAD" {
		resp.SkipBody = true
	}
	if err := t.client.Do(req, resp); err != nil {
		return err
	}
	code := resp.StatusCode()
	var read int64
	if method != "HEAD" {
		if s := resp.BodyStream(); s != nil {
			var err error
			read, err = io.Copy(io.Discard, s)
			if err != nil {
				return err
			}
		} else {
			read = int64(len(resp.Body()))
		}
	}
	if code/100 != 2 {
		return fmt.Errorf("%w %d for %s %s", errStatus, code, method, path)
	}
	if n != nil {
		*n = int(read)
	}
	return nil
}

func report(op opSpec, ts []*target, names []string, refs []int, res []result, perRound [][]result) {
	unit := "req/s"
	value := func(r result) float64 { return r.reqPerSec() }
	if op.large {
		unit = "MiB/s"
		value = func(r result) float64 { return r.mbPerSec() }
	}
	fmt.Printf("\n%s (c=%d, %d rounds of %s per target, interleaved)\n", op.name, op.concurrency, len(perRound[0]), perRound[0][0].elapsed.Round(time.Second))
	head, align := bench.RatioColumns(names, refs)
	fmt.Printf("| target | %s | per round min / median / max |%s peak RSS MiB | errors |\n", unit, head)
	fmt.Printf("|---|---:|---:|%s---:|---:|\n", align)
	vals := make([][]float64, len(ts))
	for i := range ts {
		for _, r := range perRound[i] {
			vals[i] = append(vals[i], value(r))
		}
	}
	for i := range ts {
		sp := bench.SpreadOf(vals[i])
		rss := "–"
		if res[i].peakRSS > 0 {
			rss = fmt.Sprintf("%.1f", float64(res[i].peakRSS)/(1<<20))
		}
		fmt.Printf("| %s | %.1f | %.0f / %.0f / %.0f |", ts[i].name, value(res[i]), sp.Min, sp.Median, sp.Max)
		for _, ri := range refs {
			if ri == i {
				fmt.Printf(" 1.00× |")
				continue
			}
			// Each round's pair was measured minutes apart at most.
			fmt.Printf(" %s |", bench.Ratios(vals[i], vals[ri]).Ratio())
		}
		fmt.Printf(" %s | %d |\n", rss, res[i].errors)
	}
}
