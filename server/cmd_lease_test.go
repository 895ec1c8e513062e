package server

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/testkit"
)

// acquired is CL.ACQUIRE's reply granting token.
func acquired(limit, remaining int64, token string) string {
	return "*5\r\n" + testkit.Int(0) + testkit.Int(limit) + testkit.Int(remaining) + testkit.Int(-1) + testkit.Bulk(token)
}

// refused is CL.ACQUIRE's limited reply.
func refused(limit, remaining, retryMS int64) string {
	return "*5\r\n" + testkit.Int(1) + testkit.Int(limit) + testkit.Int(remaining) + testkit.Int(retryMS) + "$-1\r\n"
}

// The four commands on one key, on a manual clock: at most limit held, a
// held token renews, an ended lease never comes back, the key goes with
// its last lease.
func TestLeaseCommands(t *testing.T) {
	const s = time.Second
	ms := time.Millisecond
	e := func(r replyError) string { return errReply(r) }
	tc := runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.ACQUIRE", "db", "2", "1000", "TOKEN", "a"}, Want: acquired(2, 1, "a")},
		{At: 100 * ms, Args: []string{"cl.acquire", "db", "2", "1000", "token", "b"}, Want: acquired(2, 0, "b")},
		{At: 200 * ms, Args: []string{"CL.ACQUIRE", "db", "2", "1000", "TOKEN", "c"}, Want: refused(2, 0, 800)},
		{At: 200 * ms, Args: []string{"CL.ACQUIRE", "db", "2", "1000", "TOKEN", "a"}, Want: acquired(2, 0, "a")},
		{At: 300 * ms, Args: []string{"CL.LEASES", "db"}, Want: "*2\r\n*2\r\n" + testkit.Bulk("b") + testkit.Int(800) + "*2\r\n" + testkit.Bulk("a") + testkit.Int(900)},
		{At: 300 * ms, Args: []string{"TYPE", "db"}, Want: "+leases\r\n"},
		{At: 300 * ms, Args: []string{"OBJECT", "ENCODING", "db"}, Want: testkit.Bulk("leases")},
		{At: 300 * ms, Args: []string{"PTTL", "db"}, Want: ":900\r\n"},
		{At: 300 * ms, Args: []string{"CL.RENEW", "db", "b", "5000"}, Want: ":1\r\n"},
		{At: 300 * ms, Args: []string{"PTTL", "db"}, Want: ":5000\r\n"},
		{At: 400 * ms, Args: []string{"CL.RELEASE", "db", "a"}, Want: ":1\r\n"},
		{At: 400 * ms, Args: []string{"CL.RELEASE", "db", "a"}, Want: ":0\r\n"},
		{At: 400 * ms, Args: []string{"CL.RENEW", "db", "a", "1000"}, Want: ":0\r\n"},
		// A lowered limit: b keeps its lease, nobody new gets one.
		{At: 400 * ms, Args: []string{"CL.ACQUIRE", "db", "1", "1000", "TOKEN", "c"}, Want: refused(1, 0, 4900)},
		{At: 400 * ms, Args: []string{"CL.ACQUIRE", "db", "0", "1000", "TOKEN", "b"}, Want: acquired(0, 0, "b")},
		// b's lease ends at 1.4 s now: no renew brings it back, and the
		// key is gone with it.
		{At: 1400 * ms, Args: []string{"CL.RENEW", "db", "b", "1000"}, Want: ":0\r\n"},
		{At: 1400 * ms, Args: []string{"EXISTS", "db"}, Want: ":0\r\n"},
		{At: 1400 * ms, Args: []string{"CL.LEASES", "db"}, Want: "*0\r\n"},
		{At: 2 * s, Args: []string{"CL.ACQUIRE", "db", "1", "1000", "TOKEN", "c"}, Want: acquired(1, 0, "c")},
		{At: 2 * s, Args: []string{"CL.RELEASE", "db", "c"}, Want: ":1\r\n"},
		{At: 2 * s, Args: []string{"EXISTS", "db"}, Want: ":0\r\n"}, // released last: deleted at once,
		// A key of another kind is WRONGTYPE both ways.
		{At: 2 * s, Args: []string{"CL.THROTTLE", "t", "1", "1", "1"}, Want: testkit.Ints(0, 2, 1, -1, 1)},
		{At: 2 * s, Args: []string{"CL.ACQUIRE", "t", "1", "1000"}, Want: e(errWrongType)},
		{At: 2 * s, Args: []string{"CL.RELEASE", "t", "x"}, Want: e(errWrongType)},
		{At: 2 * s, Args: []string{"CL.RENEW", "t", "x", "10"}, Want: e(errWrongType)},
		{At: 2 * s, Args: []string{"CL.LEASES", "t"}, Want: e(errWrongType)},
		{At: 2 * s, Args: []string{"CL.ACQUIRE", "l", "1", "1000", "TOKEN", "x"}, Want: acquired(1, 0, "x")},
		{At: 2 * s, Args: []string{"CL.THROTTLE", "l", "1", "1", "1"}, Want: e(errWrongType)},
		{At: 2 * s, Args: []string{"GET", "l"}, Want: e(errWrongType)},
		// A limit of 0 with nothing held: no expiry will free a slot.
		{At: 2 * s, Args: []string{"CL.ACQUIRE", "off", "0", "1000"}, Want: refused(0, 0, -1)},
	})
	c := tc.srv.counters()
	require.Equal(t, [2]int64{6, 3}, c.decided[decideAcquire], "CL.ACQUIRE granted (renewals too), limited")
}

