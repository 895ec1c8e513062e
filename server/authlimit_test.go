package server

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// An address's failures, step by step: the budget's 10 answered at once,
// then late by a delay that doubles up to a second; the budget earned back
// at 3 a second; the port never matters, an IPv6 address counts by its /64.
func TestAuthLimiterDelays(t *testing.T) {
	const third = time.Second / authFailPerSecond
	ms := time.Millisecond
	steps := []struct {
		at   time.Duration // since t0
		addr string
		n    int // failures at once, each wanting want
		want time.Duration
	}{
		{0, "10.0.0.1:1000", 10, 0},
		{0, "10.0.0.1:1001", 1, 100 * ms}, // any port
		{0, "10.0.0.1:1002", 1, 200 * ms},
		{0, "10.0.0.1:1003", 1, 400 * ms},
		{0, "10.0.0.1:1004", 1, 800 * ms},
		{0, "10.0.0.1:1005", 3, time.Second}, // capped, and charged no further
		{0, "10.0.0.2:1000", 10, 0},          // another address has its own budget
		{0, "[::ffff:10.0.0.3]:1", 10, 0},    // mapped IPv4 is IPv4
		{0, "10.0.0.3:1", 1, 100 * ms},
		{0, "[2001:db8::1]:1", 5, 0},
		{0, "[2001:db8::ffff:2]:2", 5, 0}, // the same /64
		{0, "[2001:db8::3]:3", 1, 100 * ms},
		{0, "[2001:db8:0:1::1]:1", 1, 0}, // another /64

		// 10.0.0.1 is 5 failures over its budget: two thirds of a second
		// earn two back, and each failure charges one.
		{2 * third, "10.0.0.1:1", 1, 800 * ms},
		{2 * third, "10.0.0.1:1", 1, time.Second},
		// Its failures' worth is spent authFailBurst+authMaxExcess thirds
		// after the last: the whole budget is back.
		{(2 + authFailBurst + authMaxExcess) * third, "10.0.0.1:1", 10, 0},
		{(2 + authFailBurst + authMaxExcess) * third, "10.0.0.1:1", 1, 100 * ms},
	}
	l := newAuthLimiter()
	for i, s := range steps {
		for j := range s.n {
			got := l.fail(s.addr, gcra.InstantOf(t0.Add(s.at)))
			require.Equal(t, s.want, got, "step %d: failure %d from %s at +%v", i, j+1, s.addr, s.at)
		}
	}
}

// The delays by failure over the budget: doubling from authDelayFirst, the
// first at authDelayMax being the authMaxExcess-th.
func TestAuthDelay(t *testing.T) {
	var got []time.Duration
	for k := int64(1); k <= authMaxExcess+2; k++ {
		got = append(got, authDelay(k))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}, got)
	require.Less(t, authDelay(authMaxExcess-1), authDelayMax)
}

// What a guesser gets from one address, on a clock that moves only as it
// waits: one connection waiting for each answer gets about 3 a second, as
// the budget's rate; N connections about N a second, each answer a second
// late. The README's figures.
func TestAuthGuessRate(t *testing.T) {
	const span = time.Minute
	guesses := func(conns int) int {
		l := newAuthLimiter()
		next := make([]time.Duration, conns) // when each connection sends its next guess
		n := 0
		for {
			i := 0
			for j := range next {
				if next[j] < next[i] {
					i = j
				}
			}
			if next[i] >= span {
				return n
			}
			n++
			next[i] += l.fail("10.0.0.1:1", gcra.InstantOf(t0.Add(next[i])))
			next[i] += time.Millisecond // a round trip
		}
	}
	one := guesses(1)
	require.LessOrEqual(t, one, authFailBurst+authFailPerSecond*int(span/time.Second)+authMaxExcess, "one connection")
	require.Greater(t, one, 2*int(span/time.Second), "one connection")
	hundred := guesses(100)
	require.LessOrEqual(t, hundred, 100*int(span/time.Second)+authFailBurst+100, "100 connections: one answer a second each")
	require.Greater(t, hundred, 99*int(span/time.Second), "100 connections")
}

// However many addresses fail, the limiter remembers at most
// authFailMaxAddrs of them, and the ones beyond share one budget; entries
// whose attempts have all been earned back are dropped.
func TestAuthLimiterBoundsItsTable(t *testing.T) {
	l := newAuthLimiter()
	now := gcra.InstantOf(t0)
	n := authFailMaxAddrs + 1000
	for i := range n {
		l.fail(ipv4(i)+":1", now)
	}
	require.Equal(t, authFailMaxAddrs+1, l.size(), "every address it had room for, and the overflow's")
	require.Equal(t, authDelayMax, l.fail(ipv4(n+100)+":1", now), "the 1000 addresses beyond the table shared one budget")
	require.Zero(t, l.fail(ipv4(5)+":1", now), "a remembered address keeps its own")

	// Once every entry has expired, the next new address sweeps them.
	now += l.maxAhead
	require.Zero(t, l.fail(ipv4(n+200)+":1", now))
	require.Equal(t, 1, l.size())
}

