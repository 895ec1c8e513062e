package rls

import (
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// Metrics are the service's Prometheus metrics: per rule the reference's
// stats (total hits, over limit, near limit, within limit, shadow mode),
// labelled by the rule's stats key ("domain.key_value"), the requests by
// overall code with their latency, and the configuration's loads. A nil
// *Metrics counts nothing. It is safe for concurrent use.
type Metrics struct {
	totalHits, overLimit, nearLimit, withinLimit, shadowMode *prometheus.CounterVec
	requests                                                 *prometheus.CounterVec
	latency                                                  prometheus.Histogram
	loads                                                    *prometheus.CounterVec
	rulesLoaded                                              prometheus.Gauge
	globalShadowMode                                         prometheus.Counter

	mu    sync.RWMutex
	rules map[string]*ruleStats
}

// NewMetrics returns the service's metrics, to register with Collectors.
func NewMetrics() *Metrics {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcell_rls_" + name, Help: help}, []string{"rule"})
	}
	return &Metrics{
		totalHits:   vec("total_hits_total", "Hits counted against the rule (hits_addend summed), as the reference's total_hits."),
		overLimit:   vec("over_limit_total", "Hits over the rule's limit, as the reference's over_limit."),
		nearLimit:   vec("near_limit_total", "Hits past the near-limit share (--rls-near-limit-ratio, 0.8 by default) of the rule's limit and within it, as the reference's near_limit."),
		withinLimit: vec("within_limit_total", "Hits within the rule's limit, as the reference's within_limit."),
		shadowMode:  vec("shadow_mode_total", "Hits over the limit of a rule in shadow mode, answered OK, as the reference's shadow_mode."),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcell_rls_requests_total",
			Help: "ShouldRateLimit calls by overall code: OK, OVER_LIMIT, or the gRPC error code."}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "redcell_rls_request_duration_seconds",
			Help: "Time to answer one ShouldRateLimit call.", Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14)}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcell_rls_config_loads_total",
			Help: "Loads of the rules (--rls-config, or an xDS update) by result: success, or error (refused, the rules in force kept)."}, []string{"result"}),
		rulesLoaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redcell_rls_config_files",
			Help: "Files (or xDS resources) of the rules in force."}),
		globalShadowMode: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcell_rls_global_shadow_mode_total",
			Help: "Answers OVER_LIMIT turned OK by the global shadow mode (--rls-shadow-mode), as the reference's global_shadow_mode."}),
		rules: map[string]*ruleStats{},
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.totalHits, m.overLimit, m.nearLimit, m.withinLimit, m.shadowMode,
		m.requests, m.latency, m.loads, m.rulesLoaded, m.globalShadowMode}
}

// globalShadow counts an answer the global shadow mode turned OK.
func (m *Metrics) globalShadow() {
	if m != nil {
		m.globalShadowMode.Inc()
	}
}

// ruleStats are one rule's counters, looked up once.
type ruleStats struct {
	totalHits, overLimit, nearLimit, withinLimit, shadowMode prometheus.Counter
}

func (m *Metrics) rule(key string) *ruleStats {
	if m == nil {
		return nil
	}
	m.mu.RLock()
	r := m.rules[key]
	m.mu.RUnlock()
	if r != nil {
		return r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r = m.rules[key]; r == nil {
		r = &ruleStats{
			totalHits: m.totalHits.WithLabelValues(key), overLimit: m.overLimit.WithLabelValues(key),
			nearLimit: m.nearLimit.WithLabelValues(key), withinLimit: m.withinLimit.WithLabelValues(key),
			shadowMode: m.shadowMode.WithLabelValues(key),
		}
		m.rules[key] = r
	}
	return r
}

// count adds one limit's outcome for hits, as the reference's
// GetResponseDescriptorStatus does: over the limit, the hits past it (all
// of them when the count was already there) and those between the near
// threshold (nearRatio of the limit) and the limit; within it, the hits
// past the near threshold.
func (r *ruleStats) count(o outcome, hits int64, shadow bool, nearRatio float64) {
	if r == nil {
		return
	}
	h := float64(hits)
	r.totalHits.Add(h)
	near := uint64(float64(float32(o.threshold) * float32(nearRatio)))
	if o.over {
		over := h
		if o.before < o.threshold {
			over = float64(o.after - o.threshold)
			r.nearLimit.Add(float64(o.threshold - max(near, o.before)))
		}
		r.overLimit.Add(over)
		if shadow {
			r.shadowMode.Add(over)
		}
		return
	}
	r.withinLimit.Add(h)
	if o.after > near {
		if o.before >= near {
			r.nearLimit.Add(h)
		} else {
			r.nearLimit.Add(float64(o.after - near))
		}
	}
}

func (m *Metrics) request(resp *pb.RateLimitResponse, err error, took time.Duration) {
	if m == nil {
		return
	}
	code := "OK"
	switch {
	case err != nil:
		code = status.Code(err).String()
	case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
		code = "OVER_LIMIT"
	}
	m.requests.WithLabelValues(code).Inc()
	m.latency.Observe(took.Seconds())
}

// Loaded counts a load of the configuration: the files of rules put in
// force, or a refusal (err not nil).
func (m *Metrics) Loaded(files int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.loads.WithLabelValues("error").Inc()
		return
	}
	m.loads.WithLabelValues("success").Inc()
	m.rulesLoaded.Set(float64(files))
}
