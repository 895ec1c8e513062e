package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
)

// A key's leases go to disk through the flusher and come back at the next
// open, each token with its expiry: a restart keeps them. Opened on a wall
// clock an hour behind the save, every lease's expiry moves back with the
// key's, as a window's instants do.
func TestLeasesSurviveAReopen(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	s := New(Config{Shards: 2, TrackChanges: true})
	f := NewFlusher(s, p, FlusherOptions{Now: fixedClock})
	spec, err := lease.NewSpec(2, 60000)
	require.NoError(t, err)
	for i, tok := range []string{"a", "b"} {
		res, stored, err := s.Acquire([]byte("k"), spec, []byte(tok), t0+sec(float64(i)), false)
		require.NoError(t, err)
		require.True(t, stored)
		require.False(t, res.Limited)
	}
	require.NoError(t, f.Flush())
	require.NoError(t, p.Close())

	for _, c := range []struct {
		name   string
		at     gcra.Instant
		offset time.Duration
	}{
		{"same clock", t0 + sec(5), 0},
		{"an hour behind", t0 - sec(3600) + sec(5), -3595 * time.Second},
	} {
		s2 := New(Config{Shards: 2})
		p, stats, err := OpenPebble(dir, noReserve, c.at, s2.Restore)
		require.NoError(t, err, c.name)
		require.Equal(t, 1, stats.Loaded, c.name)
		held, err := s2.Leases([]byte("k"), c.at, nil)
		require.NoError(t, err)
		base := t0 + gcra.Instant(c.offset)
		require.Equal(t, []lease.Held{
			{Token: []byte("a"), Expiry: base + sec(60)},
			{Token: []byte("b"), Expiry: base + sec(61)},
		}, held, c.name)
		_, kind, ok := s2.Get([]byte("k"), c.at)
		require.True(t, ok)
		require.Equal(t, KindLeases, kind)
		// Full: a third waits for the earliest, a holder renews.
		res, _, err := s2.Acquire([]byte("k"), spec, []byte("c"), c.at, false)
		require.NoError(t, err)
		require.Equal(t, base+sec(60)-c.at, gcra.Instant(res.RetryAfter), c.name)
		require.NoError(t, p.Close())
	}
}

// The last lease released deletes the key, and the deletion reaches the
// disk: a reopen finds nothing.
func TestLastLeaseReleasedDeletesTheKeyOnDisk(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	s := New(Config{Shards: 1, TrackChanges: true})
	f := NewFlusher(s, p, FlusherOptions{Now: fixedClock})
	spec, _ := lease.NewSpec(1, 60000)
	_, _, err := s.Acquire([]byte("k"), spec, []byte("a"), t0, false)
	require.NoError(t, err)
	require.NoError(t, f.Flush())
	held, err := s.Release([]byte("k"), []byte("a"), t0, false)
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, 0, s.Len())
	require.NoError(t, f.Flush())
	require.NoError(t, p.Close())
	p, got := openPebble(t, dir)
	defer p.Close()
	require.Empty(t, got)
}
