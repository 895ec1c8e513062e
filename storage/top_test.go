package storage

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/top"
	"github.com/redcell/redcell/window"
)

// CL.TOP's figures from the store: a hot key limited among 50,000 others
// limited once each, through every kind of decision, is first, its count
// within 5%; its allowed decisions are counted; peeks and dry decisions
// are not.
func TestTopFindsTheHotKeyAmongFiftyThousand(t *testing.T) {
	s := New(Config{})
	one := mustRate(t, 0, 1, 3600, 1) // one a hour: the second call is limited
	now := t0
	rng := rand.New(rand.NewPCG(3, 4))
	order := rng.Perm(52_000)
	for _, i := range order {
		key := []byte("user:" + strconv.Itoa(i))
		if i >= 50_000 {
			key = []byte("hot")
		}
		_, _ = s.Throttle(key, one, now)
		_, _ = s.Throttle(key, one, now) // limited
	}
	// The hot key: 2,000 pairs of calls, the first allowed, 3,999 limited.
	got := s.Top(3, now)
	require.Equal(t, "hot", got[0].Key)
	require.InEpsilon(t, 3999, got[0].Limited, 0.05, "%+v", got[0])
	require.Len(t, got, 3)
	require.Less(t, got[1].Limited, got[0].Limited/10)

	// Windows, leases and counts with a limit feed it too (a store of
	// its own: in the one above, a new key inherits the count of the key
	// it displaces, top.Entry.Error).
	s = New(Config{})
	spec, _ := window.NewSpec(1, 60, 1, 0, window.DefaultLogMax)
	lspec, _ := lease.NewSpec(0, 1000)
	cspec, _ := window.NewCountSpec(60, 1)
	cspec.Limit = 1
	for range 5 {
		_, _, _ = s.Window([]byte("w"), spec, now, false)
		_, _, _ = s.Acquire([]byte("l"), lspec, []byte("t"), now, false)
		_, _, _ = s.Count([]byte("c"), cspec, now, false)
		_, _, _ = s.Window([]byte("dry"), spec, now, true)
	}
	byKey := map[string]top.Entry{}
	for _, e := range s.Top(1000, now) {
		byKey[e.Key] = e
	}
	require.Equal(t, int64(4), byKey["w"].Limited)
	require.Equal(t, int64(5), byKey["l"].Limited)
	require.Equal(t, int64(4), byKey["c"].Limited)
	require.NotContains(t, byKey, "dry")
}

// A million distinct limited keys: the sketches' memory is what TopMemory
// states, fixed, and a store of them answers in its bound.
func TestTopMemoryIsBoundedWhateverTheKeys(t *testing.T) {
	s := New(Config{Shards: 4})
	r := mustRate(t, 0, 1, 3600, 1)
	key := make([]byte, 0, 16)
	for i := range 1_000_000 {
		key = strconv.AppendInt(append(key[:0], 'k'), int64(i), 10)
		_, _ = s.Throttle(key, r, t0)
		_, _ = s.Throttle(key, r, t0)
	}
	require.Equal(t, int64(4*top.Size), s.TopMemory())
	require.Len(t, s.Top(1000, t0), 4*top.Capacity, "each shard tracks its capacity")
}

// Keys by kind follow adds, deletions, expiry and FLUSHALL.
func TestKeysByKind(t *testing.T) {
	s := New(Config{Shards: 2})
	r := mustRate(t, 5, 1, 60, 1)
	spec, _ := window.NewSpec(5, 60, 1, 0, window.DefaultLogMax)
	lspec, _ := lease.NewSpec(2, 1000)
	for i := range 3 {
		_, _ = s.Throttle([]byte("t"+strconv.Itoa(i)), r, t0)
	}
	_, _, _ = s.Window([]byte("w"), spec, t0, false)
	_, _, _ = s.Acquire([]byte("l"), lspec, []byte("a"), t0, false)
	require.Equal(t, [3]int{3, 1, 1}, s.KeysByKind())
	require.True(t, s.Delete([]byte("w"), t0))
	_, _ = s.Release([]byte("l"), []byte("a"), t0, false)
	require.Equal(t, [3]int{3, 0, 0}, s.KeysByKind())
	_, _, _ = s.Acquire([]byte("l"), lspec, []byte("a"), t0, false)
	require.Equal(t, 4, s.ExpireSome(t0+sec(3600), 100))
	require.Equal(t, [3]int{0, 0, 0}, s.KeysByKind())
	_, _, _ = s.Window([]byte("w"), spec, t0, false)
	s.Clear()
	require.Equal(t, [3]int{0, 0, 0}, s.KeysByKind())
}
