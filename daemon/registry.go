package daemon

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

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
		reg.MustRegister(st.flushes.collectors()...)
		reg.MustRegister(persistenceCollectors(st.flusher, st.backend)...)
	}
	return reg
}

// persistenceCollectors are the flusher's own counts of failures, which
// include the flushes refused before any write (a full disk), and the
// store's size on disk.
func persistenceCollectors(f *storage.Flusher, b storage.Backend) []prometheus.Collector {
	return []prometheus.Collector{
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
		}, func() float64 { return float64(b.DiskSize()) }),
	}
}
