package clusternode

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
)

var (
	idC = strings.Repeat("c", 40)
	idG = strings.Repeat("9", 40)
)

// fourNodes is two shards of two: A (7001) with its replica C (7003) serves
// 0-8191, F (7009) with its replica G (7010) the rest.
func fourNodes(t *testing.T, n *testNode) {
	t.Helper()
	n.setTopology(t, 1, idA+" 7001 master - 0-8191", idC+" 7003 slave "+idA,
		idF+" 7009 master - 8192-16383", idG+" 7010 slave "+idF)
}

// A failover ends the moves it breaks, so that each slot stays whole on one
// node: on the source, a slot that reached its destination (Asking) whose
// shard then failed over is served here again; on a destination, an import
// whose source's shard failed over is dropped.
func TestAFailoverEndsTheMovesItBreaks(t *testing.T) {
	a := newTestNode(t, idA)
	fourNodes(t, a)
	top, _ := a.st.Topology()
	asking, copying := 100, 200
	for _, slot := range []int{asking, copying} {
		for _, k := range slotKeys(slot, 2) {
			require.NoError(t, a.store.decide(k, later(time.Hour)))
		}
		mv := &cluster.Move{Slot: slot, Peer: *top.Node(idF), Out: true}
		require.NoError(t, a.st.StartMove(mv))
		if slot == asking {
			mv.Thaw(cluster.Asking)
		}
	}
	_, err := a.st.SetMaster(idG, 1) // the destination's shard fails over
	require.NoError(t, err)
	a.f.Follow()
	require.Nil(t, a.st.Move(asking), "no longer sent to a destination that is no master")
	r, _ := a.st.Route(asking, false, false, false)
	require.Equal(t, cluster.Local, r, "served here again")
	for _, k := range slotKeys(asking, 2) {
		_, ok := a.store.get(k)
		require.True(t, ok, "the slot's keys are kept: it is whole here")
	}
	require.NotNil(t, a.st.Move(copying), "a copy in progress gives up on its own, its peer gone")

	f := newTestNode(t, idF)
	fourNodes(t, f)
	ftop, _ := f.st.Topology()
	imported := 300
	require.NoError(t, f.st.StartMove(&cluster.Move{Slot: imported, Peer: *ftop.Node(idA)}))
	for _, k := range slotKeys(imported, 2) {
		require.NoError(t, f.store.decide(k, later(time.Hour)))
	}
	_, err = f.st.SetMaster(idC, 1) // the source's shard fails over
	require.NoError(t, err)
	f.f.Follow()
	require.Nil(t, f.st.Move(imported))
	require.Zero(t, f.store.CountInSlot(imported), "the part imported is dropped")
}

// A replica promoted by a failover drops the keys it holds of slots it does
// not serve (what its old master was importing when it failed, replicated
// to it), and keeps its shard's.
func TestAPromotedReplicaDropsStrayKeys(t *testing.T) {
	c := newTestNode(t, idC)
	fourNodes(t, c)
	c.repl.replica = true
	mine, stray := 100, 9000
	for _, slot := range []int{mine, stray} {
		for _, k := range slotKeys(slot, 2) {
			require.NoError(t, c.store.decide(k, later(time.Hour)))
		}
	}
	c.f.Follow()
	require.Equal(t, 2, c.store.CountInSlot(stray), "a replica holds what its master holds")

	require.NoError(t, c.f.Promote(idC)) // REPLICAOF NO ONE, as Sentinel sends it
	require.Equal(t, []string{"127.0.0.1:7001", ":0"}, c.repl.calls, "replicated its master, then a master")
	require.Zero(t, c.store.CountInSlot(stray))
	require.Equal(t, 2, c.store.CountInSlot(mine))
	r, _ := c.st.Route(mine, false, false, false)
	require.Equal(t, cluster.Local, r)
}
