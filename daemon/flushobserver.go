package daemon

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// flushObserver wraps the backend (the Pebble one, in a daemon) to watch
// every write the flusher makes (Apply, and in durable mode the commit
// log's Log): its duration and size for /metrics, and a warning in the log
// when one takes long. Log's durations are also a histogram of their own,
// logSync: in durable mode every decision waits for one, so its latency is
// the disk's fsync an operator charts, not to be lost among the
// checkpoints' Applies that share duration. The backend's other methods, the commit log's Seal
// and Drop among them, pass through. It is safe for concurrent use.
type flushObserver struct {
	storage.LoggingBackend
	logger *slog.Logger
	// slow is the duration from which a flush is logged as slow: half the
	// flush interval, and at least slowFlushFloor.
	slow time.Duration

	duration prometheus.Histogram
	keys     prometheus.Histogram
	logSync  prometheus.Histogram
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

func newFlushObserver(b storage.LoggingBackend, interval time.Duration, logger *slog.Logger) *flushObserver {
	return &flushObserver{
		LoggingBackend: b,
		logger:         logger,
		slow:           max(interval/2, slowFlushFloor),
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
		logSync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "redcell_commit_log_sync_duration_seconds",
			Help:    "Durable mode (--flush-interval 0): time one group commit took to append its changes to the commit log and fsync it, which the decisions it carries wait for.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50 µs to 1.6 s
		}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redcell_last_flush_success_timestamp_seconds",
			Help: "Unix time of the last successful flush.",
		}),
	}
}

// Apply is the flush's write: timed, counted, and logged when slow.
func (o *flushObserver) Apply(changes []storage.Change, saved gcra.Instant, sync bool) error {
	start := time.Now()
	err := o.LoggingBackend.Apply(changes, saved, sync)
	o.observe(time.Since(start), len(changes), err)
	return err
}

// observe records one write of keys changes that took d.
func (o *flushObserver) observe(d time.Duration, keys int, err error) {
	o.duration.Observe(d.Seconds())
	o.keys.Observe(float64(keys))
	if err == nil {
		o.lastOK.Set(float64(time.Now().UnixNano()) / 1e9)
	}
	if d >= o.slow {
		o.warnSlow(d, keys)
	}
}

// Log is a group commit's write in durable mode (storage.CommitLog), timed
// and counted as a flush.
func (o *flushObserver) Log(changes []storage.Change, saved gcra.Instant) error {
	start := time.Now()
	err := o.LoggingBackend.Log(changes, saved)
	d := time.Since(start)
	o.logSync.Observe(d.Seconds())
	o.observe(d, len(changes), err)
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

// collectors are what the observer measures: each write's duration and
// keys, each group commit's on its own, and the time of the last good one.
func (o *flushObserver) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.duration, o.keys, o.logSync, o.lastOK}
}
