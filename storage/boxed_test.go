package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// Boxed states of random lengths put, rewritten, grown and removed match a
// map, and the table's invariants (the value arena's garbage among them)
// hold after every step.
func TestBoxedValuesMatchAMapModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tab := newTable(true)
	model := map[string]string{}
	for step := 0; step < 20000; step++ {
		k := fmt.Sprintf("w%d", r.IntN(300))
		switch op := r.IntN(10); {
		case op < 7:
			v := strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(400))
			if _, kind, ok := tab.get([]byte(k)); ok && kind != KindWindow {
				t.Fatalf("%s: kind %d", k, kind)
			}
			require.NoError(t, tab.putBoxed([]byte(k), KindWindow, t0+sec(10), []byte(v)))
			model[k] = v
		default:
			tab.remove([]byte(k))
			delete(model, k)
		}
		if step%500 == 0 {
			tab.check(t)
		}
	}
	tab.check(t)
	require.Equal(t, len(model), tab.len())
	for k, v := range model {
		i := tab.lookup([]byte(k))
		require.GreaterOrEqual(t, i, 0, k)
		require.Equal(t, v, string(tab.value(&tab.slots[i])), k)
	}
	tab.release()
}

func windowSpec(t testing.TB, limit, seconds, quantity, precision int64) window.Spec {
	t.Helper()
	s, err := window.NewSpec(limit, seconds, quantity, precision, window.DefaultLogMax)
	require.NoError(t, err)
	return s
}

// CL.WINDOW and the GCRA family on one key: WRONGTYPE either way while the
// key lives; once it has expired, the other kind takes it.
func TestKindsDoNotMix(t *testing.T) {
	s := New(Config{Shards: 2})
	w := windowSpec(t, 3, 10, 1, 0)
	r := mustRate(t, 0, 1, 10, 1)
	_, stored, err := s.Window([]byte("w"), w, t0, false)
	require.NoError(t, err)
	require.True(t, stored)
	_, err = s.Throttle([]byte("w"), r, t0)
	require.ErrorIs(t, err, ErrWrongType)
	_, _, err = s.Preview([]byte("w"), r, t0)
	require.ErrorIs(t, err, ErrWrongType)

	_, err = s.Throttle([]byte("t"), r, t0)
	require.NoError(t, err)
	_, _, err = s.Window([]byte("t"), w, t0, false)
	require.ErrorIs(t, err, ErrWrongType)

	// Both expire after 10 s; then each key takes the other kind.
	later := t0 + sec(10)
	res, err := s.Throttle([]byte("w"), r, later)
	require.NoError(t, err)
	require.False(t, res.Limited)
	_, kind, _ := s.Get([]byte("w"), later)
	require.Equal(t, KindTAT, kind)
	_, stored, err = s.Window([]byte("t"), w, later, false)
	require.NoError(t, err)
	require.True(t, stored)
	_, kind, _ = s.Get([]byte("t"), later)
	require.Equal(t, KindWindow, kind)
}

// A window's state goes to disk and comes back whole: decisions after a
// reload are those before it, and a dry decision stores nothing.
func TestWindowStatePersists(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	s := New(Config{Shards: 4, TrackChanges: true})
	f := NewFlusher(s, p, FlusherOptions{Now: fixedClock})
	w := windowSpec(t, 5, 60, 1, 0)
	c := windowSpec(t, 5, 60, 1, 6)
	for i := 0; i < 3; i++ {
		_, _, err := s.Window([]byte("log"), w, t0+sec(float64(i)), false)
		require.NoError(t, err)
		_, _, err = s.Window([]byte("counters"), c, t0+sec(float64(10*i)), false)
		require.NoError(t, err)
	}
	_, err := s.Throttle([]byte("tat"), mustRate(t, 4, 1, 60, 1), t0)
	require.NoError(t, err)
	_, stored, err := s.Window([]byte("dry"), w, t0, true)
	require.NoError(t, err)
	require.True(t, stored, "it would have stored")
	_, _, ok := s.Get([]byte("dry"), t0)
	require.False(t, ok, "but did not")
	require.NoError(t, f.Flush())
	require.NoError(t, p.Close())

	s2 := New(Config{Shards: 4})
	p2, stats, err := OpenPebble(dir, noReserve, t0, s2.Restore)
	require.NoError(t, err)
	defer p2.Close()
	require.Equal(t, LoadStats{Loaded: 3}, stats)
	for _, k := range []string{"log", "counters"} {
		spec := w
		if k == "counters" {
			spec = c
		}
		a, _, _ := s.Window([]byte(k), spec, t0+sec(40), true)
		b, _, _ := s2.Window([]byte(k), spec, t0+sec(40), true)
		require.Equal(t, a.Ints(), b.Ints(), k)
		ka, va, _ := s.Value([]byte(k), t0)
		kb, vb, _ := s2.Value([]byte(k), t0)
		require.Equal(t, ka, kb)
		require.Equal(t, va, vb, "%s: the same bytes", k)
	}
}

