package clusternode

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/storage"
)

// The destination's side: START, from the slot's owner only, clears what
// this node held of the slot; KEY stores each state, or deletes for an
// empty value, for keys of the slot being imported only; the slot is
// served to ASKING clients meanwhile; ABORT forgets the slot and what it
// brought, and START again after a failed attempt starts afresh.
func TestImport(t *testing.T) {
	b := newTestNode(t, idB)
	require.ErrorIs(t, b.m.StartImport(7, idA), ErrNotOwner, "no topology yet")
	b.setTopology(t, 1, idA+" 7001 master - 0-16383", idB+" 7002 master -")
	slot := cluster.Slot([]byte("bar"))
	keys := slotKeys(slot, 3)
	require.NoError(t, b.store.decide(keys[0], later(time.Minute)), "a copy left by an earlier attempt")
	tat := storage.Change{Key: keys[0], TAT: later(time.Hour)}
	win := storage.Change{Key: keys[1], TAT: later(time.Hour), Kind: storage.KindWindow, Value: "a window's state"}

	require.ErrorIs(t, b.m.StartImport(slot, idB), ErrNotOwner, "B does not serve the slot")
	require.ErrorIs(t, b.m.ImportKey(slot, []byte(keys[0]), statecodec.Encode(tat)), ErrNotImporting)
	require.ErrorIs(t, b.m.EndImport(slot), ErrNotImporting)
	b.m.AbortImport(slot)
	_, held := b.store.get(keys[0])
	require.True(t, held, "ABORT of no import does nothing")

	require.NoError(t, b.m.StartImport(slot, idA))
	_, held = b.store.get(keys[0])
	require.False(t, held, "START clears the slot")
	mv := b.st.Move(slot)
	require.False(t, mv.Out)
	require.Equal(t, idA, mv.Peer.ID)

	require.NoError(t, b.m.ImportKey(slot, []byte(keys[0]), statecodec.Encode(tat)))
	require.NoError(t, b.m.ImportKey(slot, []byte(keys[1]), statecodec.Encode(win)))
	for _, want := range []storage.Change{tat, win} {
		got, _ := b.store.get(want.Key)
		require.Equal(t, want, got)
	}
	require.NoError(t, b.m.ImportKey(slot, []byte(keys[1]), nil))
	_, held = b.store.get(keys[1])
	require.False(t, held, "an empty value deletes")
	require.ErrorIs(t, b.m.ImportKey(slot, []byte("foo"), statecodec.Encode(tat)), ErrNotImporting, "a key of another slot")
	require.ErrorIs(t, b.m.ImportKey(slot, []byte(keys[2]), []byte("not a state")), statecodec.ErrNotAState)

	require.NoError(t, b.m.EndImport(slot))
	r, _ := b.st.Route(slot, true, false, false)
	require.Equal(t, cluster.Local, r, "served to ASKING clients")
	r, node := b.st.Route(slot, false, false, false)
	require.Equal(t, cluster.Moved, r)
	require.Equal(t, idA, node.ID)

	require.NoError(t, b.m.StartImport(slot, idA), "a retry")
	_, held = b.store.get(keys[0])
	require.False(t, held, "a retry starts afresh")
	require.NoError(t, b.m.ImportKey(slot, []byte(keys[0]), statecodec.Encode(tat)))
	b.m.AbortImport(slot)
	require.Nil(t, b.st.Move(slot))
	_, held = b.store.get(keys[0])
	require.False(t, held, "ABORT forgets what came")
	require.ErrorIs(t, b.m.EndImport(slot), ErrNotImporting)
}
