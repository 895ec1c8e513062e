package availability_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// Replication as operators meet it: masters and replicas on loopback,
// REPLICAOF, CLIENT KILL TYPE replica, INFO and ROLE, and what a client reads
// from each node. The nodes of a test share one manual clock, as machines
// whose clocks NTP keeps together: a peek on a replica answers what the
// master would at the same instant.

// replServer is one in-process redcell with replication on 127.0.0.1.
type replServer struct {
	harness.Endpoint
	Store *storage.Store
	Node  *replication.Node
	Srv   *server.Server
	rdb   *redis.Client
	log   *testkit.LockedBuffer // the node's and the server's log

	stopOnce sync.Once
	stopped  chan struct{} // closed once stop has returned
	served   chan error
}

type replOption func(*replication.Config)

// withBacklog sets the node's --repl-backlog-size.
func withBacklog(size int) replOption {
	return func(c *replication.Config) { c.BacklogSize = size }
}

// withBufferLimit sets the node's --repl-buffer-limit.
func withBufferLimit(size int) replOption {
	return func(c *replication.Config) { c.BufferLimit = size }
}

// withDial makes the node connect to its master through dial.
func withDial(dial func(addr string) (net.Conn, error)) replOption {
	return func(c *replication.Config) { c.Dial = dial }
}

// startReplServer starts a node on now (the test's shared clock) and stops
// it when the test ends.
func startReplServer(t *testing.T, now func() time.Time, opts ...replOption) *replServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	log := &testkit.LockedBuffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	store := storage.New(storage.Config{})
	cfg := replication.Config{Store: store, Now: now, ListeningPort: port, FeedInterval: time.Millisecond, Logger: logger}
	for _, o := range opts {
		o(&cfg)
	}
	node := replication.New(cfg)
	srv := server.New(server.Config{Now: now, Bind: "127.0.0.1", Port: port, Dir: t.TempDir(),
		Replication: node, Logger: logger}, store)
	s := &replServer{Endpoint: harness.LoopbackEndpoint(port), Store: store, Node: node, Srv: srv, log: log,
		stopped: make(chan struct{}), served: make(chan error, 1)}
	go func() { s.served <- srv.Serve(ln) }()
	s.rdb = redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop stops the node and its server, as a process that exits; it is
// idempotent.
func (s *replServer) stop(t *testing.T) {
	t.Helper()
	s.stopOnce.Do(func() {
		defer close(s.stopped)
		_ = s.rdb.Close()
		s.Node.Close()
		require.NoError(t, s.Srv.Close())
		select {
		case err := <-s.served:
			require.NoError(t, err, "Serve")
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10s of Close")
		}
	})
}

func (s *replServer) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := s.rdb.Do(context.Background(), args...).Result()
	require.NoError(t, err, "%v", args)
	return v
}

// info is one field of INFO replication.
func (s *replServer) info(t *testing.T, field string) string {
	t.Helper()
	for _, line := range strings.Split(s.do(t, "INFO", "replication").(string), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// replicaOf points s at master and waits for master_link_status:up.
func (s *replServer) replicaOf(t *testing.T, master *replServer) {
	t.Helper()
	require.Equal(t, "OK", s.do(t, "REPLICAOF", "127.0.0.1", master.Port))
	s.waitLinkUp(t)
}

func (s *replServer) waitLinkUp(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return s.info(t, "master_link_status") == "up" },
		20*time.Second, 5*time.Millisecond, "master_link_status:up; the replica's log:\n%s", s.log)
}

// caughtUp waits until each replica has applied every change the master
// made so far: its offset (a chained replica's too) reaches the master's.
func caughtUp(t *testing.T, master *replServer, replicas ...*replServer) {
	t.Helper()
	target := master.Node.Sync()
	for _, r := range replicas {
		require.Eventually(t, func() bool {
			st := r.Node.Status()
			return st.LinkUp && st.Offset >= target
		}, 20*time.Second, 5*time.Millisecond, "the replica on port %d at offset %d of %d; its log:\n%s",
			r.Port, r.Node.Status().Offset, target, r.log)
	}
}