func TestLeaseArgumentErrors(t *testing.T) {
	e := func(r replyError) string { return errReply(r) }
	runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.ACQUIRE", "k", "x", "10"}, Want: e(errLimitNotInteger)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "x"}, Want: e(errLeaseNotInteger)},
		{Args: []string{"CL.ACQUIRE", "k", "-1", "10"}, Want: e(errLeaseLimitRange)},
		{Args: []string{"CL.ACQUIRE", "k", "100001", "10"}, Want: e(errLeaseLimitRange)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "0"}, Want: e(errLeasePositive)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "9007199255"}, Want: e(errLeaseTooLong)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "TOKEN"}, Want: e(errSyntax)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "TOKEN", ""}, Want: e(errLeaseToken)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "TOKEN", string(make([]byte, 65))}, Want: e(errLeaseToken)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "BLOCK", "x"}, Want: e(errTimeoutInteger)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "BLOCK", "-1"}, Want: e(errTimeoutNegative)},
		{Args: []string{"CL.ACQUIRE", "k", "1", "10", "WAIT", "1"}, Want: e(errSyntax)},
		{Args: []string{"CL.RELEASE", "k", ""}, Want: e(errLeaseToken)},
		{Args: []string{"CL.RENEW", "k", "t", "x"}, Want: e(errLeaseNotInteger)},
		{Args: []string{"CL.RENEW", "k", "t", "0"}, Want: e(errLeasePositive)},
		{Args: []string{"CL.ACQUIRE", "k", "1"}, Want: "-ERR wrong number of arguments for 'cl.acquire' command\r\n"},
		{Args: []string{"CL.RELEASE", "k"}, Want: "-ERR wrong number of arguments for 'cl.release' command\r\n"},
		{Args: []string{"CL.LEASES", "k", "x"}, Want: "-ERR wrong number of arguments for 'cl.leases' command\r\n"},
		{Args: []string{"EXISTS", "k"}, Want: ":0\r\n"},
	})
}

// A lease without TOKEN gets a token of the server's, unique: a thousand
// leases, a thousand tokens, each of which releases its own lease.
func TestAcquireMakesUniqueTokens(t *testing.T) {
	tc := newTestClient(t, Config{})
	seen := map[string]bool{}
	for range 1000 {
		r, err := testkit.Parse(tc.do("CL.ACQUIRE", "k", "1000", "60000"))
		require.NoError(t, err)
		require.Len(t, r.Elems, 5)
		tok := r.Elems[4].Text
		require.Len(t, tok, 11, "64 bits in base64url")
		require.False(t, seen[tok], "token %q twice", tok)
		seen[tok] = true
	}
	for tok := range seen {
		require.Equal(t, ":1\r\n", tc.do("CL.RELEASE", "k", tok))
	}
	require.Equal(t, ":0\r\n", tc.do("EXISTS", "k"))
}

