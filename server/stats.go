package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redcell/redcell/resp"
)

// The counters and histograms behind INFO (Server.info) and /metrics
// (collector). Commands and decisions update plain atomics; INFO and the
// Prometheus collector read them when asked, so the hot path never calls
// into client_golang. What one CL.THROTTLE pays: its
// decision counter, its latency bucket and sum (on its client's stripe of
// the command's padded counters), and, on the real clock, the clock read
// that ends it, which is also the next command's now.

// statStripes is how many copies there are of the counters every command
// writes (its latency histogram, the decision counts). A client writes the
// copy its id picks, so connections on different cores seldom write the same
// cache line, which would otherwise move between the cores on every command;
// readers add the copies up.
const statStripes = 8

// stats are the server-wide counters.
type stats struct {
	// decisions counts the rate-limit decisions by decider (the command)
	// and decisionIndex: whether the call was limited and whether it found
	// its key live, in one add.
	_         [64]byte
	decisions [statStripes]decisionCounts

	connections atomic.Int64 // connections accepted
	// rejectedConnections counts connections refused at accept (maxclients).
	rejectedConnections atomic.Int64
	// lookups counts the key reads of GET, TTL, PTTL, TYPE and EXISTS:
	// [0] found nothing, [1] found a live key.
	lookups [2]atomic.Int64
	// errors counts error replies by their kind (errKind).
	errors [numErrorKinds]atomic.Int64

	ops opsSampler
}

// decisionCounts is one stripe of the decision counters, padded to whole
// cache lines so that stripes counted by different loops never share one
// (five deciders' counters are 160 bytes: with CL.ACQUIRE the stripes
// stopped being two lines each).
type decisionCounts struct {
	n [numDeciders][4]atomic.Int64
	_ [(cacheLine - numDeciders*4*8%cacheLine) % cacheLine]byte
}

// cacheLine is the cache line's size on the CPUs redcell runs on (amd64,
// arm64), for padding.
const cacheLine = 64

// The commands that decide, for the decision counters
// (redcell_decisions_total{cmd}).
const (
	decideThrottle = iota // CL.THROTTLE
	decideGCRA            // GCRA
	decideReserve         // CL.RESERVE
	decideWindow          // CL.WINDOW
	decideAcquire         // CL.ACQUIRE
	numDeciders
)

var deciderNames = [numDeciders]string{"cl.throttle", "gcra", "cl.reserve", "cl.window", "cl.acquire"}

func decisionIndex(limited, hit bool) int {
	i := 0
	if limited {
		i = 2
	}
	if hit {
		i++
	}
	return i
}

// countDecision records one decision of decider; hit says whether the key
// held live state when the call arrived (keyspace_hits, as Redis counts a
// read that finds its key).
func (st *stats) countDecision(stripe, decider int, limited, hit bool) {
	st.decisions[stripe].n[decider][decisionIndex(limited, hit)].Add(1)
}

// countLookup records one key read by a command other than CL.THROTTLE.
func (st *stats) countLookup(hit bool) {
	if hit {
		st.lookups[1].Add(1)
	} else {
		st.lookups[0].Add(1)
	}
}

// keyWasLive reports whether a decision found its key's TAT in the future,
// from the decision alone. GCRA stores nothing for a limited call, so its
// ResetAfter is the stored TAT minus now (0 when absent); an allowed call adds
// its increment to max(TAT, now), so ResetAfter exceeds the increment exactly
// when the TAT was ahead of now.
func keyWasLive(limited bool, resetAfter, increment time.Duration) bool {
	if limited {
		return resetAfter > 0
	}
	return resetAfter > increment
}

// countError records one error reply. Client errors are logged at debug
// level only: a hostile client must not be able to flood the log.
func (c *client) countError(e replyError) {
	s := c.srv
	s.stats.errors[e.kind].Add(1)
	c.batch.failed = true
	if s.debug {
		s.cfg.Logger.Debug("error reply", "client", c.ident.addr, "id", c.id, "reply", e.text)
	}
}

