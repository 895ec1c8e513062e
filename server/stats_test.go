package server

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/resp"
	"github.com/redcell/redcell/storage"
)

// keyWasLive infers from a decision whether the key was live; check it
// against the store itself over random traffic on a few keys.
func TestKeyWasLiveAgreesWithTheStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	store := storage.New(storage.Config{Shards: 1})
	now := gcra.InstantOf(t0)
	hits, misses := 0, 0
	for i := range 20000 {
		key := []byte{'k', byte('0' + rng.IntN(4))}
		r, err := gcra.NewRate(rng.Int64N(5), 1+rng.Int64N(10), 1+rng.Int64N(3), rng.Int64N(8))
		require.NoError(t, err)
		_, _, live := store.Get(key, now)
		res, err := store.Throttle(key, r, now)
		require.NoError(t, err)
		if got := keyWasLive(res.Limited, res.ResetAfter, r.Increment); got != live {
			t.Fatalf("step %d: key %s rate %+v result %+v: keyWasLive = %v, the store had it live = %v", i, key, r, res, got, live)
		}
		if live {
			hits++
		} else {
			misses++
		}
		now += gcra.Instant(rng.Int64N(int64(700 * time.Millisecond)))
	}
	require.Greater(t, hits, 1000, "the traffic exercises both cases")
	require.Greater(t, misses, 1000, "the traffic exercises both cases")
}

// Error replies are counted by the kind they carry, and input the reader
// refuses as a protocol error when its connection ends.
func TestErrorsCountedByKind(t *testing.T) {
	for i, c := range []struct {
		pass string
		args [][]string
		want errKind
	}{
		{"", [][]string{{"FOO", "a"}}, errKindUnknownCommand},
		{"", [][]string{{"CLIENT", "FROB"}}, errKindUnknownCommand},
		{"", [][]string{{"CLIENT", "PAUSE", "1", "2", "3"}}, errKindUnknownCommand},
		{"", [][]string{{"GET"}}, errKindWrongArity},
		{"", [][]string{{"CLIENT", "ID", "x"}}, errKindWrongArity},
		{"", [][]string{{"CL.THROTTLE", "k", "-1", "1", "1"}}, errKindCommand},
		{"", [][]string{{"HELLO", "x"}}, errKindCommand},
		{"pw", [][]string{{"GET", "k"}}, errKindNoAuth},
		{"pw", [][]string{{"AUTH", "nope"}}, errKindWrongPass},
		{"", [][]string{{"CL.WINDOW", "w", "1", "10"}, {"GET", "w"}}, errKindWrongType},
		{"", [][]string{{"HELLO", "4"}}, errKindNoProto},
		{"", [][]string{{"MULTI"}, {"GET"}, {"EXEC"}}, errKindExecAbort},
	} {
		tc := newTestClient(t, Config{RequirePass: c.pass})
		for _, args := range c.args {
			tc.do(args...)
		}
		got := tc.srv.counters().errors
		var want [numErrorKinds]int64
		want[c.want] = 1
		if c.want == errKindExecAbort {
			want[errKindWrongArity] = 1 // GET inside MULTI
		}
		if got != want {
			t.Errorf("case %d %q: errors by kind %v want %v", i, c.args, got, want)
		}
	}
	tc := newTestClient(t, Config{})
	tc.srv.connectionEnded(tc.c, resp.ErrBulkLength)
	require.Equal(t, int64(1), tc.srv.counters().errors[errKindProtocol])
}

// A duration lands in the first bucket whose bound it does not exceed, as
// Prometheus's "le" says; quantiles interpolate inside a bucket.
func TestHistogram(t *testing.T) {
	var h histogram
	for _, d := range []time.Duration{0, 250 * time.Nanosecond, 251 * time.Nanosecond, time.Microsecond, 2 * time.Second} {
		h.observe(d)
	}
	hs := h.snapshot()
	require.Equal(t, int64(5), hs.count)
	require.Equal(t, 2*time.Second+1501*time.Nanosecond, hs.sum)
	require.Equal(t, int64(2), hs.counts[0], "0 and 250ns: le=250ns")
	require.Equal(t, int64(1), hs.counts[1], "251ns: le=500ns")
	require.Equal(t, int64(1), hs.counts[2], "1us: le=1us")
	require.Equal(t, int64(1), hs.counts[len(latencyBounds)], "2s: +Inf")

	var even histogram
	for range 100 {
		even.observe(time.Microsecond) // all in (500ns, 1us]
	}
	es := even.snapshot()
	require.Equal(t, 750*time.Nanosecond, es.quantile(0.5), "halfway through (500ns, 1us]")
	require.Equal(t, 995*time.Nanosecond, es.quantile(0.99))
	require.Equal(t, time.Duration(0), histogramSnapshot{}.quantile(0.5), "empty")
	require.Equal(t, time.Second, hs.quantile(0.999), "in +Inf: the last bound")
}

func TestOpsSampler(t *testing.T) {
	var o opsSampler
	require.Equal(t, int64(0), o.perSecond())
	at := t0
	o.add(0, at)
	for i := 1; i <= 16; i++ {
		at = at.Add(opsSampleEvery)
		o.add(int64(i)*500, at) // 500 commands every 100ms
	}
	require.Equal(t, int64(5000), o.perSecond())
	for i := 0; i < 8; i++ {
		at = at.Add(opsSampleEvery)
		o.add(16*500, at) // idle
	}
	require.Equal(t, int64(2500), o.perSecond(), "half the window idle")
}

