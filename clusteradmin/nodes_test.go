package clusteradmin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// After reshards the version is far above 1 (one a slot moved): add-node
// reads every node's version and pushes above it, so the push is not
// refused as stale; del-node takes the node out again at the next one and
// leaves it alone, empty, able to join a cluster again.
func TestAddNodeAndDelNodePushAboveTheVersion(t *testing.T) {
	a, b, c := startNode(t, "yes"), startNode(t, "yes"), startNode(t, "yes")
	top := a.line("master -", "0-5460") + b.line("master -", "5461-10922") + c.line("master -", "10923-16383")
	for _, n := range []*testNode{a, b, c} {
		n.do(t, "CLUSTERX", "SETNODES", top, 102)
	}
	d := startNode(t, "yes")
	var out strings.Builder
	require.NoError(t, AddNode(NodeOptions{New: d.addr, Existing: b.addr, Master: true, Out: &out}))
	require.Equal(t, d.addr+" ("+d.id+") added as a master without slots: topology version 103 pushed to every node\n\n"+
		"MASTER           REPLICAS  SLOTS\n"+
		a.addr+"  -         0-5460 (5461 slots)\n"+
		b.addr+"  -         5461-10922 (5462 slots)\n"+
		c.addr+"  -         10923-16383 (5461 slots)\n"+
		d.addr+"  -         - (0 slots)\n", out.String())
	for _, n := range []*testNode{a, b, c, d} {
		require.Equal(t, int64(103), n.do(t, "CLUSTERX", "VERSION"), n.addr)
		require.Contains(t, n.do(t, "CLUSTER", "NODES"), d.id+" "+d.addr+"@")
	}

	err := AddNode(NodeOptions{New: d.addr, Existing: a.addr})
	require.EqualError(t, err, d.addr+" is a node of the cluster already, as "+d.addr+" ("+d.id+")")
	e := startNode(t, "yes")
	err = AddNode(NodeOptions{New: e.addr, Existing: a.addr, ReplicaOf: strings.Repeat("f", 40)})
	require.EqualError(t, err, "--replica-of "+strings.Repeat("f", 40)+": no master of the cluster has that ID (CLUSTER NODES)")
	keys := startNode(t, "emulated")
	keys.do(t, "CL.THROTTLE", "k", 10, 1, 60)
	err = AddNode(NodeOptions{New: keys.addr, Existing: a.addr})
	require.EqualError(t, err, keys.addr+" is not empty: it holds 1 key; a node joining a cluster must hold none (FLUSHALL, or a fresh --dir)")
	err = AddNode(NodeOptions{New: e.addr, Existing: e.addr})
	require.EqualError(t, err, e.addr+" has no topology: make a cluster first (redcell cluster create)")

	err = DelNode(NodeOptions{Existing: a.addr, ID: b.id})
	require.EqualError(t, err, b.addr+" ("+b.id+") serves 5462 slots: move them to other masters first (redcell cluster reshard --from "+b.addr+" ...)")
	err = DelNode(NodeOptions{Existing: a.addr, ID: e.id})
	require.EqualError(t, err, e.id+": no node of the cluster has that ID (CLUSTER NODES of "+a.addr+")")

	out.Reset()
	require.NoError(t, DelNode(NodeOptions{Existing: a.addr, ID: d.id, Out: &out}))
	require.Equal(t, d.addr+" ("+d.id+") removed: topology version 104 pushed to every other node\n"+
		d.addr+" ("+d.id+") is alone in a topology of its own now, with no Sentinels and no keys\n\n"+
		"MASTER           REPLICAS  SLOTS\n"+
		a.addr+"  -         0-5460 (5461 slots)\n"+
		b.addr+"  -         5461-10922 (5462 slots)\n"+
		c.addr+"  -         10923-16383 (5461 slots)\n", out.String())
	for _, n := range []*testNode{a, b, c} {
		require.Equal(t, int64(104), n.do(t, "CLUSTERX", "VERSION"), n.addr)
		require.NotContains(t, n.do(t, "CLUSTER", "NODES"), d.id)
	}
	require.Equal(t, strings.Replace(d.line("master -", ""), " - \n", " -\n", 1), topologyOf(t, d))
	require.Equal(t, int64(0), d.do(t, "DBSIZE"))

	// Alone and empty, it may be made part of a cluster again.
	out.Reset()
	require.NoError(t, AddNode(NodeOptions{New: d.addr, Existing: c.addr, Master: true, Out: &out}))
	require.Contains(t, out.String(), "added as a master without slots: topology version 105 pushed to every node\n")
}

// add-node's and del-node's command lines.
func TestParseNode(t *testing.T) {
	o, err := ParseNode("add-node", []string{"10.0.0.4:6379", "--replica-of", strings.Repeat("a", 40), "10.0.0.1:6379", "--password", "pw"})
	require.NoError(t, err)
	require.Equal(t, NodeOptions{New: "10.0.0.4:6379", Existing: "10.0.0.1:6379", ReplicaOf: strings.Repeat("a", 40), Password: "pw",
		SentinelPrefix: DefaultSentinelPrefix, Timeout: DefaultTimeout, Wait: DefaultWait}, o)
	o, err = ParseNode("del-node", []string{"10.0.0.1:6379", strings.Repeat("b", 40)})
	require.NoError(t, err)
	require.Equal(t, NodeOptions{Existing: "10.0.0.1:6379", ID: strings.Repeat("b", 40), Timeout: DefaultTimeout, Wait: DefaultWait}, o)
	for _, c := range []struct{ cmd, args, want string }{
		{"add-node", "a:1", "want the new node and a node of the cluster: add-node new-host:port existing-host:port"},
		{"add-node", "a:1 b:2 --master --replica-of x", "--master and --replica-of: give one"},
		{"add-node", "a b:2", `"a": want host:port`},
		{"del-node", "a:1", "want a node of the cluster and the ID of the node to remove: del-node existing-host:port node-id"},
		{"del-node", "a:1 x --master", "unknown flag --master"},
		{"del-node", "a:1 x --wait 0s", "--wait 0s: must be positive"},
	} {
		_, err := ParseNode(c.cmd, strings.Fields(c.args))
		require.EqualError(t, err, c.want, "%s %s", c.cmd, c.args)
	}
}
