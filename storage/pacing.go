package storage

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble's compactions are paced so that deciding keeps its cores. Under a
// writer churning millions of keys, a trace of the server showed Pebble's
// compactions taking half of its CPU, each in runs of tens of milliseconds
// on a processor of its own, and the event loop runnable meanwhile, waiting
// for a processor, for up to 87 ms at a time (bench/probe.sh). Go's
// scheduler takes a goroutine off its processor only after 10 ms, and has no
// priorities. So each compaction runs in bursts of at most compactionBurst,
// each followed by a pause that keeps it to compactionDuty of the wall time:
// its processor is free during the pause, and a decision waits for one at
// most a burst.
//
// The pause is taken in Pebble's own pacing hook (CompactionGrantHandle's
// CumulativeStats, called every 128 keys a compaction writes); otherwise
// compactionPacer schedules as Pebble's default scheduler does: as many
// compactions at once as Pebble asks for (one, unless it falls far
// behind). A compaction paced below what the writes need lets Pebble's
// level 0 grow; then Pebble makes the flusher's writes wait, and the
// flusher, which writes each changed key's latest state once per flush,
// writes fewer states of the keys that change often: the disk falls behind
// by at most what it could not keep up with, and deciding does not.
const (
	// compactionBurst is the longest a compaction runs without a pause.
	compactionBurst = time.Millisecond
	// compactionDuty is the share of the wall time a compaction may run.
	compactionDuty = 0.5
	// grantInterval is how often waiting compactions are looked for, as
	// Pebble's scheduler does, besides when one finishes.
	grantInterval = 100 * time.Millisecond
)

// compactionPacer is Pebble's CompactionScheduler for the store.
type compactionPacer struct {
	burst time.Duration
	duty  float64
	sleep func(time.Duration)
	now   func() time.Time

	db pebble.DBForCompaction

	mu      sync.Mutex
	running int
	closed  bool

	gmu  sync.Mutex // serializes granting, and Unregister with it
	stop chan struct{}
	poke chan struct{}
	done chan struct{}
}

var _ pebble.CompactionScheduler = (*compactionPacer)(nil)

func newCompactionPacer() *compactionPacer {
	return &compactionPacer{burst: compactionBurst, duty: compactionDuty, sleep: time.Sleep, now: time.Now,
		stop: make(chan struct{}), poke: make(chan struct{}, 1), done: make(chan struct{})}
}

func (p *compactionPacer) Register(_ int, db pebble.DBForCompaction) {
	p.db = db
	go p.granter()
}

func (p *compactionPacer) Unregister() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	// Taking gmu waits for a grant under way, which holds it: once it is
	// ours, none is, and none will begin (closed).
	p.gmu.Lock()
	defer p.gmu.Unlock()
}

// TrySchedule grants a compaction the DB wants to start now, if fewer run
// than it allows.
func (p *compactionPacer) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	if !p.reserve() {
		return false, nil
	}
	return true, p.handle()
}

func (p *compactionPacer) UpdateGetAllowedWithoutPermission() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// reserve counts one more compaction running, if the DB allows it.
func (p *compactionPacer) reserve() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.running >= p.db.GetAllowedWithoutPermission() {
		return false
	}
	p.running++
	return true
}

func (p *compactionPacer) release() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
}

// grant starts the compactions the DB has waiting, as many as it allows.
func (p *compactionPacer) grant() {
	p.gmu.Lock()
	defer p.gmu.Unlock()
	for p.reserve() {
		if waiting, _ := p.db.GetWaitingCompaction(); !waiting || !p.db.Schedule(p.handle()) {
			p.release()
			return
		}
	}
}

func (p *compactionPacer) granter() {
	defer close(p.done)
	t := time.NewTicker(grantInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.poke:
		}
		p.grant()
	}
}

func (p *compactionPacer) handle() *pacedCompaction { return &pacedCompaction{p: p} }

// pacedCompaction is one compaction's grant: it pauses the compaction after
// each burst.
type pacedCompaction struct {
	p     *compactionPacer
	since time.Time // the end of the last pause
}

func (h *pacedCompaction) Started()                                  { h.since = h.p.now() }
func (h *pacedCompaction) MeasureCPU(pebble.CompactionGoroutineKind) {}

// CumulativeStats is called from the compaction's goroutine every 128
// keys; it pauses the compaction once it has run a burst.
func (h *pacedCompaction) CumulativeStats(pebble.CompactionGrantHandleStats) {
	ran := h.p.now().Sub(h.since)
	if ran < h.p.burst {
		return
	}
	h.p.sleep(time.Duration(float64(ran) * (1 - h.p.duty) / h.p.duty))
	h.since = h.p.now()
}

// Done may start another compaction at once, as Pebble's scheduler does.
func (h *pacedCompaction) Done() {
	h.p.release()
	h.p.grant()
}