// pipelined runs one command per key, made by cmd, in pipelines of 1000,
// and returns each reply as text: a value, an array, "(nil)" or the error.
func (s *replServer) pipelined(t *testing.T, keys []string, cmd func(key string) []any) []string {
	t.Helper()
	out := make([]string, 0, len(keys))
	for start := 0; start < len(keys); start += 1000 {
		cmds, err := s.rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
			for _, k := range keys[start:min(start+1000, len(keys))] {
				p.Do(context.Background(), cmd(k)...)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) && len(cmds) == 0 {
			require.NoError(t, err)
		}
		for _, c := range cmds {
			v, err := c.(*redis.Cmd).Result()
			switch {
			case errors.Is(err, redis.Nil):
				out = append(out, "(nil)")
			case err != nil:
				out = append(out, "error: "+err.Error())
			default:
				out = append(out, fmt.Sprint(v))
			}
		}
	}
	return out
}

func (s *replServer) gets(t *testing.T, keys []string) []string {
	return s.pipelined(t, keys, func(k string) []any { return []any{"GET", k} })
}

// peeks is each key's CL.THROTTLE peek (quantity 0) at the limit the tests
// write with.
func (s *replServer) peeks(t *testing.T, keys []string) []string {
	return s.pipelined(t, keys, func(k string) []any { return []any{"CL.THROTTLE", k, 1000, 1, 3600, 0} })
}

// requireSame fails unless want and got (the master's and a replica's
// replies for keys) are equal, naming the first few keys that differ.
func requireSame(t *testing.T, what string, keys, want, got []string) {
	t.Helper()
	require.Len(t, got, len(want))
	var diffs []string
	n := 0
	for i := range want {
		if want[i] != got[i] {
			n++
			if len(diffs) < 5 {
				diffs = append(diffs, fmt.Sprintf("%s: %q on the master, %q on the replica", keys[i], want[i], got[i]))
			}
		}
	}
	require.Zero(t, n, "%s differs for %d of %d keys:\n%s", what, n, len(keys), strings.Join(diffs, "\n"))
}

// requireConverged checks GET and the peek of every key on each replica
// against the master.
func requireConverged(t *testing.T, master *replServer, keys []string, replicas ...*replServer) {
	t.Helper()
	wantGet, wantPeek := master.gets(t, keys), master.peeks(t, keys)
	for _, r := range replicas {
		requireSame(t, fmt.Sprintf("GET on the replica on port %d", r.Port), keys, wantGet, r.gets(t, keys))
		requireSame(t, fmt.Sprintf("a peek on the replica on port %d", r.Port), keys, wantPeek, r.peeks(t, keys))
	}
}

// throttleAll makes one CL.THROTTLE decision of quantity q(i) on each key.
func (s *replServer) throttleAll(t *testing.T, keys []string, q func(i int) int) {
	t.Helper()
	i := 0
	replies := s.pipelined(t, keys, func(k string) []any {
		i++
		return []any{"CL.THROTTLE", k, 1000, 1, 3600, q(i - 1)}
	})
	for j, r := range replies {
		require.True(t, strings.HasPrefix(r, "[0 1001 "), "%s: %s", keys[j], r)
	}
}

// delArgs is DEL keys.
func delArgs(keys []string) []any {
	args := []any{"DEL"}
	for _, k := range keys {
		args = append(args, k)
	}
	return args
}

func keyNames(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	return keys
}

// writer makes decisions on a master from its own goroutine until stopped:
// on existing keys, on new keys (new:0, new:1, ...), and deletes.
type writer struct {
	stopCh chan struct{}
	done   chan struct{}
	err    error
	writes atomic.Int64
	newKey int // how many new keys were made, once stopped
}

func startWriter(m *replServer, keys []string) *writer {
	w := &writer{stopCh: make(chan struct{}), done: make(chan struct{})}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr, Protocol: 2})
	rng := rand.New(rand.NewPCG(1, 2))
	go func() {
		defer close(w.done)
		defer rdb.Close()
		for {
			select {
			case <-w.stopCh:
				return
			default:
			}
			_, err := rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
				for j := 0; j < 100; j++ {
					switch k := keys[rng.IntN(len(keys))]; {
					case j%25 == 0:
						p.Do(context.Background(), "DEL", k)
					case j%10 == 0:
						p.Do(context.Background(), "CL.THROTTLE", "new:"+strconv.Itoa(w.newKey), 1000, 1, 3600)
						w.newKey++
					default:
						p.Do(context.Background(), "CL.THROTTLE", k, 1000, 1, 3600, 1+rng.IntN(3))
					}
				}
				return nil
			})
			if err != nil {
				w.err = err
				return
			}
			w.writes.Add(100)
		}
	}()
	return w
}

