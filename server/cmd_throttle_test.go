package server

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// The handler path from dispatch to reply, on a clock the test moves.
func TestThrottleHandler(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	var reads atomic.Int64
	tc := newTestClient(t, Config{Now: func() time.Time {
		reads.Add(1)
		return time.Unix(0, now.Load())
	}})
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"CL.THROTTLE", "k", "4", "1", "1", "6"}, Want: testkit.Ints(1, 5, 5, -1, 0)},
		{Args: []string{"CL.THROTTLE", "k", "4", "1", "1"}, Want: testkit.Ints(0, 5, 4, -1, 1)},
		{Args: []string{"cl.throttle", "k", "4", "1", "1", "4"}, Want: testkit.Ints(0, 5, 0, -1, 5)},
		{Args: []string{"CL.THROTTLE", "k", "4", "1", "1"}, Want: testkit.Ints(1, 5, 0, 1, 5)},
		{At: 2500 * time.Millisecond, Args: []string{"CL.THROTTLE", "k", "4", "1", "1", "0"}, Want: testkit.Ints(0, 5, 2, -1, 3)},
		{At: 2500 * time.Millisecond, Args: []string{"CL.THROTTLE", "k", "-4", "1", "1"}, Want: errReply(errNegativeBurst)},
		{At: 2500 * time.Millisecond, Args: []string{"CL.THROTTLE", "k", "4", "1"}, Want: "-ERR wrong number of arguments for 'cl.throttle' command\r\n"},
	}, func(args ...string) string {
		before := reads.Load()
		reply := tc.do(args...)
		if n := reads.Load() - before; n > 1 {
			t.Errorf("%q: the clock was read %d times; once per command is the contract", args, n)
		}
		return reply
	}, func(at time.Duration) { now.Store(t0.Add(at).UnixNano()) })
	if got, want := tc.srv.counters().allowed, int64(3); got != want {
		t.Errorf("allowed decisions = %d want %d", got, want)
	}
	if got, want := tc.srv.counters().limited, int64(2); got != want {
		t.Errorf("limited decisions = %d want %d", got, want)
	}
}

func TestThrottleError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{gcra.ErrNegativeBurst, "ERR max_burst must not be negative"},
		{gcra.ErrNegativeCount, "ERR count must be positive"},
		{gcra.ErrNegativePeriod, "ERR period must be positive"},
		{gcra.ErrZeroRate, "ERR zero rates are not supported"},
		{gcra.ErrNegativeQuantity, "ERR quantity must not be negative"},
		{gcra.ErrOutOfRange, "ERR rate limit parameters out of range"},
		{fmt.Errorf("wrapped: %w", gcra.ErrZeroRate), "ERR zero rates are not supported"},
	} {
		if got := throttleError(c.err); got.text != c.want || got.kind != errKindCommand {
			t.Errorf("throttleError(%v) = %q (%s) want %q (command)", c.err, got.text, errorKinds[got.kind].name, c.want)
		}
	}
	// Every sentinel gcra returns has its own text; none falls through to
	// the out-of-range default by accident.
	for _, err := range []error{gcra.ErrNegativeBurst, gcra.ErrNegativeCount, gcra.ErrNegativePeriod, gcra.ErrZeroRate, gcra.ErrNegativeQuantity} {
		if throttleError(err) == errOutOfRange {
			t.Errorf("%v maps to the out-of-range text", err)
		}
	}
	if errors.Is(gcra.ErrZeroRate, gcra.ErrOutOfRange) {
		t.Fatal("sentinels must be distinct")
	}
}

// BenchmarkThrottleHandler is one CL.THROTTLE from dispatch to the reply
// bytes, on an existing key, without the network.
func BenchmarkThrottleHandler(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	cmd := argv("CL.THROTTLE", "user:12345", "100", "10", "1")
	tc.do("CL.THROTTLE", "user:12345", "100", "10", "1")
	b.ReportAllocs()
	for b.Loop() {
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
}

// BenchmarkThrottleHandlerRestricted is BenchmarkThrottleHandler for an
// application user allowed CL.THROTTLE on its own prefix: what its ACL
// check costs a decision (the command's bit, the key against the pattern).
func BenchmarkThrottleHandlerRestricted(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	require.Equal(b, "+OK\r\n", tc.do("ACL", "SETUSER", "app", "on", "nopass", "~user:*", "+cl.throttle"))
	require.Equal(b, "+OK\r\n", tc.do("AUTH", "app", "x"))
	cmd := argv("CL.THROTTLE", "user:12345", "100", "10", "1")
	require.Equal(b, testkit.Ints(0, 101, 100, -1, 1), tc.do("CL.THROTTLE", "user:12345", "100", "10", "1"))
	b.ReportAllocs()
	for b.Loop() {
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
}

// BenchmarkThrottleHandlerAllowed is BenchmarkThrottleHandler on a rate
// that allows every call (an emission interval of 1 us, the clock moving 1 us
// a call), so that each one stores its TAT: the path of a decision that
// changes its key, which BenchmarkThrottleHandler's limited key never takes.
func BenchmarkThrottleHandlerAllowed(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	cmd := argv("CL.THROTTLE", "user:12345", "1000000", "1000000", "1")
	b.ReportAllocs()
	for b.Loop() {
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
	require.True(b, strings.HasPrefix(tc.do("CL.THROTTLE", "user:12345", "1000000", "1000000", "1"), "*5\r\n:0\r\n"), "still allowed")
}

// BenchmarkThrottleHandlerAllowedPersisted is BenchmarkThrottleHandlerAllowed
// on a store that records its changes for a persister (storage.Config
// TrackChanges), as a server with a --dir runs: the change log's branch and
// the client tracking's are one test (storage's table.markDirty).
func BenchmarkThrottleHandlerAllowedPersisted(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	srv := New(Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }}, storage.New(storage.Config{TrackChanges: true}))
	conn := newFakeConn()
	require.True(b, srv.acceptFake(conn))
	cmd := argv("CL.THROTTLE", "user:12345", "1000000", "1000000", "1")
	b.ReportAllocs()
	for b.Loop() {
		srv.handle(conn, redconCommand(cmd))
		conn.SetBuffer(nil)
	}
	require.Equal(b, 1, srv.store.PendingChanges(), "one key, recorded once")
}

// BenchmarkThrottleHandlerParallel runs the handler from every goroutine,
// each its own connection, over 10k keys, on the real clock (an injected
// clock shared by the goroutines would be a contended counter itself).
func BenchmarkThrottleHandlerParallel(b *testing.B) {
	srv := New(Config{}, storage.New(storage.Config{}))
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
	}
	var goroutines atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		conn := newFakeConn()
		srv.acceptFake(conn)
		i := int(goroutines.Add(1)) * 4999
		args := argv("CL.THROTTLE", "", "100", "10", "1")
		for pb.Next() {
			i++
			args[1] = keys[i%len(keys)]
			srv.handle(conn, redconCommand(args))
			conn.SetBuffer(nil)
		}
	})
}

