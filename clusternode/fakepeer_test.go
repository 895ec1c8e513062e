package clusternode

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
)

// fakePeer is another node that speaks just enough of CLUSTERX IMPORT for a
// test (a testkit.Peer): each command read is kept for drain, then answered
// with what answer returns for it, "" closing the connection instead (a
// process killed: the migrator reads EOF at once).
type fakePeer struct {
	id   string
	port int
	peer *testkit.Peer
}

func startFakePeer(t *testing.T, id string, answer func(args []string) string) *fakePeer {
	t.Helper()
	p := testkit.StartPeer(t, answer)
	return &fakePeer{id: id, port: p.Port, peer: p}
}

// drain returns the commands f has read so far.
func (f *fakePeer) drain() [][]string { return f.peer.Drain() }

// ok answers +OK to every command.
func ok([]string) string { return "+OK\r\n" }

var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idF = strings.Repeat("f", 40)
)

// t0 is the tests' clock: the copies are made at it, and every key set
// expires an hour after.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func later(d time.Duration) gcra.Instant { return gcra.InstantOf(t0.Add(d)) }

// testNode is a node's Migrator and Follower over a fresh cluster.State and
// memStore, the node being id.
type testNode struct {
	m     *Migrator
	f     *Follower
	st    *cluster.State
	store *memStore
	repl  *fakeReplication
}

func newTestNode(t *testing.T, id string) *testNode {
	t.Helper()
	st, err := cluster.NewState("", false, "127.0.0.1", 0)
	require.NoError(t, err)
	require.NoError(t, st.SetNodeID(id))
	n := &testNode{st: st, store: newMemStore(), repl: &fakeReplication{}}
	cfg := Config{State: st, Store: n.store, Now: func() time.Time { return t0 }, Replication: n.repl}
	n.m = NewMigrator(cfg)
	n.f = NewFollower(cfg, n.m)
	return n
}

// setTopology sets the topology of lines ("<id> <port> master|slave
// <master id|-> <slots>", at 127.0.0.1) at version.
func (n *testNode) setTopology(t *testing.T, version int64, lines ...string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		f := strings.SplitN(l, " ", 2)
		b.WriteString(f[0] + " 127.0.0.1 " + f[1] + "\n")
	}
	top, err := cluster.Parse(b.String(), version)
	require.NoError(t, err)
	require.NoError(t, n.st.SetTopology(top, false))
}

// slotKeys returns n keys of slot.
func slotKeys(slot, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := "key" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			keys = append(keys, k)
		}
	}
	return keys
}

// fakeReplication is Replication's twin: it records ReplicaOf's calls.
type fakeReplication struct {
	replica bool
	calls   []string
	offset  int64
}

var _ Replication = (*fakeReplication)(nil)

func (r *fakeReplication) ReplicaOf(host string, port int) (bool, error) {
	r.calls = append(r.calls, host+":"+strconv.Itoa(port))
	already := r.replica == (host != "")
	r.replica = host != ""
	return already, nil
}

func (r *fakeReplication) IsReplica() bool { return r.replica }

func (r *fakeReplication) Offset() int64 { return r.offset }
