package rest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRouteMetrics: each request is counted under its route's pattern,
// method and status code (cached series or not), unmatched paths under
// "unmatched", and timed per route.
func TestRouteMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newRouteMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	load := &route{method: "GET", pattern: "/v1/{prefix}/namespaces/{namespace}/tables/{table}"}
	for range 3 {
		m.observe(load, 200, time.Millisecond)
	}
	m.observe(load, 404, time.Millisecond)
	m.observe(nil, 404, time.Millisecond)
	m.observe(load, 1000, time.Millisecond) // past the label table
	for _, tt := range []struct {
		labels []string
		want   float64
	}{
		{[]string{load.pattern, "GET", "200"}, 3},
		{[]string{load.pattern, "GET", "404"}, 1},
		{[]string{unmatchedRoute, "", "404"}, 1},
		{[]string{load.pattern, "GET", "1000"}, 1},
	} {
		if got := gathered(t, reg, "duckicelake_catalog_requests_total", tt.labels[2], tt.labels[0]); got != tt.want {
			t.Errorf("requests%v = %v, want %v", tt.labels, got, tt.want)
		}
	}
	if got := gathered(t, reg, "duckicelake_catalog_request_seconds", "", load.pattern); got != 5 {
		t.Errorf("the route's latency histogram has %v samples, want 5", got)
	}
}

// gathered is the value of reg's series of family name whose route label
// is route and, when code is not empty, whose code label is code (a
// histogram's sample count).
func gathered(t *testing.T, reg *prometheus.Registry, name, code, route string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() != route || l.GetName() == "code" && code != "" && l.GetValue() != code {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestMetricsObserveAllocatesNothing(t *testing.T) {
	m, err := newRouteMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := &route{method: "GET", pattern: "/v1/config"}
	m.observe(rt, 200, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { m.observe(rt, 200, time.Millisecond) }); n != 0 {
		t.Fatalf("observe allocates %v times per request", n)
	}
}