// Commandstats, errorstats, keyspace hits and total_commands_processed count
// what the commands did, as Redis counts them: a refused command is a
// rejected call and not a processed one; one that replies with an error is a
// failed call.
func TestCommandAccounting(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	for _, step := range [][]string{
		{"PING"},                                     // NOAUTH: rejected
		{"AUTH", "pw"},                               // auth ok
		{"CL.THROTTLE", "k", "4", "1", "1"},          // allowed, miss
		{"CL.THROTTLE", "k", "4", "1", "1", "0"},     // allowed (peek), hit
		{"CL.THROTTLE", "k", "0", "1", "1"},          // limited, hit
		{"CL.THROTTLE", "k", "-1", "1", "1"},         // failed
		{"CL.THROTTLE", "k"},                         // rejected (arity)
		{"CL.THROTTLE", "fresh", "0", "1", "1", "5"}, // limited, miss
		{"GET", "k"},                                 // hit
		{"TTL", "nope"},                              // miss
		{"EXISTS", "k", "nope"},                      // hit + miss
		{"NOSUCH"},                                   // unknown: counted nowhere but errors
	} {
		tc.do(step...)
	}
	c := tc.srv.counters()
	require.Equal(t, int64(2), c.allowed)
	require.Equal(t, int64(2), c.limited)
	require.Equal(t, int64(4), c.hits)
	require.Equal(t, int64(4), c.misses)
	require.Equal(t, int64(9), c.commandsProcessed, "AUTH, 5 CL.THROTTLE that ran, GET, TTL, EXISTS")
	require.Equal(t, int64(4), c.errorReplies)

	cmdstats := tc.do("INFO", "commandstats")
	require.Equal(t, testkit.Bulk("# Commandstats\r\n"+
		"cmdstat_auth:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"+
		"cmdstat_cl.throttle:calls=5,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=1\r\n"+
		"cmdstat_exists:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"+
		"cmdstat_get:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"+
		"cmdstat_ping:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n"+
		"cmdstat_ttl:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"), cmdstats,
		"an injected clock measures no durations")
	require.Equal(t, testkit.Bulk("# Errorstats\r\nerrorstat_ERR:count=3\r\nerrorstat_NOAUTH:count=1\r\n"), tc.do("INFO", "errorstats"))
	stats := tc.do("INFO", "stats")
	// The two INFOs before this one count; as in Redis, a command counts
	// once it has run, so this INFO does not see itself.
	for _, line := range []string{"total_commands_processed:11", "keyspace_hits:4", "keyspace_misses:4",
		"total_error_replies:4", "throttle_allowed:2", "throttle_limited:2", "total_connections_received:1"} {
		require.Contains(t, stats, "\r\n"+line+"\r\n")
	}
}

// On the real clock every command's duration is measured: the time from
// dispatch to the buffered reply.
func TestDurationsOnTheRealClock(t *testing.T) {
	srv := New(Config{}, storage.New(storage.Config{}))
	conn := newFakeConn()
	require.True(t, srv.acceptFake(conn))
	before := time.Now()
	for range 10 {
		srv.handle(conn, redconCommand(argv("CL.THROTTLE", "k", "100", "10", "1")))
	}
	elapsed := time.Since(before)
	hs := srv.commands.byName["cl.throttle"].stats.latencySnapshot()
	require.Equal(t, int64(10), hs.count)
	require.Greater(t, hs.sum, time.Duration(0))
	require.LessOrEqual(t, hs.sum, elapsed, "the measured durations fit inside the loop")
	require.True(t, strings.HasPrefix(srv.info(srv.store, []string{"commandstats"}, time.Now()), "# Commandstats\r\ncmdstat_cl.throttle:calls=10,usec="))
}

// The instrumented dispatcher still allocates nothing for a CL.THROTTLE on
// an existing key, on the real clock.
func TestThrottleAllocatesNothing(t *testing.T) {
	srv := New(Config{}, storage.New(storage.Config{}))
	conn := newFakeConn()
	require.True(t, srv.acceptFake(conn))
	cmd := redconCommand(argv("CL.THROTTLE", "user:1", "100", "10", "1"))
	srv.handle(conn, cmd)
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(1000, func() {
		conn.SetBuffer(buf[:0])
		srv.handle(conn, cmd)
	})
	require.Zero(t, allocs)
}

// BenchmarkThrottleRealClock is BenchmarkThrottleHandler on the real clock,
// so that it includes what instrumentation costs there: the clock read for
// the latency histogram.
func BenchmarkThrottleRealClock(b *testing.B) {
	srv := New(Config{}, storage.New(storage.Config{}))
	conn := newFakeConn()
	srv.acceptFake(conn)
	cmd := redconCommand(argv("CL.THROTTLE", "user:12345", "100", "10", "1"))
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		conn.SetBuffer(buf[:0])
		srv.handle(conn, cmd)
	}
}

// BenchmarkThrottleRealClockParallel runs it from every goroutine, each its
// own connection, over 10k keys: the shared counters are contended here.
func BenchmarkThrottleRealClockParallel(b *testing.B) {
	srv := New(Config{}, storage.New(storage.Config{}))
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = []byte("user:" + itoa(int64(i)))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		conn := newFakeConn()
		srv.acceptFake(conn)
		args := argv("CL.THROTTLE", "", "100", "10", "1")
		buf := make([]byte, 0, 256)
		i := rand.IntN(len(keys))
		for pb.Next() {
			i++
			args[1] = keys[i%len(keys)]
			conn.SetBuffer(buf[:0])
			srv.handle(conn, redconCommand(args))
		}
	})
}
