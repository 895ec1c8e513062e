package client_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
)

// Acquire holds at most limit leases on a key across clients; a lease held
// past its duration stays held (renewed in the background), and Release
// frees its slot at once.
func TestAcquireRenewsWhileHeldAndReleaseFrees(t *testing.T) {
	s := startRedcell(t)
	c := client.New(goRedis(t, s.Addr), client.Options{Timeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	other := client.New(goRedis(t, s.Addr), client.Options{Timeout: time.Second})
	t.Cleanup(func() { _ = other.Close() })

	const lease = 600 * time.Millisecond // renewed every 200 ms: 400 ms of slack for a loaded machine
	a, err := c.Acquire(ctx(t), "db", 2, lease)
	require.NoError(t, err)
	require.True(t, a.Acquired)
	require.Equal(t, int64(1), a.Remaining)
	require.NotEmpty(t, a.Token)
	b, err := other.Acquire(ctx(t), "db", 2, lease)
	require.NoError(t, err)
	require.True(t, b.Acquired)

	refused, err := other.Acquire(ctx(t), "db", 2, lease)
	require.NoError(t, err)
	require.False(t, refused.Acquired)
	require.Positive(t, refused.RetryAfter)
	require.LessOrEqual(t, refused.RetryAfter, lease)
	require.NoError(t, refused.Release(ctx(t)), "releasing a refusal is a no-op")

	// Three lease durations later both are still held: renewed.
	time.Sleep(3 * lease)
	held, err := goRedis(t, s.Addr).Do(ctx(t), "CL.LEASES", "db").Slice()
	require.NoError(t, err)
	require.Len(t, held, 2)
	select {
	case <-a.Lost():
		t.Fatal("a lease renewed was reported lost")
	default:
	}

	require.NoError(t, a.Release(ctx(t)))
	require.NoError(t, a.Release(ctx(t)), "twice is once")
	again, err := other.Acquire(ctx(t), "db", 2, lease)
	require.NoError(t, err)
	require.True(t, again.Acquired, "the released slot is free at once")
	require.NoError(t, again.Release(ctx(t)))
	require.NoError(t, b.Release(ctx(t)))
	n, err := goRedis(t, s.Addr).Exists(ctx(t), "db").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// A lease released by someone else (its token, CL.RELEASE) is found gone
// by the next renewal: Lost is closed.
func TestLeaseLostWhenReleasedElsewhere(t *testing.T) {
	s := startRedcell(t)
	c := client.New(goRedis(t, s.Addr), client.Options{Timeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	l, err := c.Acquire(ctx(t), "db", 1, 60*time.Millisecond)
	require.NoError(t, err)
	require.True(t, l.Acquired)
	require.NoError(t, goRedis(t, s.Addr).Do(ctx(t), "CL.RELEASE", "db", l.Token).Err())
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease released elsewhere was not reported lost")
	}
	require.NoError(t, l.Release(ctx(t)))
}

// While the server does not answer, the fallback decides: FallbackLocal
// holds at most limit/Instances leases a key in the process, and Release
// gives a local lease back.
func TestAcquireFallsBack(t *testing.T) {
	addr := blackHole(t)
	for _, fc := range []struct {
		name     string
		opt      client.Options
		acquired int // of 4 at once, limit 4
	}{
		{"local, 2 instances", client.Options{Instances: 2}, 2},
		{"open", client.Options{Fallback: client.FallbackOpen}, 4},
		{"closed", client.Options{Fallback: client.FallbackClosed}, 0},
	} {
		t.Run(fc.name, func(t *testing.T) {
			rdb := goRedis(t, addr, func(o *redis.Options) { o.DialTimeout, o.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond })
			c := client.New(rdb, fc.opt)
			t.Cleanup(func() { _ = c.Close() })
			var held []*client.Lease
			for range 4 {
				l, err := c.Acquire(ctx(t), "k", 4, time.Second)
				require.NoError(t, err)
				require.True(t, l.Local)
				if l.Acquired {
					held = append(held, l)
				}
			}
			require.Len(t, held, fc.acquired)
			if len(held) > 0 {
				require.NoError(t, held[0].Release(ctx(t)))
				l, err := c.Acquire(ctx(t), "k", 4, time.Second)
				require.NoError(t, err)
				require.True(t, l.Acquired, "a local lease released is free again")
			}
		})
	}
}

func TestAcquireRefusesAnInvalidLease(t *testing.T) {
	c := client.New(goRedis(t, startRedcell(t).Addr), client.Options{})
	t.Cleanup(func() { _ = c.Close() })
	_, err := c.Acquire(ctx(t), "k", -1, time.Second)
	require.ErrorIs(t, err, client.ErrInvalidLease)
	_, err = c.Acquire(ctx(t), "k", 1, time.Microsecond)
	require.ErrorIs(t, err, client.ErrInvalidLease)
}