// ipv4 is the i-th address of 10.0.0.0/8.
func ipv4(i int) string {
	return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

// sleeps records the late answers a server waits out, without waiting.
type sleeps struct{ got []time.Duration }

func (s *sleeps) sleep(d time.Duration, _ <-chan struct{}) bool {
	s.got = append(s.got, d)
	return true
}

// A right password is answered at once and charges nothing, however many
// wrong ones its address sent before; wrong ones past the budget are
// answered late, AUTH and HELLO alike, whatever the user.
func TestRightPasswordIsNeverSlowed(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	var slept sleeps
	tc.srv.sleep = slept.sleep
	wrong := errReply(errWrongPass)
	for i := range authFailBurst {
		require.Equal(t, wrong, tc.do("AUTH", "guess"+itoa(int64(i))), "guess %d", i+1)
	}
	require.Empty(t, slept.got, "the budget's failures are answered at once")
	require.Equal(t, wrong, tc.do("AUTH", "nobody", "guess"))
	require.Equal(t, wrong, tc.do("HELLO", "3", "AUTH", "default", "guess"))
	require.Equal(t, wrong, tc.do("AUTH", "guess"))
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, slept.got)

	for range 3 {
		require.Equal(t, ok, tc.do("AUTH", "pw"))
		require.True(t, strings.HasPrefix(tc.do("HELLO", "3", "AUTH", "default", "pw"), "%7\r\n"))
		require.Equal(t, "+PONG\r\n", tc.do("PING"))
	}
	require.Len(t, slept.got, 3, "a right password waits for nothing")
	require.Equal(t, wrong, tc.do("AUTH", "guess"), "nor was it charged or given back: the next guess is the 14th")
	require.Equal(t, 800*time.Millisecond, slept.got[3])
}

// A flood from more addresses than the table holds slows the wrong
// passwords of addresses it has never seen, and refuses no right one.
func TestFloodOfAddressesRefusesNoRightPassword(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	var slept sleeps
	tc.srv.sleep = slept.sleep
	now := gcra.InstantOf(t0)
	for i := range authFailMaxAddrs + 100 {
		tc.srv.authFails.fail(ipv4(i)+":1", now)
	}
	fresh := tc.connect(t)
	fresh.c.ident.addr = "192.0.2.1:5000"
	require.Equal(t, ok, fresh.do("AUTH", "pw"))
	require.Empty(t, slept.got)
	require.Equal(t, errReply(errWrongPass), fresh.do("AUTH", "guess"))
	require.Equal(t, []time.Duration{authDelayMax}, slept.got, "the overflow's budget, spent by the flood")
	tc.c.ident.addr = ipv4(7) + ":1"
	require.Equal(t, errReply(errWrongPass), tc.do("AUTH", "guess"))
	require.Len(t, slept.got, 1, "an address the table holds has its own budget")
}

// held is a Server.sleep that holds each late answer until the test lets it
// go, or its client is killed.
type held struct {
	started chan time.Duration
	release chan struct{}
}

func newHeld() *held {
	return &held{started: make(chan time.Duration, 16), release: make(chan struct{})}
}

func (h *held) sleep(d time.Duration, done <-chan struct{}) bool {
	h.started <- d
	select {
	case <-h.release:
		return true
	case <-done:
		return false
	}
}

// awaitLate waits until a late answer is being held, and returns its delay.
func (h *held) awaitLate(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-h.started:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no answer was held")
		return 0
	}
}

// startHeld starts a server with cfg whose late answers h holds.
func startHeld(t *testing.T, cfg Config, h *held) (string, *Server) {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	srv := New(cfg, storage.New(storage.Config{Shards: 1}))
	srv.sleep = h.sleep // before Serve: its goroutines see it
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String(), srv
}

// exhaust spends the failures budget of c's address.
func exhaust(t *testing.T, c *testkit.Conn) {
	t.Helper()
	for i := range authFailBurst {
		require.Equal(t, errReply(errWrongPass), c.DoInline("AUTH guess"), "guess %d", i+1)
	}
}