// A store written in format 1 (TAT keys only), checked in as written by the
// code of that format, loads as it is, its marker then rewritten.
func TestFormatOneStoreLoads(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/store-v1")))
	s := New(Config{Shards: 4})
	got := map[string]gcra.Instant{}
	p, stats, err := OpenPebble(dir, noReserve, t0, func(k []byte, kind Kind, exp gcra.Instant, v []byte) error {
		require.Equal(t, KindTAT, kind)
		got[string(k)] = exp
		return s.Restore(k, kind, exp, v)
	})
	require.NoError(t, err)
	require.Equal(t, LoadStats{Loaded: 5, Stale: 1}, stats)
	require.Equal(t, map[string]gcra.Instant{
		"user:1": t0 + sec(3600), "user:2": t0 + sec(60), "a key longer than twenty bytes": t0 + sec(7200),
		"bin\x00\xff": t0 + 1, "in the log": t0 + sec(300),
	}, got)
	require.NoError(t, p.Close())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)

	// Reopened, it says format 2 now and still loads.
	p, stats, err = OpenPebble(dir, noReserve, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.NoError(t, err)
	require.Equal(t, 5, stats.Loaded)
	v, closer, err := p.db.Get([]byte(formatKey))
	require.NoError(t, err)
	require.Equal(t, formatVersion, string(v))
	require.NoError(t, closer.Close())
	require.NoError(t, p.Close())
}

// A count is a window on the key: counted over the limit, read back by
// CL.WINDOW PRECISION 1, WRONGTYPE for a TAT key, and gone once its window
// ends.
func TestCountIsAWindowKey(t *testing.T) {
	s := New(Config{Shards: 4})
	c, err := window.NewCountSpec(10, 3)
	require.NoError(t, err)
	now := t0 - t0%gcra.Instant(sec(10))
	for i, want := range []int64{3, 6, 9} {
		tally, stored, err := s.Count([]byte("rl"), c, now+gcra.Instant(i), false)
		require.NoError(t, err)
		require.True(t, stored)
		require.Equal(t, want, tally.Count)
	}
	res, _, err := s.Window([]byte("rl"), windowSpec(t, 5, 10, 0, 1), now+gcra.Instant(sec(1)), false)
	require.NoError(t, err)
	require.Equal(t, int64(0), res.Remaining, "CL.WINDOW sees the 9 hits counted")
	kind, _, ok := s.Value([]byte("rl"), now)
	require.True(t, ok)
	require.Equal(t, KindWindow, kind)

	rate, err := gcra.NewRate(5, 1, 10, 1)
	require.NoError(t, err)
	_, err = s.Throttle([]byte("tat"), rate, now)
	require.NoError(t, err)
	_, _, err = s.Count([]byte("tat"), c, now, false)
	require.ErrorIs(t, err, ErrWrongType)

	tally, _, err := s.Count([]byte("rl"), window.CountSpec{Window: 10 * 1e9}, now+gcra.Instant(sec(10)), false)
	require.NoError(t, err)
	require.Equal(t, int64(0), tally.Count, "the next window")
}
