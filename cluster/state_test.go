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

	// The same push again (the node took it from a peer first, as
	// reshard's push raced a catch-up): taken, nothing changes; the same
	// version with another change is not.
	require.NoError(t, s.SetSlot(100, idB, 5))
	require.ErrorIs(t, s.SetSlot(101, idB, 5), ErrStaleVersion)
	top, _ = s.Topology()
	require.Equal(t, want, top)

	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	top, _ = again.Topology()
	require.Equal(t, want, top)
}

// A failover Sentinel reports (SetMaster) makes the shard's replica its
// master in the topology in force: its slots, the old master its replica.
// The pushed topology and its version stay the operator's; the epoch orders
// failovers: an older report changes nothing, and a report of the epoch
// recorded naming the old master does not flip it back.
func TestSetMasterAppliesSentinelsFailovers(t *testing.T) {
	s, err := NewState("", false, "127.0.0.1", 30002)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idB))
	require.NoError(t, s.SetTopology(threeNodes(t, 3), false))

	changed, err := s.SetMaster(idA, 0)
	require.NoError(t, err)
	require.False(t, changed, "the master pushed, at epoch 0: nothing to do")
	changed, err = s.SetMaster(idC, 4)
	require.NoError(t, err)
	require.True(t, changed)
	top, _ := s.Topology()
	require.Equal(t, idC, top.Owner(0).ID, "the promoted replica serves the shard's slots")
	require.Equal(t, idC, top.Node(idA).MasterID, "the old master is its replica")
	require.Empty(t, top.Node(idA).Slots)
	require.Equal(t, idB, top.Owner(10000).ID, "the other shard is as it was")
	require.Equal(t, int64(3), s.Version(), "the operator's version")
	require.Equal(t, int64(4), s.Epoch(idA))
	require.Equal(t, int64(4), s.Epoch(idC))
	require.Equal(t, int64(4), s.CurrentEpoch())
	r, n := s.Route(0, false, false, false)
	require.Equal(t, Moved, r)
	require.Equal(t, 30003, n.Port)

	for _, stale := range []struct {
		id    string
		epoch int64
	}{{idA, 3}, {idA, 4}, {idC, 2}} {
		changed, err = s.SetMaster(stale.id, stale.epoch)
		require.NoError(t, err)
		require.False(t, changed, "%s at %d", stale.id, stale.epoch)
		top, _ = s.Topology()
		require.Equal(t, idC, top.Owner(0).ID)
	}
	// Failed back at a later epoch.
	changed, err = s.SetMaster(idA, 7)
	require.NoError(t, err)
	require.True(t, changed)
	top, _ = s.Topology()
	require.Equal(t, idA, top.Owner(0).ID)
	require.Equal(t, idA, top.Node(idC).MasterID)

	_, err = s.SetMaster("ffffffffffffffffffffffffffffffffffffffff", 9)
	require.ErrorContains(t, err, "not in the topology")
}

// A promotion this node is told of (REPLICAOF, which Sentinel sends before it
// reports the switch) is pending: reports of the epoch it was made at, which
// still name the old master, do not undo it; a later epoch confirms it.
func TestPromoteStandsUntilSentinelReports(t *testing.T) {
	s, err := NewState("", false, "127.0.0.1", 30003)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idC))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	changed, err := s.SetMaster(idA, 2)
	require.NoError(t, err)
	require.False(t, changed)

	changed, err = s.Promote(idC)
	require.NoError(t, err)
	require.True(t, changed)
	r, _ := s.Route(0, false, false, false)
	require.Equal(t, Local, r, "REPLICAOF NO ONE: this node serves the shard's slots at once")
	require.True(t, s.Failovers()[idA].Pending)

	changed, err = s.SetMaster(idA, 2)
	require.NoError(t, err)
	require.False(t, changed, "the old master at the old epoch: the promotion stands")
	changed, err = s.SetMaster(idC, 3)
	require.NoError(t, err)
	require.False(t, changed, "confirmed: the same master")
	require.Equal(t, Failover{Master: idC, Epoch: 3}, s.Failovers()[idA])
}

// A node with Sentinels is held from its start until it has heard them:
// it answers CLUSTERDOWN for the slots it would serve as master, and still
// redirects the others. Its Sentinels and the failovers they reported are
// persisted; a pending promotion is not (Sentinel has not said it).
func TestAStateWithSentinelsIsHeldFromItsStart(t *testing.T) {
	dir := t.TempDir()
	s, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idA))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	require.NoError(t, s.SetSentinels([]string{"127.0.0.1:26379", "127.0.0.1:26380"}))
	require.False(t, s.Held(), "Sentinels set on a running node: it serves on")
	_, err = s.SetMaster(idC, 5)
	require.NoError(t, err)

	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.True(t, again.Held())
	require.Equal(t, []string{"127.0.0.1:26379", "127.0.0.1:26380"}, again.Sentinels())
	require.Equal(t, map[string]Failover{idA: {Master: idC, Epoch: 5}}, again.Failovers())
	r, n := again.Route(0, false, false, false)
	require.Equal(t, Moved, r, "the failover persisted: slot 0 is the promoted replica's")
	require.Equal(t, 30003, n.Port)
	_, err = again.SetMaster(idA, 6)
	require.NoError(t, err)
	r, _ = again.Route(0, false, false, false)
	require.Equal(t, Held, r, "its own slot, before the Sentinels are heard")
	require.False(t, again.Mine(0))
	r, _ = again.Route(10000, false, false, false)
	require.Equal(t, Moved, r)
	again.Release()
	r, _ = again.Route(0, false, false, false)
	require.Equal(t, Local, r)
	require.True(t, again.Mine(0))

	_, err = again.Promote(idC)
	require.NoError(t, err)
	third, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.Equal(t, map[string]Failover{idA: {Master: idA, Epoch: 6}}, third.Failovers(), "the pending promotion is not saved")
}

// SETSLOT may name the shard's master by a failover: the slot goes to the
// shard.
func TestSetSlotToAPromotedMaster(t *testing.T) {
	s, err := NewState("", false, "127.0.0.1", 30002)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idB))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	_, err = s.SetMaster(idC, 1)
	require.NoError(t, err)
	require.NoError(t, s.SetSlot(9000, idC, 2))
	top, _ := s.Topology()
	require.Equal(t, idC, top.Owner(9000).ID)
	require.Equal(t, idA, s.Pushed().Owner(9000).ID, "pushed to the shard's master as pushed")
}

// Sentinels cleared release a held node: no one is left to wait for.
func TestClearingTheSentinelsReleasesAHeldNode(t *testing.T) {
	dir := t.TempDir()
	s, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.NoError(t, s.SetNodeID(idA))
	require.NoError(t, s.SetTopology(threeNodes(t, 1), false))
	require.NoError(t, s.SetSentinels([]string{"127.0.0.1:1"}))
	again, err := NewState(dir, false, "127.0.0.1", 30001)
	require.NoError(t, err)
	require.True(t, again.Held())
	require.NoError(t, again.SetSentinels(nil))
	require.False(t, again.Held())
	r, _ := again.Route(0, false, false, false)
	require.Equal(t, Local, r)
}
