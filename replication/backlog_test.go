package replication

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// stream is n bytes of a stream whose every byte tells its offset.
func stream(from, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((from + i) % 251)
	}
	return p
}

// A hold keeps the bytes its link has yet to read beyond the backlog's
// size, up to the limit; a hold the limit cannot keep is lost, and once no
// hold needs more the ring goes back to its size, keeping at least size
// bytes for +CONTINUE.
func TestBacklogHoldsWhatALinkHasYetToRead(t *testing.T) {
	b := newBacklog(100, 1000)
	b.append(nil)
	lostBehind := make(chan int64, 1)
	slow := b.hold(0, func(behind int64) { lostBehind <- behind })
	for off := 0; off < 900; off += 30 {
		b.append(stream(off, 30))
	}
	first, end := b.offsets()
	require.Equal(t, int64(0), first, "nothing the hold needs was overwritten")
	require.Equal(t, int64(900), end)
	got := make([]byte, 2000)
	n, _, ok, _ := b.read(slow, got)
	require.True(t, ok)
	require.Equal(t, stream(0, 900), got[:n])

	// Caught up, the hold needs nothing: the ring shrinks back to 100
	// and keeps the last 100 bytes.
	b.append(stream(900, 10))
	require.Len(t, b.buf, 100)
	first, end = b.offsets()
	require.Equal(t, int64(810), first)
	require.Equal(t, int64(910), end)
	n, _, ok, _ = b.read(slow, got)
	require.True(t, ok)
	require.Equal(t, stream(900, 10), got[:n])
	late := b.hold(810, nil)
	n, _, ok, _ = b.read(late, got)
	require.True(t, ok)
	require.Equal(t, stream(810, 100), got[:n])

	// A link that falls more than the limit behind is lost; the one that
	// keeps up is not.
	b.append(nil)
	for off := 910; off < 2000; off += 10 {
		b.append(stream(off, 10))
		n, _, ok, _ = b.read(late, got)
		require.True(t, ok)
		require.Equal(t, stream(off, 10), got[:n])
	}
	n, _, ok, behind := b.read(slow, got)
	require.False(t, ok)
	require.Zero(t, n)
	require.Equal(t, int64(2000-910), behind)
	require.Equal(t, int64(1010), <-lostBehind, "told when it was lost, 1010 bytes behind")
	b.release(slow)
	b.release(late)
	require.Len(t, b.holds, 0)
}

// Without holds the backlog is a ring of its size: an old offset is gone,
// and one append bigger than the ring keeps its end.
func TestBacklogWithoutHoldsKeepsItsSize(t *testing.T) {
	b := newBacklog(64, 1<<20)
	b.append(stream(0, 50))
	b.append(stream(50, 50))
	first, end := b.offsets()
	require.Equal(t, int64(36), first)
	require.Equal(t, int64(100), end)
	_, _, ok, _ := b.read(b.hold(35, nil), make([]byte, 10))
	require.False(t, ok)
	b.append(stream(100, 200))
	got := make([]byte, 100)
	n, _, ok, _ := b.read(b.hold(236, nil), got)
	require.True(t, ok)
	require.True(t, bytes.Equal(stream(236, 64), got[:n]))
	require.Len(t, b.buf, 64)
	// A hold taken on an offset no longer held is lost from the start.
	h := b.hold(10, nil)
	_, _, ok, _ = b.read(h, got)
	require.False(t, ok)
}

// reset (a replica's full resynchronization) loses its own replicas' holds.
func TestBacklogResetLosesTheHolds(t *testing.T) {
	b := newBacklog(64, 1024)
	b.append(stream(0, 40))
	h := b.hold(20, nil)
	b.reset(5000)
	b.append(stream(5000, 10))
	_, _, ok, _ := b.read(h, make([]byte, 64))
	require.False(t, ok)
}
