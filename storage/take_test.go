package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// takeWorld drives a one-shard store with random decisions, deletions and
// expiry, and remembers every state each key has had (0: absent) since
// mark, to judge what a take reports.
type takeWorld struct {
	tb      testing.TB
	s       *Store
	rng     *rand.Rand
	keys    []string
	r       gcra.Rate
	now     gcra.Instant
	history map[string][]gcra.Instant
}

func newTakeWorld(tb testing.TB, seed uint64) *takeWorld {
	return &takeWorld{tb: tb, s: New(Config{Shards: 1, TrackChanges: true}), rng: rand.New(rand.NewPCG(seed, 7)),
		keys: modelKeys(60), r: mustRate(tb, 3, 1, 1, 1), now: t0, history: map[string][]gcra.Instant{}}
}

// state is key's TAT in the store, expired or not, or 0.
func (w *takeWorld) state(key string) gcra.Instant {
	sh := &w.s.shards[0]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, _, _ := sh.t.get([]byte(key))
	return tat
}

// mark starts the histories afresh from the states now.
func (w *takeWorld) mark() {
	for _, k := range w.keys {
		w.history[k] = []gcra.Instant{w.state(k)}
	}
}

// op runs one random operation and records the states it made.
func (w *takeWorld) op() {
	k := []byte(w.keys[w.rng.IntN(len(w.keys))])
	switch w.rng.IntN(8) {
	case 0, 1, 2, 3, 4:
		_, err := w.s.Throttle(k, w.r, w.now)
		require.NoError(w.tb, err)
	case 5:
		w.s.Delete(k, w.now)
	case 6:
		w.now += gcra.Instant(w.rng.IntN(int(sec(0.5))))
	case 7:
		w.s.ExpireSome(w.now, 1+w.rng.IntN(8))
	}
	for _, k := range w.keys {
		h := w.history[k]
		if st := w.state(k); st != h[len(h)-1] {
			w.history[k] = append(h, st)
		}
	}
}

// A take in steps, with decisions, deletions and expiry moving and removing
// entries between its steps, reports every change made before it began, each
// key with a state it had during the take (so a durable-mode flush never
// acknowledges less than what came before it); nothing it reports is a state
// the key never had; and the take after it leaves the disk as the store.
func TestTakeInStepsReportsEveryEarlierChange(t *testing.T) {
	defer func(n int) { takeChunk = n }(takeChunk)
	defer func() { betweenTakeSteps = nil }()
	takeChunk = 3
	for seed := range uint64(30) {
		w := newTakeWorld(t, seed)
		disk := map[string]gcra.Instant{}
		apply := func(changes []Change) {
			for _, c := range changes {
				if c.TAT == 0 {
					delete(disk, c.Key)
				} else {
					disk[c.Key] = c.TAT
				}
			}
		}
		w.mark()
		for range 200 {
			w.op()
		}
		apply(w.s.TakeShardChanges(0, nil))

		// Changes before the take; then the take, the store changing
		// between its steps.
		w.mark()
		for range 100 {
			w.op()
		}
		before := map[string]gcra.Instant{}
		var changed []string
		for _, k := range w.keys {
			if h := w.history[k]; len(h) > 1 {
				changed = append(changed, k)
			}
			before[k] = w.state(k)
		}
		w.mark()
		steps := 0
		betweenTakeSteps = func() {
			steps++
			for range 1 + w.rng.IntN(3) {
				w.op()
			}
		}
		got := w.s.TakeShardChanges(0, nil)
		betweenTakeSteps = nil
		require.Positive(t, steps, "seed %d: the take ran in steps", seed)
		apply(got)
		for _, c := range got {
			require.Contains(t, w.history[c.Key], c.TAT, "seed %d: %q reported with a state it did not have during the take", seed, c.Key)
		}
		for _, k := range changed {
			require.Contains(t, w.history[k], disk[k], "seed %d: %q changed before the take (to %d), on disk as %d, its states during the take %v",
				seed, k, before[k], disk[k], w.history[k])
		}

		apply(w.s.TakeShardChanges(0, nil))
		for _, k := range w.keys {
			require.Equal(t, w.state(k), disk[k], "seed %d: %q after the next take", seed, k)
		}
		require.Zero(t, w.s.PendingChanges())
	}
}

// A take holds the shard's lock for at most takeChunk changes at a time, and
// decisions run between its steps.
func TestTakeHoldsTheLockForAChunkAtATime(t *testing.T) {
	defer func() { betweenTakeSteps = nil }()
	s := New(Config{Shards: 1, TrackChanges: true})
	r := mustRate(t, 10, 1, 60, 1)
	const n = 10_000
	for i := range n {
		_, err := s.Throttle(fmt.Appendf(nil, "key:%d", i), r, t0)
		require.NoError(t, err)
	}
	steps := 0
	betweenTakeSteps = func() {
		steps++
		// The lock is free: a decision gets it at once.
		require.True(t, s.shards[0].mu.TryLock(), "step %d: the shard is unlocked between steps", steps)
		s.shards[0].mu.Unlock()
		_, err := s.Throttle([]byte("between"), r, t0)
		require.NoError(t, err)
	}
	got := s.TakeShardChanges(0, nil)
	require.GreaterOrEqual(t, steps, n/takeChunk-1, "steps of at most takeChunk keys")
	keys := make([]string, len(got))
	for i, c := range got {
		keys[i] = c.Key
	}
	slices.Sort(keys)
	require.Equal(t, len(keys), len(slices.Compact(keys)), "each key once")
	require.GreaterOrEqual(t, len(keys), n, "every key changed before the take")
	require.LessOrEqual(t, len(keys), n+1, "and perhaps the one decided between its steps")
	require.LessOrEqual(t, s.PendingChanges(), 1, "nothing else waits for the next take")
}