// stop stops the writer and returns the new keys it made.
func (w *writer) stop(t *testing.T) []string {
	t.Helper()
	close(w.stopCh)
	<-w.done
	require.NoError(t, w.err, "the writer")
	return keyNames("new:", w.newKey)
}

// Two replicas of one master, each started while a writer changes, creates
// and deletes keys: every key's GET and peek on both equals the master's
// once they have caught up, the writes made during each full sync included.
func TestReplicasConvergeWithWritesDuringTheFullSync(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	clock := harness.NewManualClock(harness.T0)
	m := startReplServer(t, clock.Now)
	r1, r2 := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	keys := keyNames("user:", 50000)
	m.throttleAll(t, keys, func(i int) int { return 1 + i%7 })

	w := startWriter(m, keys)
	for _, r := range []*replServer{r1, r2} {
		before := w.writes.Load()
		r.replicaOf(t, m)
		// The writer kept writing while the replica loaded the snapshot,
		// and goes on after it.
		require.Eventually(t, func() bool { return w.writes.Load() >= before+2000 }, 20*time.Second, time.Millisecond)
	}
	keys = append(keys, w.stop(t)...)
	caughtUp(t, m, r1, r2)
	requireConverged(t, m, keys, r1, r2)
	require.Equal(t, m.do(t, "DBSIZE"), r1.do(t, "DBSIZE"))
	require.Equal(t, m.do(t, "DBSIZE"), r2.do(t, "DBSIZE"))
	st := m.Node.Status()
	require.Equal(t, int64(2), st.SyncFull)
	require.Len(t, st.Replicas, 2)
	for _, r := range st.Replicas {
		require.Equal(t, "online", r.State)
	}
}

// windowPeek is a CL.WINDOW peek (quantity 0) of key at limit 10 in 60 s,
// with PRECISION precision (0: the exact log).
func windowPeek(t *testing.T, s *replServer, key string, precision int) any {
	t.Helper()
	return s.do(t, "CL.WINDOW", key, 10, 60, 0, "PRECISION", precision)
}

// CL.WINDOW keys replicate exactly: the exact log's entries each leave the
// replica's window when they leave the master's, and the sub-window
// counters hold the same counts, in the snapshot and in the stream alike.
func TestReplicationWindowsExactly(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m, r := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	type win struct {
		key       string
		precision int
	}
	wins := []win{{"log:snap", 0}, {"counters:snap", 6}, {"log:stream", 0}, {"counters:stream", 6}, {"fixed:stream", 1}}
	// Entries at distinct instants, so that they leave the window one by
	// one: 1 at t0, 2 at +7s, 3 at +19s.
	write := func(w win) {
		for i, q := range []int{1, 2, 3} {
			if i > 0 {
				clock.Advance(time.Duration(5*i+2) * time.Second)
			}
			m.do(t, "CL.WINDOW", w.key, 10, 60, q, "PRECISION", w.precision)
		}
		clock.Set(harness.T0)
	}
	write(wins[0])
	write(wins[1])
	r.replicaOf(t, m)
	for _, w := range wins[2:] {
		write(w)
	}
	caughtUp(t, m, r)
	for _, w := range wins {
		require.Equal(t, "window", r.do(t, "TYPE", w.key), w.key)
		require.Equal(t, m.do(t, "PTTL", w.key), r.do(t, "PTTL", w.key), w.key)
	}
	// The clock only moves forward: past the last entry's end a key has
	// expired, and a read deletes it.
	for _, at := range []time.Duration{0, 19 * time.Second, 30 * time.Second, 59 * time.Second, 61 * time.Second, 67 * time.Second, 80 * time.Second} {
		clock.Set(harness.T0.Add(at))
		for _, w := range wins {
			require.Equal(t, windowPeek(t, m, w.key, w.precision), windowPeek(t, r, w.key, w.precision), "%s at t0+%v", w.key, at)
		}
		if at == 30*time.Second {
			require.Equal(t, []any{int64(0), int64(10), int64(4), int64(-1), int64(49)}, windowPeek(t, r, "log:snap", 0),
				"6 of 10 taken, the last leaving at t0+79s")
		}
		if at == 67*time.Second {
			require.Equal(t, []any{int64(0), int64(10), int64(7), int64(-1), int64(12)}, windowPeek(t, r, "log:snap", 0),
				"the entries of t0 and t0+7s gone")
		}
	}
}

