package rest

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeMetrics counts and times requests by route: the route table's
// pattern is the label (bounded: one per row), "unmatched" for paths no
// route has.
type routeMetrics struct {
	requests *prometheus.CounterVec   // route, method, code
	seconds  *prometheus.HistogramVec // route, method

	// series caches each (route, code)'s counter and histogram: the
	// vectors' label lookups hash the label values on every request. It
	// is bounded by the route table times the status codes answered.
	mu     sync.RWMutex
	series map[seriesKey]routeSeries
}

type seriesKey struct {
	rt   *route // nil: unmatched
	code int
}

type routeSeries struct {
	requests prometheus.Counter
	seconds  prometheus.Observer
}

const unmatchedRoute = "unmatched"

func newRouteMetrics(reg prometheus.Registerer) (*routeMetrics, error) {
	m := &routeMetrics{
		series: make(map[seriesKey]routeSeries),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "duckicelake_catalog_requests_total",
			Help: "Iceberg REST catalog requests by route (the spec's path pattern), method and status code.",
		}, []string{"route", "method", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "duckicelake_catalog_request_seconds",
			Help:    "Iceberg REST catalog request latency by route and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}, []string{"route", "method"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.seconds} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// observe records one request; a nil m (a Server built by hand in a test)
// records nothing.
func (m *routeMetrics) observe(rt *route, code int, d time.Duration) {
	if m == nil {
		return
	}
	k := seriesKey{rt, code}
	m.mu.RLock()
	se, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		pattern, method := unmatchedRoute, ""
		if rt != nil {
			pattern, method = rt.pattern, rt.method
		}
		se = routeSeries{
			requests: m.requests.WithLabelValues(pattern, method, statusLabel(code)),
			seconds:  m.seconds.WithLabelValues(pattern, method),
		}
		m.mu.Lock()
		m.series[k] = se
		m.mu.Unlock()
	}
	se.requests.Inc()
	se.seconds.Observe(d.Seconds())
}

// statusLabels are the label values of the HTTP status codes, made once:
// strconv.Itoa allocates for every number past 99, on every request.
var statusLabels = func() (t [600]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// statusLabel is code's label value.
func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}
