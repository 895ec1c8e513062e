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

	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/daemon"
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
	require.NoError(t, c.Stop(syscall.SIGTERM))

	c = startChildEnv(t, []string{"REDCELLTEST_WALL_SHIFT=48h"}, "--dir", dir, "--flush-interval", "1h")
	require.Contains(t, c.Log(), "keys=0 stale_kept=300")
	require.Empty(t, tats(t, c.client(t), keys), "every key looks expired on the fast clock")
	require.NoError(t, c.Stop(syscall.SIGTERM))

	c = startChild(t, "--dir", dir)
	require.Contains(t, c.Log(), "keys=300 stale_kept=0")
	require.Equal(t, before, tats(t, c.client(t), keys))
}

// pttl is key's PTTL, which must be within (want - 10 s, want]: the time a
// restart takes aside, exactly want.
func requirePTTL(t *testing.T, rdb *redis.Client, key string, want time.Duration, msg string) {
	t.Helper()
	pttl, err := rdb.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	require.Greater(t, pttl, want-10*time.Second, msg)
	require.LessOrEqual(t, pttl, want, msg)
}

// The wall clock stepped back an hour while the server was down: a key
// limited for ten minutes at the save is limited for those ten minutes after
// the start, not for an hour and ten (the store's last save is an hour ahead
// of the clock, and every instant is moved back by the difference).
func TestAClockSteppedBackAcrossARestartLimitsNoLonger(t *testing.T) {
	dir := t.TempDir()
	var right atomic.Int64
	rdb, stop := runWithWall(t, dir, &right)
	ctx := context.Background()
	r, err := throttle(ctx, rdb, "k", 0, 1, 600)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 0, -1, 600}, r)
	stop()

	var back atomic.Int64
	back.Store(int64(-time.Hour))
	rdb, _ = runWithWall(t, dir, &back)
	requirePTTL(t, rdb, "k", 600*time.Second, "ten minutes, not an hour and ten")
	r, err = throttle(ctx, rdb, "k", 0, 1, 600)
	require.NoError(t, err)
	require.Equal(t, int64(1), r[0], "still limited")
	require.LessOrEqual(t, r[3], int64(600), "retry_after within the ten minutes")
	r, err = throttle(ctx, rdb, "fresh", 0, 1, 600)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 0, -1, 600}, r)
}

// A server that ran with its wall clock 48 hours fast (and decided on it)
// restarts on a clock put right: its keys are limited for what they were at
// the save, not 48 hours more.
func TestAClockFast48HoursThenCorrectedLimitsNoLonger(t *testing.T) {
	dir := t.TempDir()
	var fast atomic.Int64
	fast.Store(int64(48 * time.Hour))
	rdb, stop := runWithWall(t, dir, &fast)
	ctx := context.Background()
	r, err := throttle(ctx, rdb, "k", 0, 1, 600)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 0, -1, 600}, r)
	stop()

	var right atomic.Int64
	rdb, _ = runWithWall(t, dir, &right)
	requirePTTL(t, rdb, "k", 600*time.Second, "ten minutes, not 48 hours and ten")
}

// The wall clock stepped forward an hour while the server was down: that
// cannot be told from an hour of downtime, so nothing is corrected. A key
// limited for ten minutes has expired and one limited for two hours has one
// left; neither is limited longer than it was. Put right before anything
// was decided, the clock finds both limits as they were saved (the ten-minute
// key was kept on disk, not deleted).
func TestAClockSteppedForwardAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	var right atomic.Int64
	rdb, stop := runWithWall(t, dir, &right)
	ctx := context.Background()
	_, err := throttle(ctx, rdb, "short", 0, 1, 600)
	require.NoError(t, err)
	_, err = throttle(ctx, rdb, "long", 0, 1, 7200)
	require.NoError(t, err)
	stop()

	var ahead atomic.Int64
	ahead.Store(int64(time.Hour))
	rdb, stop = runWithWall(t, dir, &ahead)
	n, err := rdb.Exists(ctx, "short").Result()
	require.NoError(t, err)
	require.Zero(t, n, "ten minutes have passed on this clock")
	requirePTTL(t, rdb, "long", time.Hour, "two hours less the hour the clock moved")
	stop()

	rdb, _ = runWithWall(t, dir, &right)
	requirePTTL(t, rdb, "short", 600*time.Second, "the clock put right: the ten-minute limit is back")
	requirePTTL(t, rdb, "long", 2*time.Hour, "and the two-hour one whole")
}
