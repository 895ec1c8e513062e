package clusternode

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
)

// A topology that gives a slot moved out of this node to its destination
// ends the move and drops the slot's keys here; one that gives a slot moved
// in to this node ends the import and keeps its keys; a move it does not
// conclude goes on.
func TestFollowEndsTheMovesATopologyConcludes(t *testing.T) {
	a := newTestNode(t, idA)
	a.setTopology(t, 1, idA+" 7001 master - 0-8191", idF+" 7009 master - 8192-16383")
	top, _ := a.st.Topology()
	out, in, pending := cluster.Slot([]byte("bar")), 10000, 100
	keys := map[int][]string{}
	for _, slot := range []int{out, in, pending} {
		keys[slot] = slotKeys(slot, 3)
		for _, k := range keys[slot] {
			require.NoError(t, a.store.decide(k, later(time.Hour)))
		}
	}
	f := *top.Node(idF)
	require.NoError(t, a.st.StartMove(&cluster.Move{Slot: out, Peer: f, Out: true}))
	require.NoError(t, a.st.StartMove(&cluster.Move{Slot: in, Peer: f}))
	require.NoError(t, a.st.StartMove(&cluster.Move{Slot: pending, Peer: f, Out: true}))

	a.f.Follow()
	require.Len(t, a.st.Moves(), 3, "the topology in force concludes none")

	next, err := top.WithSlot(out, idF, 2)
	require.NoError(t, err)
	next, err = next.WithSlot(in, idA, 2)
	require.NoError(t, err)
	require.NoError(t, a.st.SetTopology(next, false))
	a.f.Follow()
	require.Nil(t, a.st.Move(out))
	require.Nil(t, a.st.Move(in))
	require.NotNil(t, a.st.Move(pending))
	for slot, held := range map[int]bool{out: false, in: true, pending: true} {
		for _, k := range keys[slot] {
			_, ok := a.store.get(k)
			require.Equal(t, held, ok, "slot %d: %s", slot, k)
		}
	}
	require.Contains(t, a.store.takeCalls(), "delete "+strconv.Itoa(out))
}

// A node the topology lists as a replica replicates the master it names;
// listed as a master, a node that replicates stops; a master stays as it
// is, and a node not in the topology does nothing.
func TestFollowTheTopologysRoles(t *testing.T) {
	b := newTestNode(t, idB)
	b.setTopology(t, 1, idA+" 7001 master - 0-16383")
	b.f.Follow()
	require.Empty(t, b.repl.calls, "not in the topology")

	b.setTopology(t, 2, idA+" 7001 master - 0-16383", idB+" 7002 slave "+idA)
	b.f.Follow()
	require.Equal(t, []string{"127.0.0.1:7001"}, b.repl.calls)

	b.setTopology(t, 3, idB+" 7002 master - 0-16383", idA+" 7001 slave "+idB)
	b.f.Follow()
	require.Equal(t, []string{"127.0.0.1:7001", ":0"}, b.repl.calls, "a master")
	b.f.Follow()
	require.Len(t, b.repl.calls, 2, "a master already")

	cfg := b.f.cfg
	cfg.Replication = nil
	b.setTopology(t, 4, idA+" 7001 master - 0-16383", idB+" 7002 slave "+idA)
	NewFollower(cfg, b.m).Follow()
	require.Len(t, b.repl.calls, 2, "without replication, only the slots are followed")
}