// connectionEnded records how a connection ended: input its reader refused
// counts as a protocol error reply (sent or, over the query buffer limit,
// not), and any error is logged at debug level.
func (s *Server) connectionEnded(c *client, err error) {
	if err == nil {
		return
	}
	var pe *resp.ProtocolError
	if errors.As(err, &pe) || errors.Is(err, resp.ErrQueryBufferLimit) {
		s.stats.errors[errKindProtocol].Add(1)
	}
	if s.debug {
		s.cfg.Logger.Debug("connection closed", "client", c.ident.addr, "id", c.id, "err", err)
	}
}

// latencyBounds are the upper bounds of the command latency histogram's
// buckets; a last bucket holds everything slower. A CL.THROTTLE served from
// memory takes well under a microsecond, hence the fine low end.
var latencyBounds = [...]time.Duration{
	250 * time.Nanosecond, 500 * time.Nanosecond,
	time.Microsecond, 2500 * time.Nanosecond, 5 * time.Microsecond,
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second,
}

// histogram is a fixed-bucket histogram of durations made of atomics. It is
// safe for concurrent use; a reader may see an observation in the count
// before the sum.
type histogram struct {
	counts [len(latencyBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

func (h *histogram) observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// histogramSnapshot is a histogram's figures at one moment.
type histogramSnapshot struct {
	counts [len(latencyBounds) + 1]int64
	count  int64
	sum    time.Duration
}

func (h *histogram) snapshot() histogramSnapshot {
	var hs histogramSnapshot
	for i := range h.counts {
		hs.counts[i] = h.counts[i].Load()
		hs.count += hs.counts[i]
	}
	hs.sum = time.Duration(h.sum.Load())
	return hs
}

// quantile estimates the q-quantile (0 < q < 1) by linear interpolation
// inside the bucket that holds it, as Prometheus's histogram_quantile does.
// An estimate in the last, unbounded bucket is its lower bound.
func (hs histogramSnapshot) quantile(q float64) time.Duration {
	if hs.count == 0 {
		return 0
	}
	rank := q * float64(hs.count)
	var seen float64
	for i, n := range hs.counts {
		if n == 0 || seen+float64(n) < rank {
			seen += float64(n)
			continue
		}
		if i == len(latencyBounds) {
			return latencyBounds[i-1]
		}
		lower := time.Duration(0)
		if i > 0 {
			lower = latencyBounds[i-1]
		}
		upper := latencyBounds[i]
		return lower + time.Duration(float64(upper-lower)*(rank-seen)/float64(n))
	}
	return latencyBounds[len(latencyBounds)-1]
}

// cmdStats are one command's counters, for INFO commandstats and latencystats
// and /metrics. Calls are the latency histogram's count. The padding keeps
// them off the cache lines of the command table, which every connection
// reads.
type cmdStats struct {
	_        [64]byte
	latency  [statStripes]latencyStripe
	rejected atomic.Int64 // refused before running: arity, NOAUTH
	failed   atomic.Int64 // ran and replied with an error
	_        [64]byte
}

// latencyStripe is one stripe of a command's latency histogram, padded to
// four cache lines so that no two stripes share one, however aligned.
type latencyStripe struct {
	histogram
	_ [256 - unsafe.Sizeof(histogram{})]byte
}

// latencySnapshot adds up the stripes of the command's latency histogram.
func (cs *cmdStats) latencySnapshot() histogramSnapshot {
	var hs histogramSnapshot
	for i := range cs.latency {
		part := cs.latency[i].snapshot()
		for j, n := range part.counts {
			hs.counts[j] += n
		}
		hs.count += part.count
		hs.sum += part.sum
	}
	return hs
}

// opsSampler keeps instantaneous_ops_per_sec as Redis does: the command count
// sampled every 100 ms, averaged over the last 16 samples.
type opsSampler struct {
	mu      sync.Mutex
	samples [16]float64
	next    int
	last    int64
	lastAt  time.Time
}

const opsSampleEvery = 100 * time.Millisecond

func (o *opsSampler) add(total int64, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.lastAt.IsZero() {
		if dt := at.Sub(o.lastAt); dt > 0 {
			o.samples[o.next] = float64(total-o.last) / dt.Seconds()
			o.next = (o.next + 1) % len(o.samples)
		}
	}
	o.last, o.lastAt = total, at
}

func (o *opsSampler) perSecond() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sum float64
	for _, v := range o.samples {
		sum += v
	}
	return int64(sum/float64(len(o.samples)) + 0.5)
}

// sampleOps runs the sampler on the real clock until stop is closed.
func (s *Server) sampleOps(stop <-chan struct{}) {
	t := time.NewTicker(opsSampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case at := <-t.C:
			s.stats.ops.add(s.commandsProcessed(), at)
		}
	}
}

// startSampler starts the ops sampler and returns the function that stops it.
func (s *Server) startSampler() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.sampleOps(done) })
	return func() { close(done); wg.Wait() }
}

