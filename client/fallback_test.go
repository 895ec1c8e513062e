package client_test

import (
	"context"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
	"github.com/redcell/redcell/internal/testkit"
)

// blackHole is a server that accepts connections and never answers: a
// server hung, or a network that drops everything.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// While the server does not answer, each fallback answers, marked Local,
// without an error: the local limiter with its share of the limit (half of
// it for two instances), every call allowed, or every call refused. The
// first call waits out the timeout; those after it do not wait at all.
func TestFallbacksAnswerWhileTheServerDoesNot(t *testing.T) {
	addr := blackHole(t)
	limit := client.Limit{Burst: 9, Count: 10, Period: time.Second}
	for _, fc := range []struct {
		name    string
		opt     client.Options
		allowed int // of 8 calls at once
	}{
		{"local, 2 instances", client.Options{Instances: 2}, 5},
		{"local, 1 instance", client.Options{}, 8},
		{"open", client.Options{Fallback: client.FallbackOpen}, 8},
		{"closed", client.Options{Fallback: client.FallbackClosed}, 0},
	} {
		t.Run(fc.name, func(t *testing.T) {
			// go-redis's own timeouts, short: its calls still waiting
			// when the test ends are ended by them.
			rdb := goRedis(t, addr, func(o *redis.Options) { o.DialTimeout, o.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond })
			c := client.New(rdb, fc.opt)
			t.Cleanup(func() { _ = c.Close() })
			allowed := 0
			for i := range 8 {
				start := time.Now()
				d, err := c.Allow(ctx(t), "k", limit)
				took := time.Since(start)
				require.NoError(t, err)
				require.True(t, d.Local)
				if d.Allowed {
					allowed++
				}
				if i == 0 {
					require.GreaterOrEqual(t, took, client.DefaultTimeout, "the first call waits out the timeout")
					require.Less(t, took, client.DefaultTimeout+50*time.Millisecond)
				} else {
					require.Less(t, took, client.DefaultTimeout/2, "the node is known down: no wait for the timeout")
				}
			}
			require.Equal(t, fc.allowed, allowed)
			st := c.Stats()
			require.EqualValues(t, 8, st.Fallbacks)
			require.EqualValues(t, 1, st.ServerCalls)
			require.EqualValues(t, 1, st.Outages)
		})
	}
}

// The server killed (SIGKILL) and started again under load: every call is
// answered, within the timeout and without an error, by the fallback while
// the server is gone, and by the server again once it is back.
func TestTheServerKilledAndRestartedUnderLoad(t *testing.T) {
	p := testkit.Start(t, testkit.Binary(t), nil, "--bind", "127.0.0.1", "--port", "0", "--in-memory")
	rdb := goRedis(t, p.Addr)
	c := newLimiter(t, rdb, client.Options{Timeout: client.DefaultTimeout})
	limit := client.Limit{Burst: 99, Count: 1000, Period: time.Second}

	type call struct {
		at, took time.Duration
		local    bool
	}
	var mu sync.Mutex
	var calls []call
	var errs []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				d, err := c.Allow(context.Background(), "w"+strconv.Itoa(w)+":"+strconv.Itoa(i%50), limit)
				took := time.Since(t0)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				calls = append(calls, call{at: t0.Sub(start), took: took, local: d.Local})
				mu.Unlock()
			}
		}()
	}
	count := func(local bool, after time.Duration) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range calls {
			if c.local == local && c.at > after {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return count(false, 0) > 1000 }, 10*time.Second, time.Millisecond)
	killed := time.Since(start)
	require.Error(t, p.Stop(syscall.SIGKILL))
	require.Eventually(t, func() bool { return count(true, killed) > 1000 }, 10*time.Second, time.Millisecond,
		"the fallback answers")
	restarted := time.Since(start)
	p.Restart()
	require.Eventually(t, func() bool { return count(false, restarted) > 1000 }, 10*time.Second, time.Millisecond,
		"back to the server")
	close(stop)
	wg.Wait()

	require.Empty(t, errs, "no call failed")
	var tooks []time.Duration
	for _, c := range calls {
		tooks = append(tooks, c.took)
	}
	sort.Slice(tooks, func(i, j int) bool { return tooks[i] < tooks[j] })
	p99, p999, worst := tooks[len(tooks)*99/100], tooks[len(tooks)*999/1000], tooks[len(tooks)-1]
	st := c.Stats()
	t.Logf("%d calls: %d by the server before the kill, %d by the fallback, %d by the server after the restart; p99 %v, p99.9 %v, slowest %v; %d outages",
		len(calls), count(false, 0)-count(false, restarted), count(true, 0), count(false, restarted), p99, p999, worst, st.Outages)
	// The slowest call waited out the timeout, and whatever else the
	// machine's two cores were doing then: the server starting again, for
	// one, and four callers.
	slack := 15 * time.Millisecond
	if raceEnabled {
		slack = 150 * time.Millisecond
	}
	require.Less(t, p999, client.DefaultTimeout+slack, "answered within the timeout")
	require.Less(t, worst, client.DefaultTimeout+10*slack, "every call answered, the timeout and a busy machine's scheduling aside")
}