// DEL and FLUSHALL on the master reach the replica, and so do keys written
// again after them.
func TestReplicationDelAndFlushall(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m, r := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	keys := keyNames("k", 1000)
	m.throttleAll(t, keys, func(int) int { return 1 })
	m.do(t, "CL.WINDOW", "w", 10, 60)
	r.replicaOf(t, m)
	caughtUp(t, m, r)
	require.Equal(t, int64(1001), r.do(t, "DBSIZE"))

	require.Equal(t, int64(3), m.do(t, "DEL", "k1", "k2", "w"))
	require.Equal(t, int64(1), m.do(t, "UNLINK", "k3"))
	caughtUp(t, m, r)
	require.Equal(t, int64(997), r.do(t, "DBSIZE"))
	requireConverged(t, m, keys, r)
	require.Equal(t, []string{"(nil)", "(nil)", "(nil)", "(nil)"}, r.gets(t, []string{"k1", "k2", "k3", "w"}))

	require.Equal(t, "OK", m.do(t, "FLUSHALL"))
	caughtUp(t, m, r)
	require.Equal(t, int64(0), r.do(t, "DBSIZE"))
	m.do(t, "CL.THROTTLE", "k7", 1000, 1, 3600, 5)
	caughtUp(t, m, r)
	require.Equal(t, int64(1), r.do(t, "DBSIZE"))
	requireConverged(t, m, keys, r)
}

// Keys expire on both: past their TAT neither answers them, and once the
// master's expiry cycle has removed them the replica holds none either.
func TestReplicationExpiry(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m, r := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	short, long := keyNames("short:", 500), keyNames("long:", 500)
	r.replicaOf(t, m)
	m.throttleAll(t, short, func(int) int { return 1 })                                             // TAT t0+1h
	m.pipelined(t, long, func(k string) []any { return []any{"CL.THROTTLE", k, 1000, 1, 3600, 5} }) // t0+5h
	m.do(t, "CL.WINDOW", "win", 10, 60)
	caughtUp(t, m, r)
	require.Equal(t, int64(1001), r.do(t, "DBSIZE"))
	require.Equal(t, m.do(t, "PTTL", "short:0"), r.do(t, "PTTL", "short:0"))
	require.Equal(t, int64(3600_000), r.do(t, "PTTL", "short:0"))

	// Past the short keys' TAT: the replica, which sweeps nothing here,
	// still holds them until the master's expiry cycle deletes them and
	// the deletions stream.
	clock.Advance(time.Hour)
	require.Equal(t, int64(1001), r.do(t, "DBSIZE"))
	require.Equal(t, []string{"(nil)"}, r.gets(t, []string{"short:0"}), "expired on the replica before the master's DEL")
	require.Equal(t, 501, m.Store.ExpireSome(gcra.InstantOf(clock.Now()), 1<<20))
	caughtUp(t, m, r)
	require.Equal(t, int64(500), r.do(t, "DBSIZE"))
	require.Equal(t, int64(-2), r.do(t, "PTTL", "short:0"))
	require.Equal(t, int64(-2), r.do(t, "PTTL", "win"))
	requireConverged(t, m, append(short, long...), r)
	for _, v := range r.gets(t, short) {
		require.Equal(t, "(nil)", v)
	}
	require.Equal(t, int64(4*3600_000), r.do(t, "PTTL", "long:0"))
}

