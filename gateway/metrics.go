package gateway

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/httplimit"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// Metrics are the gateway's Prometheus collectors. One Metrics is shared by
// every Server of a process; the catalog registers its own collectors in the
// same registry.
type Metrics struct {
	requests       *prometheus.CounterVec   // op, status, decision
	latency        *prometheus.HistogramVec // op
	bytesIn        prometheus.Counter
	bytesOut       prometheus.Counter
	upstreamErrors *prometheus.CounterVec // kind
	openConns      prometheus.Gauge
	refusedConns   *prometheus.CounterVec // reason

	// Children resolved once: the label lookups hash their values, and a
	// request should not pay for that.
	latencyByOp [s3proto.NumOps]prometheus.Observer
	upstreamErr [upstreamErrEnd]prometheus.Counter
	refused     [httplimit.RefusalEnd]prometheus.Counter

	mu       sync.RWMutex
	counters map[requestKey]prometheus.Counter
}

type requestKey struct {
	op       s3proto.Op
	status   int
	decision governance.Outcome
}

// upstreamErrKind labels upstream failures.
type upstreamErrKind uint8

const (
	upstreamErrDial upstreamErrKind = iota
	upstreamErrTimeout
	upstreamErrOther
	upstreamErrEnd
)

var upstreamErrNames = [upstreamErrEnd]string{"dial", "timeout", "other"}

// gatewayOpts names a gateway metric: duckicelake_gateway_<name>.
func gatewayOpts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "duckicelake", Subsystem: "gateway", Name: name, Help: help}
}

// NewMetrics creates the gateway collectors and registers them with reg
// (nil: a private registry, for tests and tools).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts(gatewayOpts("requests_total",
			"S3 requests answered, by operation, HTTP status and authorisation decision.")), []string{"op", "status", "decision"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "duckicelake", Subsystem: "gateway", Name: "request_duration_seconds",
			Help:    "Time from the request's arrival to the end of its response body, by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"op"}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts(gatewayOpts("received_bytes_total",
			"Request body bytes received from clients (wire bytes)."))),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts(gatewayOpts("sent_bytes_total",
			"Response body bytes sent to clients."))),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts(gatewayOpts("upstream_errors_total",
			"Upstream requests that failed without an HTTP response, by kind.")), []string{"kind"}),
		openConns: prometheus.NewGauge(prometheus.GaugeOpts(gatewayOpts("open_connections",
			"Client connections currently open on the S3 listener."))),
		refusedConns: prometheus.NewCounterVec(prometheus.CounterOpts(gatewayOpts("refused_connections_total",
			"Client connections refused at the S3 listener's connection limits, by limit.")), []string{"reason"}),
		counters: make(map[requestKey]prometheus.Counter),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.bytesIn, m.bytesOut, m.upstreamErrors, m.openConns, m.refusedConns} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for op := range s3proto.NumOps {
		m.latencyByOp[op] = m.latency.WithLabelValues(op.String())
	}
	for k := range upstreamErrEnd {
		m.upstreamErr[k] = m.upstreamErrors.WithLabelValues(upstreamErrNames[k])
	}
	for r := range httplimit.RefusalEnd {
		m.refused[r] = m.refusedConns.WithLabelValues(r.String())
	}
	return m, nil
}

// observe records one finished request.
func (m *Metrics) observe(op s3proto.Op, status int, d governance.Outcome, seconds float64, in, out int64) {
	if op >= s3proto.NumOps {
		op = s3proto.OpUnknown
	}
	m.counter(requestKey{op, status, d}).Inc()
	m.latencyByOp[op].Observe(seconds)
	if in > 0 {
		m.bytesIn.Add(float64(in))
	}
	if out > 0 {
		m.bytesOut.Add(float64(out))
	}
}

func (m *Metrics) counter(k requestKey) prometheus.Counter {
	m.mu.RLock()
	c := m.counters[k]
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c = m.counters[k]; c == nil {
		c = m.requests.WithLabelValues(k.op.String(), strconv.Itoa(k.status), k.decision.String())
		m.counters[k] = c
	}
	return c
}

func (m *Metrics) upstreamError(kind upstreamErrKind) { m.upstreamErr[kind].Inc() }

func (m *Metrics) connRefused(r httplimit.Refusal) { m.refused[r].Inc() }
