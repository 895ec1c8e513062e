package storage

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/window"
)

// storeWithGarbage returns a one-shard store, and its table, with both
// kinds of arena garbage a table leaves behind: lease states that outgrew their blobs as they were
// filled (the value arena), and long TAT keys deleted (the key arena), both
// past tidyShare and under the half at which the table compacts on its own.
func storeWithGarbage(t *testing.T, cfg Config) (*Store, *table) {
	t.Helper()
	if !offHeap {
		t.Skip("arenas are mapped outside the heap on Linux only")
	}
	cfg.Shards = 1
	s := New(cfg)
	spec, err := lease.NewSpec(100, 3600000)
	require.NoError(t, err)
	for k := range 300 {
		for i := range 100 {
			_, _, err := s.Acquire(fmt.Appendf(nil, "leases:%d", k), spec, fmt.Appendf(nil, "holder-%d", i), t0, false)
			require.NoError(t, err)
		}
	}
	rate, err := gcra.NewRate(10, 1, 3600, 1)
	require.NoError(t, err)
	long := func(k int) []byte { return fmt.Appendf(nil, "a-tat-key-too-long-for-its-entry:%08d", k) }
	for k := range 4000 {
		_, err := s.Throttle(long(k), rate, t0)
		require.NoError(t, err)
	}
	for k := range 1600 { // 40%
		require.True(t, s.Delete(long(k), t0))
	}
	tb := &s.shards[0].t
	require.True(t, tb.mem.vals.mapped && tb.mem.arena.mapped, "arenas this size are mapped")
	require.Greater(t, tb.valGarbage, len(tb.vals)/tidyShare, "the fill left value garbage")
	require.Greater(t, tb.garbage, len(tb.arena)/tidyShare, "the deletes left key garbage")
	requireSpareCounted(t, tb)
	return s, tb
}

// requireSpareCounted checks valSpare against the blobs' spare room
// counted afresh.
func requireSpareCounted(t *testing.T, tb *table) {
	t.Helper()
	n := 0
	for i := range tb.slots {
		if e := &tb.slots[i]; e.boxed() && e.valCap() > 0 {
			n += tb.spareOf(e)
		}
	}
	require.Equal(t, n, tb.valSpare)
}

// A store filled and then left alone holds up to half its arenas in
// garbage; Tidy gives it back at its second look (the first sees the fill's
// garbage just made), and every key reads back as it was. Reproduces the
// 19 B a lease that a million leases kept for their 12 B of state.
func TestTidyGivesAStoreAtRestItsGarbageBack(t *testing.T) {
	s, tb := storeWithGarbage(t, Config{})
	listings := func() [][]lease.Held {
		var all [][]lease.Held
		for k := range 300 {
			held, err := s.Leases(fmt.Appendf(nil, "leases:%d", k), t0, nil)
			require.NoError(t, err)
			require.Len(t, held, 100)
			all = append(all, held)
		}
		return all
	}
	before := listings()
	garbage, valGarbage := tb.garbage, tb.valGarbage
	mapped := tb.mappedInUse()

	require.Zero(t, s.Tidy(), "the first look sees a table that has just been written")
	require.Equal(t, garbage+valGarbage, s.Tidy())
	require.Zero(t, tb.garbage)
	require.Zero(t, tb.valGarbage)
	require.Equal(t, mapped-int64(garbage+valGarbage), tb.mappedInUse())
	require.Zero(t, s.Tidy(), "nothing left to drop")

	require.Equal(t, before, listings())
	require.Equal(t, 300+2400, s.Len())
	for k := range 4000 {
		_, _, found := s.Get(fmt.Appendf(nil, "a-tat-key-too-long-for-its-entry:%08d", k), t0)
		require.Equal(t, k >= 1600, found, k)
	}
}

