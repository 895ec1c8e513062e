package storage

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
)

// Sharded by slot, a slot's keys are counted, listed and copied from its
// shard alone, and a frozen slot refuses every write until it thaws.
func TestSlotsCountFreezeCopyAndDelete(t *testing.T) {
	s := New(Config{Shards: 8, BySlot: true, TrackChanges: true})
	r := mustRate(t, 9, 1, 60, 1)
	bySlot := map[int][]string{}
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("user:%d", i)
		if i%10 == 0 {
			k = fmt.Sprintf("{tag}:%d", i) // all in one slot
		}
		_, err := s.Throttle([]byte(k), r, t0)
		require.NoError(t, err)
		bySlot[cluster.Slot([]byte(k))] = append(bySlot[cluster.Slot([]byte(k))], k)
	}
	tag := cluster.Slot([]byte("tag"))
	require.Equal(t, 200, s.CountInSlot(tag))
	total := 0
	for slot := 0; slot < cluster.Slots; slot++ {
		require.Equal(t, len(bySlot[slot]), s.CountInSlot(slot), "slot %d", slot)
		total += s.CountInSlot(slot)
	}
	require.Equal(t, 2000, total)

	var listed []string
	s.KeysInSlot(tag, 1000, t0, func(k []byte) { listed = append(listed, string(k)) })
	sort.Strings(listed)
	want := append([]string(nil), bySlot[tag]...)
	sort.Strings(want)
	require.Equal(t, want, listed)
	listed = nil
	s.KeysInSlot(tag, 5, t0, func(k []byte) { listed = append(listed, string(k)) })
	require.Len(t, listed, 5, "count bounds the keys listed")

	copied := s.CopySlot(tag, t0, true, nil)
	require.Len(t, copied, 200)
	for _, c := range copied {
		require.Equal(t, t0+sec(60), c.TAT, c.Key)
	}
	require.True(t, s.Frozen(tag))
	_, err := s.Throttle([]byte("{tag}:0"), r, t0)
	require.ErrorIs(t, err, ErrSlotFrozen)
	_, err = s.Throttle([]byte("{tag}:new"), r, t0)
	require.ErrorIs(t, err, ErrSlotFrozen, "nor is a key created")
	_, _, err = s.Window([]byte("{tag}:w"), windowSpec(t, 5, 60, 1, 0), t0, false)
	require.ErrorIs(t, err, ErrSlotFrozen)
	require.False(t, s.Delete([]byte("{tag}:0"), t0))
	_, err = s.Throttle([]byte("user:1"), r, t0)
	require.NoError(t, err, "other slots go on")
	res, _, err := s.Preview([]byte("{tag}:0"), r, t0)
	require.NoError(t, err, "a peek is answered")
	require.Equal(t, int64(8), res.Remaining, "what the decision would answer, storing nothing")

	s.TakeChanges(nil)
	require.Equal(t, 200, s.DeleteSlot(tag))
	require.Equal(t, 0, s.CountInSlot(tag))
	require.False(t, s.Frozen(tag), "deleting the moved slot thaws it")
	require.Len(t, s.TakeChanges(nil), 200, "the deletions are persisted")
	_, err = s.Throttle([]byte("{tag}:0"), r, t0)
	require.NoError(t, err)
	require.Equal(t, 1, s.CountInSlot(tag))
	s.Clear()
	require.Equal(t, 0, s.CountInSlot(tag))
}

func TestSlotsNeedBySlot(t *testing.T) {
	s := New(Config{Shards: 4})
	require.False(t, s.Freeze(1, true))
	require.Equal(t, 0, s.CountInSlot(1))
	require.Error(t, Config{Shards: cluster.Slots * 2, BySlot: true}.Validate())
}