// A late answer waits on its connection's own goroutine: served by an event
// loop, the connection leaves it first (a wrong password within the budget
// does not make it leave). Meanwhile the loop and the server serve others,
// the right password from the same address included; the connection's
// pipelined commands wait behind the late answer, in order.
func TestLateAnswerBlocksNoOtherClient(t *testing.T) {
	for _, loops := range []int{1, -1} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			h := newHeld()
			addr, srv := startHeld(t, Config{RequirePass: "pw", EventLoops: loops}, h)
			guesser := testkit.Dial(t, addr)
			exhaust(t, guesser)
			other := testkit.Dial(t, addr)
			require.Equal(t, ok, other.DoInline("AUTH pw"))
			id := strings.Trim(other.DoInline("CLIENT ID"), ":\r\n")
			guesserID := clientIDs(t, srv, id)[0]
			require.Equal(t, loops > 0 && engine.HaveEventLoops, onLoop(t, srv, ":"+guesserID+"\r\n"), "no late answer yet: still on its loop")

			guesser.Write("AUTH guess\r\nAUTH pw\r\nPING\r\n")
			require.Equal(t, authDelayFirst, h.awaitLate(t))
			require.Equal(t, "+PONG\r\n", other.DoInline("PING"))
			require.Equal(t, ok, testkit.Dial(t, addr).DoInline("AUTH pw"), "the right password, same address, at once")
			require.Contains(t, other.DoInline("CLIENT LIST"), "id="+guesserID+" ")
			require.Regexp(t, "id="+guesserID+" [^\n]* flags=b ", other.DoInline("CLIENT LIST"), "waiting, as CLIENT LIST shows")
			noReply(t, guesser)

			close(h.release)
			require.Equal(t, errReply(errWrongPass), guesser.Read())
			require.Equal(t, ok, guesser.Read(), "behind it, the right password")
			require.Equal(t, "+PONG\r\n", guesser.Read())
			require.False(t, onLoop(t, srv, ":"+guesserID+"\r\n"), "it left its loop")
			require.Empty(t, h.started)
		})
	}
}

// clientIDs returns the ids of srv's clients other than except, as
// CLIENT ID's digits.
func clientIDs(t *testing.T, srv *Server, except string) []string {
	t.Helper()
	var ids []string
	for _, c := range srv.connectedClients() {
		if id := itoa(c.id); id != except {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// CLIENT KILL and the server's Close end a connection whose answer is late
// at once: they do not wait for it.
func TestKillEndsALateAnswer(t *testing.T) {
	for _, loops := range []int{1, -1} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			h := newHeld()
			addr, srv := startHeld(t, Config{RequirePass: "pw", EventLoops: loops}, h)
			admin := testkit.Dial(t, addr)
			require.Equal(t, ok, admin.DoInline("AUTH pw"))
			adminID := strings.Trim(admin.DoInline("CLIENT ID"), ":\r\n")
			guesser := testkit.Dial(t, addr)
			exhaust(t, guesser)
			guesser.Write("AUTH guess\r\nPING\r\n")
			h.awaitLate(t)
			id := clientIDs(t, srv, adminID)[0]
			require.Equal(t, ":1\r\n", admin.DoInline("CLIENT KILL ID "+id))
			requireEOF(t, guesser)

			// Close: Serve returns without the late answer's end.
			late := testkit.Dial(t, addr)
			late.Write("AUTH guess\r\n")
			h.awaitLate(t)
			require.NoError(t, srv.Close())
			requireEOF(t, late)
		})
	}
}

// requireEOF asserts that the server ends c's connection without a reply.
func requireEOF(t *testing.T, c *testkit.Conn) {
	t.Helper()
	require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	b, err := c.Reader.ReadByte()
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "still open")
	require.Error(t, err, "read %q", b)
}

// A wrong password queued in a transaction is answered late after EXEC has
// released its keys: meanwhile another client decides on them.
func TestLateAnswerInExecHoldsNoKey(t *testing.T) {
	for _, loops := range []int{1, -1} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			h := newHeld()
			addr, srv := startHeld(t, Config{RequirePass: "pw", EventLoops: loops}, h)
			for range authFailBurst {
				srv.authFails.fail("127.0.0.1:1", gcra.InstantOf(t0))
			}
			tx := testkit.Dial(t, addr)
			require.Equal(t, ok, tx.DoInline("AUTH pw"))
			require.Equal(t, ok, tx.DoInline("MULTI"))
			require.Equal(t, "+QUEUED\r\n", tx.DoInline("CL.THROTTLE k 1 1 60"))
			require.Equal(t, "+QUEUED\r\n", tx.DoInline("AUTH guess"))
			require.Equal(t, "+QUEUED\r\n", tx.DoInline("AUTH guess"))
			tx.Write("EXEC\r\nPING\r\n")
			require.Equal(t, 100*time.Millisecond+200*time.Millisecond, h.awaitLate(t), "both AUTHs' delays, at once")

			other := testkit.Dial(t, addr)
			require.Equal(t, ok, other.DoInline("AUTH pw"))
			require.Equal(t, testkit.Ints(0, 2, 0, -1, 120), other.DoInline("CL.THROTTLE k 1 1 60"), "the key is free")
			noReply(t, tx)
			close(h.release)
			require.Equal(t, "*3\r\n"+testkit.Ints(0, 2, 1, -1, 60)+errReply(errWrongPass)+errReply(errWrongPass), tx.Read())
			require.Equal(t, "+PONG\r\n", tx.Read())
		})
	}
}

// sleep, the real one, ends at once when its client is killed.
func TestSleepEndsWhenDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	require.False(t, sleep(time.Hour, done))
	require.True(t, sleep(time.Nanosecond, make(chan struct{})))
}
