package protocol_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// metricsURL serves the in-process server's collector over HTTP, as
// main's --metrics-addr does, and returns the /metrics URL.
func metricsURL(t *testing.T, ts *harness.TestServer) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ts.Srv.Collector()))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(hs.Close)
	return hs.URL + "/metrics"
}

// scrape is one /metrics page, parsed.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics fetches url and parses it as Prometheus's text format.
func scrapeMetrics(t *testing.T, url string) scrape {
	t.Helper()
	s, err := tryScrape(url)
	require.NoError(t, err)
	return s
}

// tryScrape is scrapeMetrics for use inside require.Eventually.
func tryScrape(url string) (scrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	return scrape(families), err
}

// value returns the sample of family name whose labels are exactly the
// given name=value pairs, or fails the test. A histogram's value is its
// count.
func (s scrape) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.lookup(name, labels...)
	require.True(t, ok, "no sample %s%v in the scrape", name, labels)
	return v
}

func (s scrape) lookup(name string, labels ...string) (float64, bool) {
	mf := s[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}