// A table still being written between two looks is left to its own
// compactions: tidying it would copy its arena again and again while a fill
// runs. It is tidied at the first look after it goes quiet.
func TestTidyLeavesATableBeingWrittenAlone(t *testing.T) {
	s, tb := storeWithGarbage(t, Config{})
	require.Zero(t, s.Tidy())

	// More states outgrow their blobs, a key at a time until the garbage
	// made since the look is over a 64th of the arena.
	spec, err := lease.NewSpec(200, 3600000)
	require.NoError(t, err)
	made := tb.valGarbage
	for k := 0; tb.valGarbage-made <= len(tb.vals)/quietShare; k++ {
		for i := 100; i < 120; i++ {
			_, _, err := s.Acquire(fmt.Appendf(nil, "leases:%d", k), spec, fmt.Appendf(nil, "holder-%d", i), t0, false)
			require.NoError(t, err)
		}
		require.Greater(t, tb.valGarbage, made, "the table has not compacted it itself")
	}
	keyGarbage, valGarbage := tb.garbage, tb.valGarbage
	require.Equal(t, keyGarbage, s.Tidy(), "the key arena was quiet, the values not")
	require.Equal(t, valGarbage, tb.valGarbage)
	require.Equal(t, valGarbage, s.Tidy(), "quiet since")
}

// Over the memory limit, the arenas' garbage, which counts toward it, is
// dropped at the memory watch's next tick, however busy the table: before
// a new key is refused or one evicted for room that compacting gives.
// Under the limit the watch leaves it to Tidy.
func TestOverTheLimitTheArenasGarbageGoesFirst(t *testing.T) {
	for _, over := range []bool{true, false} {
		limit := int64(1 << 40)
		if over {
			limit = 1
		}
		s, tb := storeWithGarbage(t, Config{MaxMemory: limit})
		garbage := tb.garbage + tb.valGarbage
		before := s.Len()
		s.watchMemory()
		if over {
			require.Zero(t, tb.garbage+tb.valGarbage, "dropped")
			require.Zero(t, s.ArenaGarbage(), "and measured so")
		} else {
			require.Equal(t, garbage, tb.garbage+tb.valGarbage, "left to Tidy")
			require.Equal(t, int64(garbage), s.ArenaGarbage())
		}
		require.Equal(t, before, s.Len(), "nothing evicted (noeviction)")
	}
}

// A compaction gives a state that shrank since its blob was made the room
// a new blob would have: a key whose holders left keeps no slack sized for
// the crowd it once had. It grows again as any state does.
func TestACompactionFitsAShrunkStatesRoom(t *testing.T) {
	s := New(Config{Shards: 1})
	tb := &s.shards[0].t
	spec, err := lease.NewSpec(100, 3600000)
	require.NoError(t, err)
	key := []byte("crowd")
	for i := range 100 {
		_, _, err := s.Acquire(key, spec, fmt.Appendf(nil, "holder-%d", i), t0, false)
		require.NoError(t, err)
	}
	for i := range 95 {
		held, err := s.Release(key, fmt.Appendf(nil, "holder-%d", i), t0, false)
		require.NoError(t, err)
		require.True(t, held)
	}
	p := tb.lookup(key)
	require.GreaterOrEqual(t, p, 0)
	state := len(tb.value(&tb.slots[p]))
	require.Greater(t, tb.slots[p].valCap(), 10*state, "the room of a hundred leases")
	before, err := s.Leases(key, t0, nil)
	require.NoError(t, err)
	require.Len(t, before, 5)

	tb.compactValues(2 * len(tb.vals))
	p = tb.lookup(key)
	require.Equal(t, blobCapacity(state), tb.slots[p].valCap())
	require.Equal(t, valueHeader+len(key)+blobCapacity(state), len(tb.vals), "the arena holds that blob alone")
	after, err := s.Leases(key, t0, nil)
	require.NoError(t, err)
	require.Equal(t, before, after)

	for i := 100; i < 150; i++ {
		_, _, err := s.Acquire(key, spec, fmt.Appendf(nil, "holder-%d", i), t0, false)
		require.NoError(t, err)
	}
	after, err = s.Leases(key, t0, nil)
	require.NoError(t, err)
	require.Len(t, after, 55)
	require.Equal(t, before, after[:5])
	requireSpareCounted(t, tb)
}

