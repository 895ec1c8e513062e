package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func threeNodes(t *testing.T, version int64) *Topology {
	t.Helper()
	top, err := Parse(idA+" 127.0.0.1 30001 master - 0-8191\n"+
		idB+" 127.0.0.1 30002 master - 8192-16383\n"+
		idC+" 127.0.0.1 30003 slave "+idA+"\n", version)
	require.NoError(t, err)
	return top
}

func TestStatePersistsItsIDAndTopology(t *testing.T) {
	dir := t.TempDir()
	s, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.Len(t, s.MyID(), IDLen)
	top, me := s.Topology()
	require.Nil(t, top)
	require.Nil(t, me)
	require.Equal(t, int64(-1), s.Version())
	r, _ := s.Route(0, false, false, false)
	require.Equal(t, NotMember, r, "no topology yet: nothing is served")

	require.ErrorIs(t, s.SetNodeID("short"), ErrNodeID)
	require.NoError(t, s.SetNodeID(idA))
	require.NoError(t, s.SetTopology(threeNodes(t, 2), false))
	require.ErrorIs(t, s.SetTopology(threeNodes(t, 2), false), ErrStaleVersion)
	require.ErrorIs(t, s.SetTopology(threeNodes(t, 1), false), ErrStaleVersion)
	require.NoError(t, s.SetTopology(threeNodes(t, 1), true), "FORCE")
	require.NoError(t, s.SetTopology(threeNodes(t, 5), false))

	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.Equal(t, idA, again.MyID())
	require.Equal(t, int64(5), again.Version())
	top, me = again.Topology()
	require.Equal(t, threeNodes(t, 5), top)
	require.Equal(t, idA, me.ID)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte("# nothing\n"), 0o644))
	_, err = NewState(dir, false, "127.0.0.1", 30001)
	require.ErrorContains(t, err, "no myid line")
}

func TestRoute(t *testing.T) {
	s, err := NewState("", false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idA))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	r, n := s.Route(100, false, false, false)
	require.Equal(t, Local, r)
	require.Nil(t, n)
	r, n = s.Route(9000, false, false, false)
	require.Equal(t, Moved, r)
	require.Equal(t, 30002, n.Port)

	// A migration of slot 100 out of this node, to B.
	m := &Move{Slot: 100, Peer: *threeNodes(t, 1).Node(idB), Out: true}
	require.NoError(t, s.StartMove(m))
	require.Error(t, s.StartMove(&Move{Slot: 100}), "one move a slot")
	r, _ = s.Route(100, false, false, false)
	require.Equal(t, Local, r, "copying: still served here")
	requireClosed(t, m.Thawed(), "not frozen yet")
	m.Freeze()
	thawed := m.Thawed()
	select {
	case <-thawed:
		t.Fatal("Thawed is closed while frozen")
	default:
	}
	r, _ = s.Route(100, false, false, false)
	require.Equal(t, TryAgain, r)
	r, _ = s.Route(100, false, false, true)
	require.Equal(t, Local, r, "a read is answered while frozen")
	m.Thaw(Asking)
	requireClosed(t, thawed, "the freeze ended")
	requireClosed(t, m.Thawed(), "after the freeze")
	r, n = s.Route(100, false, false, false)
	require.Equal(t, Ask, r)
	require.Equal(t, 30002, n.Port)
	s.EndMove(100)
	require.Nil(t, s.Moves())

	// On B, an import of slot 100: served to ASKING clients only.
	b, err := NewState("", false, "127.0.0.1", 30002)
	require.NoError(t, err)
	require.NoError(t, b.SetNodeID(idB))
	require.NoError(t, b.SetTopology(threeNodes(t, 1), false))
	require.NoError(t, b.StartMove(&Move{Slot: 100, Peer: *threeNodes(t, 1).Node(idA)}))
	r, _ = b.Route(100, false, false, false)
	require.Equal(t, Moved, r)
	r, _ = b.Route(100, true, false, false)
	require.Equal(t, Local, r)

	// C, A's replica: reads of A's slots for READONLY clients.
	c, err := NewState("", false, "127.0.0.1", 30003)
	require.NoError(t, err)
	require.NoError(t, c.SetNodeID(idC))
	require.NoError(t, c.SetTopology(threeNodes(t, 1), false))
	r, _ = c.Route(100, false, true, true)
	require.Equal(t, Local, r)
	r, n = c.Route(100, false, true, false)
	require.Equal(t, Moved, r, "a write goes to the master")
	require.Equal(t, 30001, n.Port)
	r, _ = c.Route(9000, false, true, true)
	require.Equal(t, Moved, r, "another master's slot")

	// Unassigned slots, and a node left out.
	part, err := Parse(idA+" 127.0.0.1 30001 master - 0-99\n", 2)
	require.NoError(t, err)
	require.NoError(t, s.SetTopology(part, false))
	r, _ = s.Route(100, false, false, false)
	require.Equal(t, Unserved, r)
	require.NoError(t, c.SetTopology(part, false))
	r, _ = c.Route(0, false, false, false)
	require.Equal(t, NotMember, r)
}

func TestEmulatedStateServesEverySlot(t *testing.T) {
	s, err := NewState(t.TempDir(), true, "127.0.0.1", 6379)
	require.NoError(t, err)
	r, _ := s.Route(16383, false, false, false)
	require.Equal(t, Local, r)
	top, me := s.Topology()
	require.Equal(t, int64(-1), top.Version)
	require.Equal(t, 6379, me.Port)
	require.NoError(t, s.SetTopology(threeNodes(t, 0), false), "any pushed version replaces the emulated one")
}

func requireClosed(t *testing.T, c <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-c:
	default:
		t.Fatal("not closed: " + msg)
	}
}

// SetSlot moves one slot at the topology's next version, persisted; it
// refuses before any topology, at any other version, and to a node that is
// not a master.
func TestStateSetSlot(t *testing.T) {
	dir := t.TempDir()
	s, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idA))
	require.ErrorIs(t, s.SetSlot(100, idB, 1), ErrNoTopology)
	require.NoError(t, s.SetTopology(threeNodes(t, 4), false))
	require.ErrorIs(t, s.SetSlot(100, idB, 4), ErrStaleVersion)
	require.ErrorIs(t, s.SetSlot(100, idB, 6), ErrStaleVersion, "not the next")
	require.ErrorIs(t, s.SetSlot(100, idC, 5), ErrSyntax, "a replica")
	require.Equal(t, int64(4), s.Version())

	require.NoError(t, s.SetSlot(100, idB, 5))
	want, err := threeNodes(t, 4).WithSlot(100, idB, 5)
	require.NoError(t, err)
	top, me := s.Topology()
	require.Equal(t, want, top)
	require.Equal(t, idA, me.ID)
	require.Equal(t, idB, top.Owner(100).ID)
	r, n := s.Route(100, false, false, false)
	require.Equal(t, Moved, r)
	require.Equal(t, idB, n.ID)

	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	top, _ = again.Topology()
	require.Equal(t, want, top)
}
