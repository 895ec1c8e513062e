package storage

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/window"
)

// recorder is an Observer that keeps what it is told: each changed key (a
// copy) and "*" for a Clear.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) Changed(key []byte) {
	r.mu.Lock()
	r.seen = append(r.seen, string(key))
	r.mu.Unlock()
}

func (r *recorder) Cleared() {
	r.mu.Lock()
	r.seen = append(r.seen, "*")
	r.mu.Unlock()
}

// take returns what was seen since the last call.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// Every way a key's state changes is seen, once per change, whatever makes
// it; what changes nothing (a limited decision, a peek, a read of a live
// key) is not.
func TestObserverSeesEveryChange(t *testing.T) {
	s := New(Config{Shards: 4})
	var r recorder
	s.Observe(&r)
	k := []byte("k")
	limit := mustRate(t, 0, 1, 60, 1)

	_, err := s.Throttle(k, limit, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"k"}, r.take(), "a new key")
	res, err := s.Throttle(k, limit, t0+sec(1))
	require.NoError(t, err)
	require.True(t, res.Limited)
	_, err = s.Throttle(k, mustRate(t, 0, 1, 60, 0), t0+sec(1))
	require.NoError(t, err)
	_, _, ok := s.Get(k, t0+sec(1))
	require.True(t, ok)
	require.Empty(t, r.take(), "a limited call, a peek and a read change nothing")

	_, err = s.Throttle(k, limit, t0+sec(60))
	require.NoError(t, err)
	require.Equal(t, []string{"k"}, r.take(), "an allowed call on an existing key")
	_, _, err = s.Reserve(k, limit, t0+sec(120), time.Minute, false)
	require.NoError(t, err)
	require.Equal(t, []string{"k"}, r.take(), "a reservation")

	spec, err := window.NewSpec(5, 10, 1, 0, 100)
	require.NoError(t, err)
	_, _, err = s.Window([]byte("w"), spec, t0, false)
	require.NoError(t, err)
	cspec, err := window.NewCountSpec(10, 1)
	require.NoError(t, err)
	_, _, err = s.Count([]byte("c"), cspec, t0, false)
	require.NoError(t, err)
	require.Equal(t, []string{"w", "c"}, r.take(), "a window and a count")

	require.True(t, s.Delete([]byte("w"), t0))
	require.False(t, s.Delete([]byte("absent"), t0))
	require.Equal(t, []string{"w"}, r.take(), "a deletion, of a key that was there")

	require.NoError(t, s.Apply([]byte("a"), KindTAT, t0+sec(5), nil))
	require.Equal(t, []string{"a"}, r.take(), "a state applied (replication, an import)")

	_, _, ok = s.Get([]byte("a"), t0+sec(5))
	require.False(t, ok)
	require.Equal(t, []string{"a"}, r.take(), "a key found expired")
	require.Equal(t, 2, s.ExpireSome(t0+sec(300), 100), "k's TAT was t0+180s, c's window ended at t0+10s")
	require.ElementsMatch(t, []string{"k", "c"}, r.take(), "keys swept")

	s.Clear()
	require.Equal(t, []string{"*"}, r.take(), "Clear: once, not a key at a time")
	tx := s.Lock(nil, true)
	tx.Clear()
	tx.Unlock()
	require.Equal(t, []string{"*"}, r.take(), "a transaction's Clear")

	s.Observe(nil)
	_, err = s.Throttle(k, limit, t0)
	require.NoError(t, err)
	s.Clear()
	require.Empty(t, r.take(), "observing stopped")
}

// An eviction, and a slot dropped when it moves away, tell the observer of
// each key they delete.
func TestObserverSeesEvictionsAndSlotsDropped(t *testing.T) {
	s := New(Config{Shards: 1, MaxMemory: 1, Eviction: VolatileTTL})
	var r recorder
	s.Observe(&r)
	_, err := s.Throttle([]byte("old"), mustRate(t, 0, 1, 10, 1), t0)
	require.NoError(t, err)
	s.MeasureMemory()
	_, err = s.Throttle([]byte("new"), mustRate(t, 0, 1, 60, 1), t0)
	require.NoError(t, err)
	require.Equal(t, []string{"old", "old", "new"}, r.take(), "old written, evicted; new written")

	s = New(Config{Shards: 8, BySlot: true})
	s.Observe(&r)
	for _, k := range []string{"{a}1", "{a}2", "{b}1"} {
		require.NoError(t, s.Apply([]byte(k), KindTAT, t0+sec(5), nil))
	}
	r.take()
	require.Equal(t, 2, s.DeleteSlot(cluster.Slot([]byte("a"))))
	require.ElementsMatch(t, []string{"{a}1", "{a}2"}, r.take())
}
