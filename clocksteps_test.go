package main

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"redcell/clock"
	"redcell/config"
	"redcell/daemon"
)

// runWithWall runs the server in-process on a wall clock shifted by *shift,
// which the test may change while it runs, and returns a client and the
// function that stops it (with the final save).
func runWithWall(t *testing.T, dir string, shift *atomic.Int64) (*redis.Client, func()) {
	t.Helper()
	clk := clock.WithWall(func() time.Time { return time.Now().Add(time.Duration(shift.Load())) })
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Hour, DiskReserve: 1 << 20},
			slog.New(slog.DiscardHandler), daemon.Options{Clock: clk, Ready: ready})
	}()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr.String(), Protocol: 2})
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = rdb.Close()
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return rdb, stop
}

// The wall clock stepping back or forward an hour while the server runs (NTP,
// a VM resumed) moves no decision: a key limited stays limited for the time
// its rate says, and a fresh key starts full.
func TestWallClockStepsMoveNoDecision(t *testing.T) {
	var shift atomic.Int64
	rdb, _ := runWithWall(t, t.TempDir(), &shift)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		_, err := throttle(ctx, rdb, "k", 4, 1, 60)
		require.NoError(t, err)
	}
	r, err := throttle(ctx, rdb, "k", 4, 1, 60)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 5, 0, 60, 300}, r)

	shift.Store(int64(-time.Hour)) // stepped back: before, every live key was limited for an hour more
	r, err = throttle(ctx, rdb, "k", 4, 1, 60)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 5, 0, 60, 300}, r, "still limited for a minute, not an hour")
	r, err = throttle(ctx, rdb, "fresh", 4, 1, 60)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 60}, r)

	shift.Store(int64(time.Hour)) // stepped forward: before, every bucket refilled at once
	r, err = throttle(ctx, rdb, "k", 4, 1, 60)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 5, 0, 60, 300}, r, "no refill")
}

// A server that ran with its wall clock an hour fast, corrected while it ran
// (NTP), saves wall-clock instants: after a restart a key used once, one
// action an hour, is limited for the rest of that hour, not two.
func TestAClockCorrectedWhileRunningSavesTrueInstants(t *testing.T) {
	dir := t.TempDir()
	var shift atomic.Int64
	shift.Store(int64(time.Hour))
	rdb, stop := runWithWall(t, dir, &shift)
	ctx := context.Background()
	r, err := throttle(ctx, rdb, "once", 0, 1, 3600)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 0, -1, 3600}, r)
	shift.Store(0) // NTP puts the wall clock right
	stop()

	var right atomic.Int64
	rdb, _ = runWithWall(t, dir, &right)
	pttl, err := rdb.PTTL(ctx, "once").Result()
	require.NoError(t, err)
	require.Greater(t, pttl, 3590*time.Second)
	require.LessOrEqual(t, pttl, 3600*time.Second, "the TAT was saved as a wall-clock instant: an hour away, not two")
}

// A start with the wall clock 48 hours fast finds every key stale: it loads
// none, and deletes none from disk, so that the next start, on a clock put
// right, has every limit back, exactly.
func TestAStartWithTheClock48HoursFastDeletesNoLimit(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "--dir", dir, "--flush-interval", "1h")
	keys := makeKeys(t, c.client(t), 300)
	before := tats(t, c.client(t), keys)
	c.stop(t, syscall.SIGTERM)

	c = startChildEnv(t, []string{"REDCELL_TEST_WALL_SHIFT=48h"}, "--dir", dir, "--flush-interval", "1h")
	require.Contains(t, c.log(), "keys=0 stale_kept=300")
	require.Empty(t, tats(t, c.client(t), keys), "every key looks expired on the fast clock")
	c.stop(t, syscall.SIGTERM)

	c = startChild(t, "--dir", dir)
	require.Contains(t, c.log(), "keys=300 stale_kept=0")
	require.Equal(t, before, tats(t, c.client(t), keys))
}