// Inside MULTI, BLOCK does not wait; the transaction's leases obey the
// limit with everything else.
func TestAcquireInMultiDoesNotBlock(t *testing.T) {
	addr, _ := startServer(t, Config{})
	c := testkit.Dial(t, addr)
	require.Equal(t, acquired(1, 0, "h"), c.Do("CL.ACQUIRE", "k", "1", "60000", "TOKEN", "h"))
	require.Equal(t, "+OK\r\n", c.Do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.Do("CL.ACQUIRE", "k", "1", "60000", "TOKEN", "w", "BLOCK", "10000"))
	require.Equal(t, "+QUEUED\r\n", c.Do("CL.RELEASE", "k", "h"))
	require.Equal(t, "+QUEUED\r\n", c.Do("CL.ACQUIRE", "k", "1", "60000", "TOKEN", "w", "BLOCK", "10000"))
	reply := c.Do("EXEC")
	r, err := testkit.Parse(reply)
	require.NoError(t, err)
	require.Len(t, r.Elems, 3, reply)
	require.Equal(t, int64(1), num(r.Elems[0].Elems[0]), "limited at once: %s", reply)
	require.Equal(t, int64(1), num(r.Elems[1]))
	require.Equal(t, "w", r.Elems[2].Elems[4].Text, "granted after the release in the same transaction")
}

// waitQueued waits until n clients are blocked in CL.ACQUIRE.
func waitQueued(t *testing.T, srv *Server, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return srv.leaseWaiters.waiting.Load() == n },
		testkit.Timeout, time.Millisecond, "clients blocked in CL.ACQUIRE")
}

// BLOCK: waiters are served first come, first served as leases are
// released; one whose client goes away leaves the queue; one whose time
// passes is answered limited.
func TestAcquireBlockServesWaitersInOrder(t *testing.T) {
	addr, srv := startServer(t, Config{})
	holder := testkit.Dial(t, addr)
	require.Equal(t, acquired(1, 0, "h"), holder.Do("CL.ACQUIRE", "k", "1", "60000", "TOKEN", "h"))

	waiters := make([]*testkit.Conn, 4)
	for i := range waiters {
		waiters[i] = testkit.Dial(t, addr)
		waiters[i].Write(testkit.Command("CL.ACQUIRE", "k", "1", "60000", "TOKEN", fmt.Sprint("w", i), "BLOCK", "20000"))
		waitQueued(t, srv, int64(i+1))
	}
	// The second waiter goes away: it leaves the queue.
	require.NoError(t, waiters[1].Conn.Close())
	waitQueued(t, srv, 3)

	require.Equal(t, ":1\r\n", holder.Do("CL.RELEASE", "k", "h"))
	require.Equal(t, acquired(1, 0, "w0"), waiters[0].Read())
	waitQueued(t, srv, 2)
	require.Equal(t, ":1\r\n", holder.Do("CL.RELEASE", "k", "w0"))
	require.Equal(t, acquired(1, 0, "w2"), waiters[2].Read(), "the one that left is skipped")
	require.Equal(t, ":1\r\n", holder.Do("CL.RELEASE", "k", "w2"))
	require.Equal(t, acquired(1, 0, "w3"), waiters[3].Read())
	waitQueued(t, srv, 0)

	// Nothing frees the slot within BLOCK: limited, with the wait left.
	late := testkit.Dial(t, addr)
	reply := late.Do("CL.ACQUIRE", "k", "1", "60000", "BLOCK", "50")
	r, err := testkit.Parse(reply)
	require.NoError(t, err)
	require.Equal(t, int64(1), num(r.Elems[0]), reply)
	waitQueued(t, srv, 0)
}

