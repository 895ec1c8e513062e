package clusternode

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/testkit"
)

// A node restarted with a topology older than its peers' (it was down
// while a slot moved) takes the newest a peer holds (CLUSTERX TOPOLOGY)
// before it is released to serve as master: it never decides for the slot
// that moved away. A peer with an older or no answer changes nothing.
func TestARestartedNodeCatchesUpWithItsPeersTopology(t *testing.T) {
	var newer string
	peer := testkit.StartPeer(t, func(args []string) string {
		if fmt.Sprint(args) != "[CLUSTERX TOPOLOGY]" {
			return "-ERR unknown\r\n"
		}
		return "*2\r\n" + testkit.Int(5) + testkit.Bulk(newer)
	})
	old := testkit.StartPeer(t, func(args []string) string { return "*2\r\n" + testkit.Int(2) + testkit.Bulk("") })
	line := func(id string, port int, rest string) string {
		return id + " 127.0.0.1 " + strconv.Itoa(port) + " " + rest + "\n"
	}
	top3 := line(idA, 7001, "master - 0-8191") + line(idF, peer.Port, "master - 8192-16383") + line(idB, old.Port, "slave "+idF)
	newer = line(idA, 7001, "master - 1-8191") + line(idF, peer.Port, "master - 0 8192-16383") + line(idB, old.Port, "slave "+idF)

	s := startFakeSentinel(t)
	dir := t.TempDir()
	st, err := cluster.NewState(dir, false, "127.0.0.1", 7001)
	require.NoError(t, err)
	require.NoError(t, st.SetNodeID(idA))
	top, err := cluster.Parse(top3, 3)
	require.NoError(t, err)
	require.NoError(t, st.SetTopology(top, false))
	require.NoError(t, st.SetSentinels([]string{s.addr}))
	st, err = cluster.NewState(dir, false, "127.0.0.1", 7001) // restarted
	require.NoError(t, err)
	require.True(t, st.Held())
	cfg := Config{State: st, Store: newMemStore(), Now: func() time.Time { return t0 }, Replication: &fakeReplication{}}
	m := NewMigrator(cfg)
	w := NewSentinelWatch(cfg, NewFollower(cfg, m))

	w.poll(context.Background())
	require.False(t, st.Held())
	require.Equal(t, int64(5), st.Version())
	r, n := st.Route(0, false, false, false)
	require.Equal(t, cluster.Moved, r, "slot 0 moved to F while this node was down")
	require.Equal(t, peer.Port, n.Port)
	r, _ = st.Route(1, false, false, false)
	require.Equal(t, cluster.Local, r)
}