// A replica of a replica: the middle node forwards its master's stream,
// so the chain's end converges with the master, its offset included.
func TestReplicationChained(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m := startReplServer(t, clock.Now)
	mid, end := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	keys := keyNames("user:", 5000)
	m.throttleAll(t, keys, func(i int) int { return 1 + i%3 })
	mid.replicaOf(t, m)
	w := startWriter(m, keys)
	end.replicaOf(t, mid)
	before := w.writes.Load()
	require.Eventually(t, func() bool { return w.writes.Load() >= before+2000 }, 20*time.Second, time.Millisecond)
	keys = append(keys, w.stop(t)...)
	caughtUp(t, m, mid, end)
	requireConverged(t, m, keys, mid, end)
	require.Equal(t, m.info(t, "master_replid"), end.info(t, "master_replid"))
	require.Equal(t, m.info(t, "master_repl_offset"), end.info(t, "master_repl_offset"))
	require.Equal(t, "1", mid.info(t, "connected_slaves"))
}

// A chain under an idle master: the middle node has loaded its snapshot
// and received nothing since, when a replica of its own connects.
func TestReplicationChainedUnderAnIdleMaster(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m, first := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	keys := keyNames("user:", 100)
	first.replicaOf(t, m)
	m.throttleAll(t, keys, func(int) int { return 1 }) // the master's stream has an offset past 0
	caughtUp(t, m, first)

	mid, end := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	mid.replicaOf(t, m)
	end.replicaOf(t, mid)
	caughtUp(t, m, mid, end)
	requireConverged(t, m, keys, end)
	m.do(t, "CL.THROTTLE", "later", 1000, 1, 3600)
	caughtUp(t, m, end)
	requireConverged(t, m, append(keys, "later"), end)
}

// dialGate is a replica's way to its master that the test can close, so
// that a link stays down for as long as the test needs.
type dialGate struct{ closed atomic.Bool }

func (g *dialGate) dial(addr string) (net.Conn, error) {
	if g.closed.Load() {
		return nil, errors.New("the test closed the way to the master")
	}
	return net.DialTimeout("tcp", addr, 5*time.Second)
}

// breakLinks closes the gate and kills the replicas' links on the master
// (CLIENT KILL TYPE replica), and waits until each replica sees its link
// down.
func breakLinks(t *testing.T, gate *dialGate, m *replServer, replicas ...*replServer) {
	t.Helper()
	gate.closed.Store(true)
	require.Equal(t, int64(len(replicas)), m.do(t, "CLIENT", "KILL", "TYPE", "replica"))
	for _, r := range replicas {
		require.Eventually(t, func() bool { return r.info(t, "master_link_status") == "down" },
			20*time.Second, 5*time.Millisecond)
	}
}

// A short break resumes with +CONTINUE: what changed meanwhile comes from
// the master's backlog, and no snapshot is sent.
func TestReplicationShortBreakContinues(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	gate := &dialGate{}
	m := startReplServer(t, clock.Now)
	r1, r2 := startReplServer(t, clock.Now, withDial(gate.dial)), startReplServer(t, clock.Now, withDial(gate.dial))
	keys := keyNames("user:", 2000)
	m.throttleAll(t, keys, func(int) int { return 1 })
	r1.replicaOf(t, m)
	r2.replicaOf(t, m)
	caughtUp(t, m, r1, r2)
	before := m.Node.Status()
	require.Equal(t, int64(2), before.SyncFull)

	breakLinks(t, gate, m, r1, r2)
	m.throttleAll(t, keys[:500], func(int) int { return 2 })
	require.Equal(t, int64(100), m.do(t, delArgs(keyNames("user:", 100))...))
	m.do(t, "CL.THROTTLE", "during-break", 1000, 1, 3600)
	gate.closed.Store(false)
	caughtUp(t, m, r1, r2)
	requireConverged(t, m, append(keys, "during-break"), r1, r2)
	after := m.Node.Status()
	require.Equal(t, before.SyncFull, after.SyncFull, "no full resynchronization")
	require.Equal(t, before.SyncPartialOK+2, after.SyncPartialOK, "a +CONTINUE for each replica")
	require.Equal(t, before.SyncPartialErr, after.SyncPartialErr)
	require.Contains(t, r1.log.String(), "continuing the master's stream")
}