// BLOCK wakes when the earliest lease expires, without any release: a
// holder that died frees its slot by itself.
func TestAcquireBlockWakesAtTheHoldersExpiry(t *testing.T) {
	addr, _ := startServer(t, Config{})
	dead := testkit.Dial(t, addr)
	require.Equal(t, acquired(1, 0, "dead"), dead.Do("CL.ACQUIRE", "k", "1", "150", "TOKEN", "dead"))
	require.NoError(t, dead.Conn.Close()) // the holder's connection ends: its lease does not

	w := testkit.Dial(t, addr)
	require.Equal(t, acquired(1, 0, "next"), w.Do("CL.ACQUIRE", "k", "1", "60000", "TOKEN", "next", "BLOCK", "20000"))
}

// TestLeasesNeverExceedTheLimit: several connections acquire, renew and
// release on a few keys at once, pipelined and in MULTI, on a clock that
// steps; after every reply no key holds more leases than its limit, and a
// transaction's grant, release and grant again see nobody else's between.
func TestLeasesNeverExceedTheLimit(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	addr, _ := startServer(t, Config{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	const limit, clients, ops = 3, 6, 400
	keys := []string{"a", "b"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(f string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, args...))
		mu.Unlock()
	}
	for id := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(id), 7))
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				fail("client %d: %v", id, err)
				return
			}
			defer nc.Close()
			c := &pipeConn{w: nc, r: bufio.NewReader(nc), fail: func(err error) { fail("client %d: %v", id, err) }}
			for i := range ops {
				key := keys[rng.IntN(len(keys))]
				tok := fmt.Sprintf("c%d-%d", id, rng.IntN(4))
				lease := strconv.Itoa(50 + rng.IntN(200))
				acquire := testkit.Command("CL.ACQUIRE", key, strconv.Itoa(limit), lease, "TOKEN", tok)
				switch rng.IntN(6) {
				case 0: // pipelined
					c.Write(acquire + acquire + testkit.Command("CL.LEASES", key))
					c.Read()
					c.Read()
					if n := len(mustParse(c.Read()).Elems); n > limit {
						fail("client %d op %d: %d leases on %s", id, i, n, key)
					}
				case 1: // in a transaction
					c.Write(testkit.Command("MULTI") + acquire + testkit.Command("CL.RELEASE", key, tok) + acquire + testkit.Command("EXEC"))
					for range 4 {
						c.Read()
					}
					r := mustParse(c.Read())
					// Granted first, then nothing of anyone else's
					// comes between: released, and granted again.
					if len(r.Elems) != 3 || num(r.Elems[0].Elems[0]) == 0 && (num(r.Elems[1]) != 1 || num(r.Elems[2].Elems[0]) != 0) {
						fail("client %d op %d: EXEC %v", id, i, r)
					}
				case 2:
					c.Do("CL.RELEASE", key, tok)
				case 3:
					c.Do("CL.RENEW", key, tok, lease)
				case 4:
					now.Add(int64(rng.IntN(40)) * int64(time.Millisecond))
				default:
					r := mustParse(c.Do("CL.ACQUIRE", key, strconv.Itoa(limit), lease, "TOKEN", tok))
					if num(r.Elems[0]) == 0 && (num(r.Elems[2]) < 0 || r.Elems[4].Text != tok) {
						fail("client %d op %d: %v", id, i, r)
					}
				}
				if n := len(mustParse(c.Do("CL.LEASES", key)).Elems); n > limit {
					fail("client %d op %d: %d leases on %s", id, i, n, key)
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
}

func mustParse(s string) testkit.Reply {
	r, err := testkit.Parse(s)
	if err != nil {
		panic(err)
	}
	return r
}

// num is an integer reply's value.
func num(r testkit.Reply) int64 {
	n, err := strconv.ParseInt(r.Text, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("not an integer: %v", r))
	}
	return n
}

// pipeConn is a connection for a test's goroutines, which must not fail
// the test themselves (testkit.Conn's methods do): an I/O error is passed
// to fail, and the replies after it are empty.
type pipeConn struct {
	w    net.Conn
	r    *bufio.Reader
	fail func(error)
	err  error
}

