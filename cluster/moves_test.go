package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// stateIn returns the State persisted in dir of node id, with threeNodes'
// topology.
func stateIn(t *testing.T, dir, id string) *State {
	t.Helper()
	s, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(id))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	return s
}

// movingOut returns idA's State persisted in dir with slot 100 recorded
// moving out to idB.
func movingOut(t *testing.T, dir string) (*State, *Move) {
	t.Helper()
	s := stateIn(t, dir, idA)
	top, _ := s.Topology()
	mv := &Move{Slot: 100, Peer: *top.Node(idB), Out: true}
	require.NoError(t, s.StartMove(mv))
	return s, mv
}

// A slot handed to its destination (the source sends clients there with
// ASK, the destination serves them after ASKING) stays so across a
// restart of either node until a topology ends the move: a source that
// forgot it served its copy of the slot as of the handover beside the
// destination's (decisions split between two states), and a destination
// that forgot it refused the clients sent to it and dropped what it had
// imported as a slot it does not serve.
func TestAHandedMoveSurvivesARestart(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	src, dst := stateIn(t, srcDir, idA), stateIn(t, dstDir, idB)
	top, _ := src.Topology()
	const slot = 100 // idA's
	out := &Move{Slot: slot, Peer: *top.Node(idB), Out: true}
	in := &Move{Slot: slot, Peer: *top.Node(idA)}
	require.NoError(t, src.StartMove(out))
	require.NoError(t, dst.StartMove(in))
	out.Freeze()
	require.NoError(t, dst.Hand(in))
	require.NoError(t, src.Hand(out))
	select {
	case <-out.Thawed():
	default:
		t.Fatal("handing a frozen move thaws it")
	}

	for _, restarted := range []bool{false, true} {
		if restarted {
			var err error
			src, err = NewState(srcDir, false, "127.0.0.1", 30001)
			require.NoError(t, err)
			dst, err = NewState(dstDir, false, "127.0.0.1", 30002)
			require.NoError(t, err)
		}
		r, n := src.Route(slot, false, false, false)
		require.Equal(t, Ask, r, "restarted: %v", restarted)
		require.Equal(t, idB, n.ID)
		require.Equal(t, 30002, n.Port)
		r, _ = dst.Route(slot, true, false, false)
		require.Equal(t, Local, r, "ASKING, restarted: %v", restarted)
		r, _ = dst.Route(slot, false, false, false)
		require.Equal(t, Moved, r, "without ASKING, restarted: %v", restarted)
		require.Len(t, src.Moves(), 1)
		require.Equal(t, int32(Asking), src.Moves()[0].Phase.Load())
		require.True(t, src.Moves()[0].Out)
		require.False(t, dst.Moves()[0].Out)
	}

	// The topology's flip ends both moves, and a restart after does not
	// bring them back.
	src.EndMove(slot)
	dst.EndMove(slot)
	for _, dir := range []string{srcDir, dstDir} {
		s, err := NewState(dir, false, "127.0.0.1", 30001)
		require.NoError(t, err)
		require.Empty(t, s.Moves())
		conf, err := os.ReadFile(filepath.Join(dir, "nodes.conf"))
		require.NoError(t, err)
		require.NotContains(t, string(conf), "moving")
	}
}

// A move not yet handed is not saved: a restart in its middle leaves the
// slot with the source, which serves it, and the import forgotten (the
// migration fails on the lost connection and the source serves the slot).
func TestAMoveNotHandedIsNotSaved(t *testing.T) {
	dir := t.TempDir()
	s, mv := movingOut(t, dir)
	mv.Freeze()
	require.NoError(t, s.SetTopology(threeNodes(t, 2), false), "a save while it moves")
	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.Empty(t, again.Moves())
	r, _ := again.Route(100, false, false, false)
	require.Equal(t, Local, r)
}

// A saved move whose peer is no longer in the topology (a push while the
// node was down removed it) is dropped at load, as the move would have
// been ended by that push.
func TestASavedMoveToANodeGoneIsDropped(t *testing.T) {
	dir := t.TempDir()
	s, mv := movingOut(t, dir)
	require.NoError(t, s.Hand(mv))
	conf, err := os.ReadFile(filepath.Join(dir, "nodes.conf"))
	require.NoError(t, err)
	require.Contains(t, string(conf), "\nmoving 100 out "+idB+"\n")
	gone, err := Parse(idA+" 127.0.0.1 30001 master - 0-16383\n", 3)
	require.NoError(t, err)
	require.NoError(t, s.SetTopology(gone, false))
	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.Empty(t, again.Moves())
}
