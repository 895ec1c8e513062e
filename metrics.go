package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"redcell/config"
	"redcell/server"
	"redcell/storage"
)

// flushObserver wraps the Pebble backend to watch every write the flusher
// makes: its duration and size for /metrics, and a warning in the log when
// one takes long. It is safe for concurrent use.
type flushObserver struct {
	storage.Backend
	logger *slog.Logger
	// slow is the duration from which a flush is logged as slow: half the
	// flush interval, and at least slowFlushFloor.
	slow time.Duration

	duration prometheus.Histogram
	keys     prometheus.Histogram
	lastOK   prometheus.Gauge

	mu         sync.Mutex
	lastWarn   time.Time
	suppressed int
}

// slowFlushFloor is the least duration logged as a slow flush; slow-flush
// warnings are logged at most once per slowFlushLogEvery, with a count of
// the ones in between.
const (
	slowFlushFloor    = 100 * time.Millisecond
	slowFlushLogEvery = 10 * time.Second
)

func newFlushObserver(b storage.Backend, interval time.Duration, logger *slog.Logger) *flushObserver {
	return &flushObserver{
		Backend: b,
		logger:  logger,
		slow:    max(interval/2, slowFlushFloor),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "redcell_flush_duration_seconds",
			Help:    "Time to write and sync one flush of changed keys to disk (every --flush-interval, SAVE, BGSAVE, shutdown, or each group commit in durable mode).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		keys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "redcell_flush_keys",
			Help:    "Keys written (changed or deleted) by one flush.",
			Buckets: []float64{0, 1, 10, 100, 1000, 10_000, 100_000, 1_000_000},
		}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redcell_last_flush_success_timestamp_seconds",
			Help: "Unix time of the last successful flush.",
		}),
	}
}

// Apply is the flush's write: timed, counted, and logged when slow.
func (o *flushObserver) Apply(changes []storage.Change, sync bool) error {
	start := time.Now()
	err := o.Backend.Apply(changes, sync)
	d := time.Since(start)
	o.duration.Observe(d.Seconds())
	o.keys.Observe(float64(len(changes)))
	if err == nil {
		o.lastOK.Set(float64(time.Now().UnixNano()) / 1e9)
	}
	if d >= o.slow {
		o.warnSlow(d, len(changes))
	}
	return err
}

func (o *flushObserver) warnSlow(d time.Duration, keys int) {
	o.mu.Lock()
	now := time.Now()
	if now.Sub(o.lastWarn) < slowFlushLogEvery {
		o.suppressed++
		o.mu.Unlock()
		return
	}
	suppressed := o.suppressed
	o.lastWarn, o.suppressed = now, 0
	o.mu.Unlock()
	o.logger.Warn("slow flush to disk", "duration", d, "keys", keys, "threshold", o.slow,
		"slow_flushes_not_logged", suppressed)
}

// collectors are the flush metrics: the observer's histograms, and the
// flusher's own counts of failures, which include the flushes refused before
// any write (a full disk).
func (o *flushObserver) collectors(f *storage.Flusher) []prometheus.Collector {
	return []prometheus.Collector{o.duration, o.keys, o.lastOK,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "redcell_flush_failures_total",
			Help: "Flushes that failed (full, stalled or failing disk); their changes are kept for the next one.",
		}, func() float64 { return float64(f.Stats().Failures) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "redcell_flush_failing",
			Help: "1 while flushes fail (the last one failed), else 0.",
		}, func() float64 {
			if f.Failing() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "redcell_disk_bytes",
			Help: "Bytes the Pebble store under --dir uses on disk, its reserve file aside.",
		}, func() float64 { return float64(o.DiskSize()) }),
	}
}

// registry gathers everything /metrics serves: the server's counters, the
// flushes, the start-up load, the build, and Go's and the process's own.
func registry(srv *server.Server, st *state) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		srv.Collector(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "redcell_build_info",
			Help:        "Always 1; the labels say which build is running.",
			ConstLabels: prometheus.Labels{"version": server.Version, "commit": config.BuildCommit(), "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "redcell_loaded_keys",
			Help: "Live keys loaded from disk at start-up.",
		}, func() float64 { return float64(st.loaded) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "redcell_load_duration_seconds",
			Help: "Time the start-up load took.",
		}, func() float64 { return st.loadTime.Seconds() }),
	)
	if st.flushes != nil {
		reg.MustRegister(st.flushes.collectors(st.flusher)...)
	}
	return reg
}

// serveMetrics serves /metrics on addr until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "redcell: metrics at /metrics")
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "err", err)
		}
	}()
	logger.Info("serving metrics", "metrics", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = hs.Close(); <-done }, nil
}
