package storage

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func takeFeed(s *Store) []Change {
	var got []Change
	for i := 0; i < s.Shards(); i++ {
		got = s.TakeFeed(i, got)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	return got
}

// The feed is a log of its own: what it records and what the persister's log
// records do not depend on who took first.
func TestFeedRecordsEachKeyOnceWithItsLatestState(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	r := mustRate(t, 9, 1, 1, 1)
	_, _ = s.Throttle([]byte("before"), r, t0)
	s.SetFeed(true)
	for i := 0; i < 3; i++ {
		_, _ = s.Throttle([]byte("a"), r, t0)
	}
	_, _ = s.Throttle([]byte("b"), r, t0)
	s.Delete([]byte("b"), t0)
	_, _, err := s.Window([]byte("w"), windowSpec(t, 5, 60, 1, 0), t0, false)
	require.NoError(t, err)
	_, wstate, _ := s.Value([]byte("w"), t0)

	got := takeFeed(s)
	require.Equal(t, []Change{
		{Key: "a", TAT: t0 + sec(3)},
		{Key: "b"},
		{Key: "w", TAT: got[2].TAT, Kind: KindWindow, Value: string(wstate)},
	}, got, "a key changed before the feed started is not in it")
	require.Greater(t, got[2].TAT, t0)
	require.Empty(t, takeFeed(s))

	persisted := s.TakeChanges(nil)
	require.Len(t, persisted, 4, "the persister's log still holds before, a, b and w")
}

// An entry moved by a deletion (removeAt moves the last entry into the
// hole) is still reported, and a cleared or expired key is a deletion.
func TestFeedFollowsMovedEntriesExpiryAndClear(t *testing.T) {
	s := New(Config{Shards: 1})
	s.SetFeed(true)
	r := mustRate(t, 0, 1, 1, 1) // each key lives one second
	for i := 0; i < 10; i++ {
		_, _ = s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
	}
	s.Delete([]byte("k0"), t0) // k9 moves into k0's place
	got := takeFeed(s)
	require.Len(t, got, 10)
	require.Equal(t, Change{Key: "k0"}, got[0])
	require.Equal(t, Change{Key: "k9", TAT: t0 + sec(1)}, got[9])

	require.Equal(t, 9, s.ExpireSome(t0+sec(2), 100))
	require.Len(t, takeFeed(s), 9, "each expired key is a deletion")

	_, _ = s.Throttle([]byte("x"), r, t0+sec(3))
	takeFeed(s)
	s.Clear()
	require.Equal(t, []Change{{Key: "x"}}, takeFeed(s))
}

func TestFeedOffRecordsNothing(t *testing.T) {
	s := New(Config{Shards: 2})
	r := mustRate(t, 9, 1, 1, 1)
	_, _ = s.Throttle([]byte("a"), r, t0)
	require.Empty(t, takeFeed(s))
	s.SetFeed(true)
	_, _ = s.Throttle([]byte("a"), r, t0)
	s.SetFeed(false)
	_, _ = s.Throttle([]byte("b"), r, t0)
	require.Empty(t, takeFeed(s), "stopping forgets what was not taken")
	s.SetFeed(true)
	_, _ = s.Throttle([]byte("a"), r, t0)
	require.Equal(t, []Change{{Key: "a", TAT: t0 + sec(3)}}, takeFeed(s), "and clears the marks, so a is recorded again")
}

// CopyShard is a snapshot's first phase: every live key with its state.
func TestCopyShardCopiesEveryLiveKey(t *testing.T) {
	s := New(Config{Shards: 4})
	r := mustRate(t, 0, 1, 60, 1)
	want := map[string]Change{}
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("key-%03d-long-enough-for-the-arena", i)
		if i%10 == 0 {
			k = fmt.Sprint(i) // inline
		}
		_, _ = s.Throttle([]byte(k), r, t0)
		want[k] = Change{Key: k, TAT: t0 + sec(60)}
	}
	_, _, err := s.Window([]byte("w"), windowSpec(t, 5, 60, 1, 0), t0, false)
	require.NoError(t, err)
	exp, _, _ := s.Get([]byte("w"), t0)
	_, v, _ := s.Value([]byte("w"), t0)
	want["w"] = Change{Key: "w", TAT: exp, Kind: KindWindow, Value: string(v)}
	_, _ = s.Throttle([]byte("gone"), mustRate(t, 0, 1, 1, 1), t0-sec(5)) // expired by t0

	got := map[string]Change{}
	for i := 0; i < s.Shards(); i++ {
		for _, c := range s.CopyShard(i, t0, nil) {
			got[c.Key] = c
		}
	}
	require.Equal(t, want, got)
}

// Apply is a replica storing its master's state: recorded for its own
// persister, replacing a key of another kind.
func TestApplyReplacesAndIsPersisted(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	require.NoError(t, s.Apply([]byte("k"), KindTAT, t0+sec(5), nil))
	require.NoError(t, s.Apply([]byte("k"), KindWindow, t0+sec(9), []byte("state")))
	kind, v, ok := s.Value([]byte("k"), t0)
	require.True(t, ok)
	require.Equal(t, KindWindow, kind)
	require.Equal(t, "state", string(v))
	require.NoError(t, s.Apply([]byte("k"), KindTAT, t0+sec(7), nil))
	tat, kind, ok := s.Get([]byte("k"), t0)
	require.True(t, ok)
	require.Equal(t, KindTAT, kind)
	require.Equal(t, t0+sec(7), tat)
	require.Equal(t, []Change{{Key: "k", TAT: t0 + sec(7)}}, s.TakeChanges(nil))
}
