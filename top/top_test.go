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
// its count within 5% (space saving over-counts by at most what it
// inherited, Error), and its allowed decisions counted once tracked.
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
	require.GreaterOrEqual(t, got[0].Limited, int64(2000), "never under")
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
	require.True(t, s.Watched(hash("old")))
	got = sorted(&s, t0+2*Generation+2)
	require.Equal(t, []Entry{{Key: "new", Limited: 1}}, got, "old: not limited for two generations")
	require.False(t, s.Watched(hash("old")) && hash("old")%filterBits != hash("new")%filterBits)
	require.Empty(t, s.AppendTo(nil, t0+10*Generation), "idle for generations: empty")
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

func BenchmarkNoteLimited(b *testing.B) {
	var s Sketch
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		s.Note(k, uint64(i%len(keys))*0x9E3779B97F4A7C15, true, 1)
		i++
	}
}

func BenchmarkWatchedMiss(b *testing.B) {
	var s Sketch
	s.Note([]byte("hot"), 7, true, 1)
	n := 0
	for i := 0; b.Loop(); i++ {
		if s.Watched(uint64(i) * 0x9E3779B97F4A7C15) {
			n++
		}
	}
	_ = n
}