// commandsProcessed is total_commands_processed: every command that ran. As
// in Redis, commands refused before running (unknown, wrong arity, NOAUTH)
// are not counted.
func (s *Server) commandsProcessed() int64 {
	var n int64
	for _, cmd := range s.commands.sorted {
		n += cmd.stats.latencySnapshot().count
	}
	return n
}

// commandStat is one command's figures at one moment.
type commandStat struct {
	name             string
	latency          histogramSnapshot
	rejected, failed int64
}

// commandStats returns the figures of every command that has been called or
// refused, in the command table's order.
func (s *Server) commandStats() []commandStat {
	var out []commandStat
	for _, cmd := range s.commands.sorted {
		cs := commandStat{
			name:     cmd.name,
			latency:  cmd.stats.latencySnapshot(),
			rejected: cmd.stats.rejected.Load(),
			failed:   cmd.stats.failed.Load(),
		}
		if cs.latency.count > 0 || cs.rejected > 0 || cs.failed > 0 {
			out = append(out, cs)
		}
	}
	return out
}

// counters are the server-wide figures INFO and /metrics report.
type counters struct {
	allowed, limited   int64                 // CL.THROTTLE's (INFO throttle_allowed/limited)
	decided            [numDeciders][2]int64 // by decider: allowed, limited
	hits, misses       int64
	errors             [numErrorKinds]int64
	errorReplies       int64
	connections        int64
	rejectedConns      int64
	connectedClients   int64
	expiredKeys        int64
	commandsProcessed  int64
	instantaneousOpsPS int64
}

func (s *Server) counters() counters {
	st := &s.stats
	var c counters
	c.hits, c.misses = st.lookups[1].Load(), st.lookups[0].Load()
	for k := range numDeciders {
		d := [4]int64{}
		for i := range st.decisions {
			for j := range d {
				d[j] += st.decisions[i].n[k][j].Load()
			}
		}
		c.decided[k][0] = d[decisionIndex(false, false)] + d[decisionIndex(false, true)]
		c.decided[k][1] = d[decisionIndex(true, false)] + d[decisionIndex(true, true)]
		c.hits += d[decisionIndex(false, true)] + d[decisionIndex(true, true)]
		c.misses += d[decisionIndex(false, false)] + d[decisionIndex(true, false)]
	}
	c.allowed, c.limited = c.decided[decideThrottle][0], c.decided[decideThrottle][1]
	for i := range st.errors {
		c.errors[i] = st.errors[i].Load()
		c.errorReplies += c.errors[i]
	}
	c.connections = st.connections.Load()
	c.rejectedConns = st.rejectedConnections.Load()
	s.mu.Lock()
	c.connectedClients = int64(len(s.clients))
	s.mu.Unlock()
	c.expiredKeys = s.store.Expired()
	c.commandsProcessed = s.commandsProcessed()
	c.instantaneousOpsPS = st.ops.perSecond()
	return c
}