// A break that outlasts the backlog (a small --repl-backlog-size) falls
// back to a full resynchronization, which still converges: a key deleted
// during the break is gone from the replica too.
func TestReplicationBacklogOverflowResyncsInFull(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	gate := &dialGate{}
	m := startReplServer(t, clock.Now, withBacklog(16<<10))
	r := startReplServer(t, clock.Now, withDial(gate.dial))
	keys := keyNames("user:", 2000)
	m.throttleAll(t, keys, func(int) int { return 1 })
	r.replicaOf(t, m)
	caughtUp(t, m, r)
	before := m.Node.Status()

	breakLinks(t, gate, m, r)
	m.throttleAll(t, keys, func(int) int { return 3 }) // some 100 KiB of stream
	require.Equal(t, int64(1), m.do(t, "DEL", "user:7"))
	m.Node.Sync()
	st := m.Node.Status()
	require.Greater(t, st.BacklogFirst, r.Node.Status().Offset+1, "the backlog no longer holds what the replica lacks")
	gate.closed.Store(false)
	caughtUp(t, m, r)
	requireConverged(t, m, keys, r)
	require.Equal(t, m.do(t, "DBSIZE"), r.do(t, "DBSIZE"))
	after := m.Node.Status()
	require.Equal(t, before.SyncFull+1, after.SyncFull)
	require.Equal(t, before.SyncPartialErr+1, after.SyncPartialErr, "asked to continue, refused")
	require.Equal(t, before.SyncPartialOK, after.SyncPartialOK)
}

// A restarted replica (a new process with an empty store) gets a full
// resynchronization with what changed while it was gone; a replica that
// was promoted (REPLICAOF NO ONE) and took writes of its own gets one when
// it is pointed at its old master again, and loses those writes. In
// between, a replica of the old master continues the promoted node's
// stream (PSYNC2).
func TestReplicationFullResyncWhenItMust(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m := startReplServer(t, clock.Now)
	r1, r2 := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	keys := keyNames("user:", 2000)
	m.throttleAll(t, keys, func(int) int { return 1 })
	r1.replicaOf(t, m)
	r2.replicaOf(t, m)
	caughtUp(t, m, r1, r2)

	// r1 restarts.
	r1.stop(t)
	require.Equal(t, int64(10), m.do(t, delArgs(keyNames("user:", 10))...))
	m.throttleAll(t, keys[10:20], func(int) int { return 4 })
	full := m.Node.Status().SyncFull
	r1 = startReplServer(t, clock.Now)
	r1.replicaOf(t, m)
	caughtUp(t, m, r1, r2)
	requireConverged(t, m, keys, r1, r2)
	require.Equal(t, full+1, m.Node.Status().SyncFull)

	// r2 is promoted, r1 follows it and continues its stream.
	require.Equal(t, "OK", r2.do(t, "REPLICAOF", "NO", "ONE"))
	require.Equal(t, "master", r2.info(t, "role"))
	require.Equal(t, m.info(t, "master_replid"), r2.info(t, "master_replid2"))
	r1.replicaOf(t, r2)
	r2.do(t, "CL.THROTTLE", "r2-only", 1000, 1, 3600)
	r2.throttleAll(t, keys[20:30], func(int) int { return 5 })
	caughtUp(t, r2, r1)
	requireConverged(t, r2, append(keys, "r2-only"), r1)
	st := r2.Node.Status()
	require.Equal(t, int64(1), st.SyncPartialOK, "r1 continued the promoted node's stream; r1's log:\n%s", r1.log)
	require.Zero(t, st.SyncFull)

	// r2 goes back to m: its stream is not m's, so it must sync in full,
	// and r1, its replica, with it.
	full = m.Node.Status().SyncFull
	r2.replicaOf(t, m)
	caughtUp(t, m, r2, r1)
	requireConverged(t, m, append(keys, "r2-only"), r2, r1)
	require.Equal(t, []string{"(nil)"}, r1.gets(t, []string{"r2-only"}))
	require.Equal(t, full+1, m.Node.Status().SyncFull)
	require.Equal(t, int64(1), r2.Node.Status().SyncFull, "r1 synced in full from r2 after it")
	require.Equal(t, m.info(t, "master_replid"), r1.info(t, "master_replid"))
}

