package top

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// hash stands in for the store's table hash.
func hash[T string | []byte](key T) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(key) {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return h
}

func note(s *Sketch, key string, limited bool, now gcra.Instant) {
	s.Note([]byte(key), hash(key), limited, now)
}

func sorted(s *Sketch, now gcra.Instant) []Entry {
	out := s.AppendTo(nil, now)
	slices.SortFunc(out, func(a, b Entry) int { return int(b.Limited - a.Limited) })
	return out
}

// A hot key among 50,000 others limited once each, in random order: first,
// its count within 5%, its own since it entered at least (what it
// inherited, Error, aside), and its allowed decisions counted once tracked.
func TestHotKeyAmongManyIsFirstWithinFivePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s Sketch
	var stream []string
	for i := range 50_000 {
		stream = append(stream, fmt.Sprintf("user:%d", i))
	}
	for range 2_000 {
		stream = append(stream, "hot")
	}
	rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	for _, k := range stream {
		note(&s, k, true, 1)
	}
	for range 300 {
		note(&s, "hot", false, 1)
	}
	got := sorted(&s, 1)
	require.Equal(t, "hot", got[0].Key)
	require.InEpsilon(t, 2000, got[0].Limited, 0.05, "%+v", got[0])
	require.LessOrEqual(t, got[0].Limited-got[0].Error, int64(2000), "over by at most Error")
	require.Equal(t, int64(300), got[0].Allowed)
	require.LessOrEqual(t, len(got), Capacity)
}

// A million distinct limited keys: the sketch is still Size bytes (it
// holds no pointer and allocates nothing), and tracks Capacity keys.
func TestAMillionKeysCostNoMoreMemory(t *testing.T) {
	var s Sketch
	key := make([]byte, 0, 32)
	allocs := testing.AllocsPerRun(1, func() {
		for i := range 1_000_000 {
			key = strconv.AppendInt(append(key[:0], 'k'), int64(i), 10)
			s.Note(key, hash(key), true, 1)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, Capacity, s.used)
	require.Less(t, Size, 4096, "about 3 KB a sketch")
}

// A key not limited for two generations leaves; one limited in the last
// generation is still counted.
func TestAKeyLeavesAfterAboutAMinute(t *testing.T) {
	var s Sketch
	t0 := gcra.Instant(1e12)
	for range 10 {
		note(&s, "old", true, t0)
	}
	note(&s, "new", true, t0+Generation+1)
	got := sorted(&s, t0+Generation+1)
	require.Equal(t, []Entry{{Key: "old", Limited: 10}, {Key: "new", Limited: 1}}, got)
	got = sorted(&s, t0+2*Generation+2)
	require.Equal(t, []Entry{{Key: "new", Limited: 1}}, got, "old: not limited for two generations")
	require.Equal(t, -1, s.find(hash("old")), "and no longer tracked")
	note(&s, "old", false, t0+2*Generation+3)
	require.Equal(t, []Entry{{Key: "new", Limited: 1}}, sorted(&s, t0+2*Generation+3), "its allowed decisions no longer counted")
	require.Empty(t, s.AppendTo(nil, t0+10*Generation), "idle for generations: empty")
}

// A flood of distinct limited keys, every slot taken: they are sampled, one
// in Sample counted as Sample, so the counts still add up to about the
// decisions (space saving loses none), a key limited often among them is
// first within 5%, and the rest of the flood costs a decrement each.
func TestAFloodOfDistinctKeysIsSampled(t *testing.T) {
	var s Sketch
	key := make([]byte, 0, 16)
	const flood, hot = 200_000, 10_000
	for i := range flood {
		key = strconv.AppendInt(append(key[:0], 'k'), int64(i), 10)
		s.Note(key, hash(key), true, 1)
		if i%(flood/hot) == 0 {
			note(&s, "hot", true, 1)
		}
	}
	got := sorted(&s, 1)
	require.Equal(t, "hot", got[0].Key)
	require.InEpsilon(t, hot, got[0].Limited, 0.05, "%+v", got[0])
	var sum int64
	for _, e := range got {
		sum += e.Limited
	}
	require.InEpsilon(t, flood+hot, sum, 0.05, "the counts add up to the decisions")
	require.Len(t, got, Capacity)

	// Between two samples a key not tracked is not counted: Quick counts
	// down without Note.
	s.gap = 5
	free := uint64(0)
	for s.holder(uint8(free)) >= 0 {
		free++ // to a bucket no tracked key has
	}
	require.True(t, s.Quick(free<<56|1, true, 1))
	require.Equal(t, 4, s.gap)
}

// Keys that share a bucket of the index are each counted as themselves, and
// a key not tracked in that bucket is not counted.
func TestKeysSharingABucket(t *testing.T) {
	var s Sketch
	a, b, c := uint64(7)<<56|1, uint64(7)<<56|2, uint64(7)<<56|3 // one bucket
	for range 3 {
		s.Note([]byte("a"), a, true, 1)
	}
	s.Note([]byte("b"), b, true, 1)
	require.Equal(t, uint8(several), s.index[7])
	s.Note([]byte("a"), a, false, 1)
	s.Note([]byte("b"), b, false, 1)
	s.Note([]byte("b"), b, false, 1)
	s.Note([]byte("c"), c, false, 1)
	require.Equal(t, []Entry{{Key: "a", Limited: 3, Allowed: 1}, {Key: "b", Limited: 1, Allowed: 2}}, sorted(&s, 1))
}

// Allowed decisions of a key not tracked are not counted, and cost only the
// filter's test; a key longer than KeyBytes is shown by its prefix.
func TestAllowedAndLongKeys(t *testing.T) {
	var s Sketch
	note(&s, "a", false, 1)
	require.Empty(t, s.AppendTo(nil, 1))
	long := strings.Repeat("x", 100)
	note(&s, long, true, 1)
	note(&s, long, false, 1)
	got := s.AppendTo(nil, 1)
	require.Equal(t, []Entry{{Key: strings.Repeat("x", KeyBytes-3) + "...", Limited: 1, Allowed: 1}}, got)
	exact := strings.Repeat("y", KeyBytes)
	note(&s, exact, true, 1)
	require.Equal(t, exact, s.AppendTo(nil, 1)[1].Key, "a key of exactly KeyBytes is whole")
}

// benchKeys is n keys "key:0" on, for the benchmarks.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
	}
	return keys
}

func BenchmarkNoteLimited(b *testing.B) {
	var s Sketch
	keys := benchKeys(64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		s.Note(k, uint64(i%len(keys))*0x9E3779B97F4A7C15, true, 1)
		i++
	}
}

// BenchmarkNoteLimitedFlood is a limited decision on a key not tracked,
// every slot taken: a decrement, and one in Sample a replacement.
func BenchmarkNoteLimitedFlood(b *testing.B) {
	var s Sketch
	keys := benchKeys(4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		if h := uint64(i%len(keys)) * 0x9E3779B97F4A7C15; !s.Quick(h, true, 1) {
			s.Note(k, h, true, 1)
		}
		i++
	}
}

// BenchmarkQuickAllowedNotTracked is what an allowed decision on a key not
// tracked pays, every slot taken.
func BenchmarkQuickAllowedNotTracked(b *testing.B) {
	var s Sketch
	for i := range Capacity {
		s.Note([]byte("k"), uint64(i+1)*0x9E3779B97F4A7C15, true, 1)
	}
	n := 0
	for i := 0; b.Loop(); i++ {
		if s.Quick(uint64(i)*0xD6E8FEB86659FD93, false, 1) {
			n++
		}
	}
	require.Equal(b, Capacity, s.used)
}