func (c *pipeConn) Write(s string) {
	if c.err == nil {
		_ = c.w.SetDeadline(time.Now().Add(testkit.Timeout))
		if _, c.err = c.w.Write([]byte(s)); c.err != nil {
			c.fail(c.err)
		}
	}
}

func (c *pipeConn) Read() string {
	if c.err != nil {
		return "*0\r\n"
	}
	var s string
	if s, c.err = testkit.ReadReply(c.r); c.err != nil {
		c.fail(c.err)
		return "*0\r\n"
	}
	return s
}

func (c *pipeConn) Do(args ...string) string {
	c.Write(testkit.Command(args...))
	return c.Read()
}

// A slot migration carries a key's leases: after the flip its new owner
// lists the same tokens and holds the limit against them.
func TestClusterMigrationCarriesLeases(t *testing.T) {
	nodes := startClusterNodes(t, 3)
	a, b := nodes[0], nodes[1]
	top := topology(nodes)
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", top, 1)
		require.NoError(t, err)
	}
	const key = "{bar}db" // slot 5061, node a's
	slot := cluster.Slot([]byte(key))
	for _, tok := range []string{"x", "y"} {
		v, err := a.do(t, "CL.ACQUIRE", key, 2, 3600000, "TOKEN", tok)
		require.NoError(t, err)
		require.Equal(t, int64(0), v.([]any)[0])
	}
	_, err := a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
	require.NoError(t, err)
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETSLOT", slot, "NODE", b.id, 2)
		require.NoError(t, err)
	}
	_, err = a.do(t, "CL.LEASES", key)
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(b.port))
	v, err := b.do(t, "CL.LEASES", key)
	require.NoError(t, err)
	held := v.([]any)
	require.Len(t, held, 2)
	require.Equal(t, "x", held[0].([]any)[0])
	require.Equal(t, "y", held[1].([]any)[0])
	require.InDelta(t, 3600000, held[1].([]any)[1], 60000)
	v, err = b.do(t, "CL.ACQUIRE", key, 2, 3600000, "TOKEN", "z")
	require.NoError(t, err)
	require.Equal(t, int64(1), v.([]any)[0], "the limit holds against the leases carried")
	v, err = b.do(t, "CL.RELEASE", key, "x")
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
}

// BenchmarkReleaseHandlerNotHeld is one CL.RELEASE of a token not held on
// a key of 100 leases, what bench/leases.sh's releases mostly are; beside
// BenchmarkThrottleHandler it says what a release costs over a decision.
func BenchmarkReleaseHandlerNotHeld(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	for i := range 100 {
		tc.do("CL.ACQUIRE", "rel:12", "100", "3600000", "TOKEN", fmt.Sprintf("%012d", i*7))
	}
	cmd := argv("CL.RELEASE", "rel:12", fmt.Sprintf("%012d", 3))
	b.ReportAllocs()
	for b.Loop() {
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
	require.Equal(b, ":0\r\n", tc.do("CL.RELEASE", "rel:12", fmt.Sprintf("%012d", 3)))
}

// BenchmarkAcquireReleaseHandler is one CL.ACQUIRE with a token the server
// makes and the CL.RELEASE of that token, on a key that holds 10 other
// leases (bench/leases.sh's random keys hold about that many).
func BenchmarkAcquireReleaseHandler(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	for range 10 {
		tc.do("CL.ACQUIRE", "acq:12", "100", "3600000")
	}
	acquire := argv("CL.ACQUIRE", "acq:12", "100", "3600000")
	release := argv("CL.RELEASE", "acq:12", "xxxxxxxxxxx")
	b.ReportAllocs()
	for b.Loop() {
		tc.srv.handle(tc.conn, redconCommand(acquire))
		copy(release[2], tc.conn.cl.token[:]) // the token just made
		tc.conn.SetBuffer(nil)
		tc.srv.handle(tc.conn, redconCommand(release))
		tc.conn.SetBuffer(nil)
	}
	b.StopTimer()
	// Every lease taken was released: the 10 others are all that is held.
	require.True(b, strings.HasPrefix(tc.do("CL.LEASES", "acq:12"), "*10\r\n"))
}