// stallingConn is a replica's connection to its master that stops reading
// once the replica has sent PSYNC, until released: a replica slow to take
// its snapshot.
type stallingConn struct {
	net.Conn
	sentPSync atomic.Bool
	release   <-chan struct{}
}

func (c *stallingConn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "PSYNC") {
		c.sentPSync.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *stallingConn) Read(p []byte) (int, error) {
	if c.sentPSync.Load() {
		<-c.release
	}
	return c.Conn.Read(p)
}

// stalledReplica starts a master with a 64 KiB backlog (and opts) holding
// keys, and a replica of it whose first connection stops reading once it
// has sent PSYNC, until release is called (or the test ends): a replica
// slow to take its snapshot.
func stalledReplica(t *testing.T, clock *harness.ManualClock, keys []string, opts ...replOption) (m, r *replServer, release func()) {
	t.Helper()
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	var dials atomic.Int64
	dial := func(addr string) (net.Conn, error) {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil || dials.Add(1) > 1 {
			return conn, err
		}
		return &stallingConn{Conn: conn, release: released}, nil
	}
	m = startReplServer(t, clock.Now, append([]replOption{withBacklog(64 << 10)}, opts...)...)
	r = startReplServer(t, clock.Now, withDial(dial))
	t.Cleanup(release) // registered after the servers', so run before them
	m.throttleAll(t, keys, func(int) int { return 1 })
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.Port))
	require.Eventually(t, func() bool { return m.info(t, "connected_slaves") == "1" }, 10*time.Second, 5*time.Millisecond)
	return m, r, release
}

// A replica that takes its snapshot slowly while the master's writes go on
// falls further behind than the backlog holds: the master keeps the stream
// it lacks (up to --repl-buffer-limit), and once it reads again it
// converges from that one full resynchronization.
func TestReplicationFullSyncKeepsTheWritesMadeDuringIt(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	keys := keyNames("user:", 20000)
	m, r, release := stalledReplica(t, clock, keys)
	// Writes while the replica does not read, until the stream kept for
	// it is 4 times the backlog (the kernel's buffers take some first).
	rounds := 0
	require.Eventually(t, func() bool {
		rounds++
		m.throttleAll(t, keys[:5000], func(int) int { return 1 })
		m.Node.Sync()
		return m.Node.Status().BacklogLen > 4*64<<10
	}, 60*time.Second, time.Millisecond)
	release()
	caughtUp(t, m, r)
	requireConverged(t, m, keys, r)
	require.Equal(t, int64(1), m.Node.Status().SyncFull, "after %d rounds of writes", rounds)
	require.NotContains(t, m.log.String(), "link to replica lost")
	// Caught up, the master's stream goes back to its backlog's size.
	m.throttleAll(t, keys[:10], func(int) int { return 1 })
	m.Node.Sync()
	require.LessOrEqual(t, m.Node.Status().BacklogLen, int64(64<<10))
}

// A replica that falls further behind than --repl-buffer-limit while it
// takes its snapshot is dropped, and its next full resynchronization, with
// the writes over, converges. Under writes that never stop, a link like
// this one would start over for good, as a Redis replica past its
// client-output-buffer-limit does.
func TestReplicationFullSyncOutrunByWrites(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	clock := harness.NewManualClock(harness.T0)
	keys := keyNames("user:", 20000)
	m, r, release := stalledReplica(t, clock, keys, withBufferLimit(256<<10))

	// Writes while the replica does not read, until the master gives up
	// on it: the kernel's buffers hold some, the buffer limit 256 KiB more.
	rounds := 0
	require.Eventually(t, func() bool {
		rounds++
		m.throttleAll(t, keys[:5000], func(int) int { return 1 })
		return strings.Contains(m.log.String(), "more than the replica buffer limit of 262144 bytes holds")
	}, 60*time.Second, time.Millisecond, "the master's log:\n%s", m.log)
	release()
	caughtUp(t, m, r)
	requireConverged(t, m, keys, r)
	require.Equal(t, int64(2), m.Node.Status().SyncFull, "after %d rounds of writes", rounds)
}