// failingPersistence is a disk whose flushes fail.
type failingPersistence struct{ nopPersistence }

func (failingPersistence) Failing() bool { return true }

// In durable mode with a failing disk, every limiter answers a decision
// that would store with MISCONF and stores nothing, and answers those that
// store nothing (limited calls, peeks).
func TestLimitersRefuseChangesWhileTheDiskFails(t *testing.T) {
	tc := newTestClient(t, Config{})
	for _, args := range [][]string{
		{"CL.THROTTLE", "full", "0", "1", "60"},
		{"CL.WINDOW", "win", "1", "60"},
	} {
		tc.do(args...)
	}
	tc.srv.cfg.DurableWrites, tc.srv.cfg.Persistence = true, failingPersistence{}
	tc.srv.gate.Durable, tc.srv.gate.Persistence = true, failingPersistence{}
	m := errReply(errMisconf)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"CL.THROTTLE", "new", "1", "1", "1"}, m},
		{[]string{"GCRA", "new", "1", "1", "1"}, m},
		{[]string{"CL.RESERVE", "new", "1", "1", "1"}, m},
		{[]string{"CL.RESERVE", "new", "1", "1", "1", "MAXWAIT", "1000"}, m},
		{[]string{"CL.WINDOW", "new", "1", "60"}, m},
		{[]string{"CL.WINDOW", "new", "1", "60", "PRECISION", "1"}, m},
		{[]string{"CL.COUNT", "new", "60"}, m},
		{[]string{"EXISTS", "new"}, ":0\r\n"},
		{[]string{"CL.THROTTLE", "full", "0", "1", "60"}, testkit.Ints(1, 1, 0, 60, 60)},
		{[]string{"GCRA", "full", "0", "1", "60"}, testkit.Ints(1, 1, 0, 60, 60)},
		{[]string{"CL.RESERVE", "full", "0", "1", "60"}, testkit.Ints(1, 1, 0, 60000, 60000)},
		{[]string{"CL.RESERVE", "full", "0", "1", "60", "0"}, testkit.Ints(0, 1, 0, 0, 60000)},
		{[]string{"CL.WINDOW", "win", "1", "60"}, testkit.Ints(1, 1, 0, 60, 60)},
		{[]string{"CL.WINDOW", "win", "1", "60", "0"}, testkit.Ints(0, 1, 0, -1, 60)},
	} {
		require.Equal(t, c.want, tc.do(c.args...), "%q", c.args)
	}
}

// Every limiter refuses a key name longer than --max-key-len.
func TestLimitersRefuseLongKeys(t *testing.T) {
	tc := newTestClient(t, Config{Limits: Limits{MaxKeyLen: 4}})
	for _, args := range [][]string{
		{"CL.THROTTLE", "12345", "1", "1", "1"},
		{"GCRA", "12345", "1", "1", "1"},
		{"CL.RESERVE", "12345", "1", "1", "1"},
		{"CL.WINDOW", "12345", "1", "60"},
	} {
		require.Equal(t, "-ERR key too long: 5 bytes, --max-key-len is 4\r\n", tc.do(args...), "%q", args)
	}
	require.Equal(t, ":0\r\n", tc.do("DBSIZE"))
}

// rateMemo answers what gcra.NewRate answers, whichever argument changes from
// one call to the next, refused arguments included, before and after a
// Rate is kept.
func TestRateMemoIsNewRate(t *testing.T) {
	var m rateMemo
	for i, args := range [][4]int64{
		{100, 10, 1, 1}, {100, 10, 1, 1}, {99, 10, 1, 1}, {99, 11, 1, 1}, {99, 11, 2, 1}, {99, 11, 2, 3},
		{99, 11, 2, -1}, {99, 11, 2, 3}, {-1, 10, 1, 1}, {100, 0, 1, 1}, {100, 10, 0, 1},
		{math.MaxInt64, 10, 1, 1}, {100, 10, 1, 1}, {0, 1, math.MaxInt64 / int64(time.Second), 0},
	} {
		want, wantErr := gcra.NewRate(args[0], args[1], args[2], args[3])
		got, err := m.of(args[0], args[1], args[2], args[3])
		if got != want || err != wantErr {
			t.Errorf("step %d: of%v = %+v, %v want %+v, %v", i, args, got, err, want, wantErr)
		}
	}
}