// Releasing leases shrinks states in place: no garbage, but room their
// blobs no longer need (table.valSpare), which Tidy gives back as it gives
// garbage, at the second look once the releases stop.
func TestTidyGivesShrunkStatesTheirRoomBack(t *testing.T) {
	s, tb := storeWithGarbage(t, Config{})
	s.Tidy()
	s.Tidy()
	require.Zero(t, tb.valGarbage+tb.valSpare, "a clean start")
	for k := range 300 {
		for i := range 90 {
			held, err := s.Release(fmt.Appendf(nil, "leases:%d", k), fmt.Appendf(nil, "holder-%d", i), t0, false)
			require.NoError(t, err)
			require.True(t, held)
		}
	}
	requireSpareCounted(t, tb)
	spare := tb.valSpare
	require.Greater(t, spare, len(tb.vals)/2, "90 of 100 leases' room")
	require.Zero(t, tb.valGarbage, "shrunk in place")
	mapped := tb.mappedInUse()
	require.Zero(t, s.Tidy(), "the releases were just made")
	require.Equal(t, spare, s.Tidy())
	require.Equal(t, mapped-int64(spare), tb.mappedInUse())
	requireSpareCounted(t, tb)
	for k := range 300 {
		held, err := s.Leases(fmt.Appendf(nil, "leases:%d", k), t0, nil)
		require.NoError(t, err)
		require.Len(t, held, 10)
	}
}

// valSpare stays what the blobs' room counted afresh says over random
// sequences of every write a boxed key sees: leases taken, released and
// expired, window logs growing and emptying, keys deleted and swept, and
// compactions (the table's own and Tidy's, pressed).
func TestSpareRoomIsCountedThroughAnySequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := New(Config{Shards: 1})
	tb := &s.shards[0].t
	now := t0
	win, err := window.NewSpec(50, 10, 1, 0, window.DefaultLogMax)
	require.NoError(t, err)
	// Tokens of up to 200 bytes: a state that shrank can then outgrow its
	// blob in one write, its spare room turning to garbage.
	token := func() []byte {
		i := rng.IntN(80)
		return fmt.Appendf(nil, "t%d%s", i, strings.Repeat("x", i*i%200))
	}
	for op := range 20000 {
		key := fmt.Appendf(nil, "k%d", rng.IntN(40))
		switch rng.IntN(8) {
		case 0, 1, 2:
			spec, err := lease.NewSpec(int64(1+rng.IntN(60)), int64(1000+rng.IntN(20000)))
			require.NoError(t, err)
			_, _, err = s.Acquire(key, spec, token(), now, false)
			if err != nil {
				require.ErrorIs(t, err, ErrWrongType)
			}
		case 3, 4:
			_, err := s.Release(key, token(), now, false)
			if err != nil {
				require.ErrorIs(t, err, ErrWrongType)
			}
		case 5:
			_, _, err := s.Window(append([]byte("w"), key...), win, now, false)
			require.NoError(t, err)
		case 6:
			s.Delete(key, now)
		case 7:
			now += gcra.Instant(rng.IntN(3000)) * gcra.Instant(time.Millisecond)
			s.ExpireCycle(now, 64, func() bool { return true })
			if rng.IntN(4) == 0 {
				s.tidy(rng.IntN(2) == 0)
			}
		}
		if op%97 == 0 || op == 19999 {
			requireSpareCounted(t, tb)
		}
	}
}

func TestWorthTidying(t *testing.T) {
	for _, c := range []struct {
		used, garbage, mark int
		want                bool
	}{
		{64 << 10, 8<<10 + 1, 8<<10 + 1, true}, // past an eighth, unchanged
		{64 << 10, 8 << 10, 8 << 10, false},    // an eighth exactly
		{64 << 10, 16 << 10, 15<<10 + 1, true}, // grew by under a 64th
		{64 << 10, 16 << 10, 15 << 10, false},  // grew by a 64th
		{64 << 10, 9 << 10, 30 << 10, true},    // compacted since: quiet
		{compactArena - 1, 3000, 3000, false},  // too small to bother
		{compactArena, compactArena / 2, compactArena / 2, true},
	} {
		require.Equal(t, c.want, worthTidying(c.used, c.garbage, c.mark, false), "%+v", c)
	}
	require.True(t, worthTidying(64<<10, 16<<10, 0, true), "pressed: however much was just made")
	require.False(t, worthTidying(64<<10, 8<<10, 0, true), "but past an eighth")
}
