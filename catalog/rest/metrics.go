package rest

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeMetrics counts and times requests by route: the route table's
// pattern is the label (bounded: one per row), "unmatched" for paths no
// route has.
type routeMetrics struct {
	requests *prometheus.CounterVec   // route, method, code
	seconds  *prometheus.HistogramVec // route, method
}

const unmatchedRoute = "unmatched"

func newRouteMetrics(reg prometheus.Registerer) (*routeMetrics, error) {
	m := &routeMetrics{
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
	pattern, method := unmatchedRoute, ""
	if rt != nil {
		pattern, method = rt.pattern, rt.method
	}
	m.requests.WithLabelValues(pattern, method, strconv.Itoa(code)).Inc()
	m.seconds.WithLabelValues(pattern, method).Observe(d.Seconds())
}
