package clusteradmin

import (
	"errors"
	"flag"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// startNode starts an in-process node on 127.0.0.1 in cluster mode
// ("yes"), emulated cluster mode, or not ("no"), with its own random ID.
func startNode(t *testing.T, mode string) *testNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := server.Config{}
	if mode != "no" {
		st, err := cluster.NewState("", mode == "emulated", "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
		require.NoError(t, err)
		cfg.Cluster = st
	}
	srv := server.New(cfg, storage.New(storage.Config{Shards: 8, BySlot: mode != "no"}))
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	c, err := dial(ln.Addr().String(), "", "", 5*time.Second)
	require.NoError(t, err)
	n := &testNode{addr: ln.Addr().String(), srv: srv, c: c}
	if mode != "no" {
		n.id = n.do(t, "CLUSTER", "MYID").(string)
	}
	t.Cleanup(func() { c.close(); _ = srv.Close(); <-done })
	return n
}

func addrsOf(nodes []*testNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// Six nodes, one replica each: the layout redis-cli makes of six nodes on
// one host, pushed at version 1 with each node's own ID; every node serves
// it; the table says it. Run again, nothing is pushed.
func TestCreateMakesRedisCLIsLayout(t *testing.T) {
	var nodes []*testNode
	for range 6 {
		nodes = append(nodes, startNode(t, "yes"))
	}
	var out strings.Builder
	require.NoError(t, Create(CreateOptions{Nodes: addrsOf(nodes), Replicas: 1, Out: &out}))
	a := func(i int) string { return nodes[i].addr }
	require.Equal(t, "6 nodes: 3 masters, 3 replicas\n"+
		"warning: some replicas are on their master's host (there are not hosts enough)\n"+
		"topology pushed to every node at version 1\n"+
		"every node serves it: cluster_state:ok, version 1\n"+
		"\n", out.String()[:strings.Index(out.String(), "SHARD")])
	table := regexp.MustCompile(` +`).ReplaceAllString(out.String()[strings.Index(out.String(), "SHARD"):], " ")
	require.Equal(t, "SHARD MASTER REPLICAS SLOTS\n"+
		"1 "+a(0)+" "+a(4)+" 0-5460 (5461 slots)\n"+
		"2 "+a(1)+" "+a(5)+" 5461-10922 (5462 slots)\n"+
		"3 "+a(2)+" "+a(3)+" 10923-16383 (5461 slots)\n", table)

	line := func(i int, role string) string {
		host, port, _ := net.SplitHostPort(nodes[i].addr)
		return nodes[i].id + " " + host + ":" + port + "@" + strconv.Itoa(mustAtoi(port)+10000) + " " + role
	}
	want := []string{
		line(0, "master") + " - 0 0 1 connected 0-5460",
		line(4, "slave") + " " + nodes[0].id + " 0 0 1 connected",
		line(1, "master") + " - 0 0 1 connected 5461-10922",
		line(5, "slave") + " " + nodes[1].id + " 0 0 1 connected",
		line(2, "master") + " - 0 0 1 connected 10923-16383",
		line(3, "slave") + " " + nodes[2].id + " 0 0 1 connected",
	}
	for _, n := range nodes {
		require.Equal(t, int64(1), n.do(t, "CLUSTERX", "VERSION"))
		got := strings.ReplaceAll(n.do(t, "CLUSTER", "NODES").(string), "myself,", "")
		require.Equal(t, strings.Join(want, "\n")+"\n", got, n.addr)
	}

	out.Reset()
	require.NoError(t, Create(CreateOptions{Nodes: addrsOf(nodes), Replicas: 1, Out: &out}))
	require.Contains(t, out.String(), "every node has this topology already, at version 1: nothing pushed\n")
	require.Contains(t, out.String(), "\n1  ")
	for _, n := range nodes {
		require.Equal(t, int64(1), n.do(t, "CLUSTERX", "VERSION"))
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// The version pushed is one more than the highest any node has: a node
// that was alone in a topology at version 5 (and holds no key) may join.
// A node that missed the push is given it when run again.
func TestCreatePushesAboveEveryNodesVersion(t *testing.T) {
	var nodes []*testNode
	for range 3 {
		nodes = append(nodes, startNode(t, "yes"))
	}
	nodes[1].do(t, "CLUSTERX", "SETNODES", nodes[1].line("master -", "0-16383"), 5)
	var out strings.Builder
	require.NoError(t, Create(CreateOptions{Nodes: addrsOf(nodes), Out: &out}))
	require.Contains(t, out.String(), "topology pushed to every node at version 6\n")
	text := strings.ReplaceAll(nodes[0].do(t, "CLUSTER", "NODES").(string), "myself,", "")
	for _, n := range nodes {
		require.Equal(t, int64(6), n.do(t, "CLUSTERX", "VERSION"))
	}

	// Run again after one node was given the same layout at a newer
	// version: every node gets it at one more.
	nodes[2].do(t, "CLUSTERX", "SETNODES", topologyOf(t, nodes[0]), 9)
	out.Reset()
	require.NoError(t, Create(CreateOptions{Nodes: addrsOf(nodes), Out: &out}))
	require.Contains(t, out.String(), "topology pushed to every node at version 10\n")
	for _, n := range nodes {
		require.Equal(t, int64(10), n.do(t, "CLUSTERX", "VERSION"))
		require.Equal(t, strings.ReplaceAll(text, " 6 connected", " 10 connected"), strings.ReplaceAll(n.do(t, "CLUSTER", "NODES").(string), "myself,", ""))
	}
}

// topologyOf is node n's topology in SETNODES's format.
func topologyOf(t *testing.T, n *testNode) string {
	t.Helper()
	nodes, err := parseNodes(n.do(t, "CLUSTER", "NODES").(string))
	require.NoError(t, err)
	return setNodesText(nodes)
}

// A node that cannot be part of a new cluster is refused, naming it, and
// nothing is pushed to any: one not in cluster mode, one that does not
// answer, one holding keys, one holding a topology of other nodes (or
// another layout of the same), two nodes with one ID.
func TestCreateRefusesANodeThatIsNotEmpty(t *testing.T) {
	fresh := []*testNode{startNode(t, "yes"), startNode(t, "yes")}
	check := func(n *testNode, want string) {
		t.Helper()
		err := Create(CreateOptions{Nodes: append(addrsOf(fresh), n.addr)})
		require.EqualError(t, err, strings.ReplaceAll(want, "{node}", n.addr))
		for _, f := range fresh {
			require.Equal(t, int64(-1), f.do(t, "CLUSTERX", "VERSION"), "nothing pushed")
		}
	}
	check(startNode(t, "no"), "{node} is not in cluster mode: start it with --cluster-enabled yes")

	keys := startNode(t, "emulated")
	keys.do(t, "CL.THROTTLE", "k", 10, 1, 60)
	check(keys, "{node} is not empty: it holds 1 key; a node of a new cluster must hold none (FLUSHALL, or a fresh --dir)")

	other, peer := startNode(t, "yes"), startNode(t, "yes")
	top := other.line("master -", "0-100") + peer.line("master -", "101-16383")
	other.do(t, "CLUSTERX", "SETNODES", top, 1)
	check(other, "{node} is not empty: it holds a topology of 2 nodes at version 1 that is not this layout (CLUSTER NODES); "+
		"a node of a new cluster must be part of none: start it with a fresh --dir")

	// The same nodes, another layout: refused too.
	third := startNode(t, "yes")
	require.NoError(t, Create(CreateOptions{Nodes: []string{fresh[0].addr, fresh[1].addr, third.addr}}))
	err := Create(CreateOptions{Nodes: []string{fresh[0].addr, fresh[1].addr, third.addr}, Replicas: 2})
	require.ErrorContains(t, err, fresh[0].addr+" is not empty: it holds a topology of 3 nodes at version 1 that is not this layout")
	fresh = []*testNode{startNode(t, "yes"), startNode(t, "yes")}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := &testNode{addr: ln.Addr().String()}
	require.NoError(t, ln.Close())
	check(gone, "{node}: connecting: dial tcp {node}: connect: connection refused")

	twin := startNode(t, "yes")
	twin.do(t, "CLUSTERX", "SETNODEID", fresh[0].id)
	check(twin, fresh[0].addr+" and {node} have the same ID, "+fresh[0].id+": give one of them another (CLUSTERX SETNODEID) or a fresh --dir")

	err = Create(CreateOptions{Nodes: []string{fresh[0].addr, fresh[0].addr}})
	require.EqualError(t, err, fresh[0].addr+" and "+fresh[0].addr+" are the same node, "+fresh[0].addr)
	err = Create(CreateOptions{Nodes: addrsOf(fresh), Replicas: 2})
	require.EqualError(t, err, "2 nodes cannot make a master and 2 replicas: give 3 nodes at least")
}

// create's command line: the nodes and the flags in any order, every
// flag's value checked.
func TestParseCreate(t *testing.T) {
	o, err := ParseCreate([]string{"10.0.0.1:6379", "--replicas", "1", "10.0.0.2:6379", "--sentinels", "s1:26379,s2:26379,s3:26379",
		"10.0.0.3:6379", "--down-after=1s", "--password", "pw", "--sentinel-prefix", "limits"})
	require.NoError(t, err)
	require.Equal(t, CreateOptions{
		Nodes: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, Replicas: 1,
		Sentinels: []string{"s1:26379", "s2:26379", "s3:26379"}, Password: "pw", SentinelPrefix: "limits",
		DownAfter: time.Second, FailoverTimeout: DefaultFailoverTimeout, Timeout: DefaultTimeout, Wait: DefaultWait,
	}, o)

	o, err = ParseCreate([]string{"a:1"})
	require.NoError(t, err)
	require.Equal(t, DefaultSentinelPrefix, o.SentinelPrefix)
	require.Equal(t, 5*time.Second, o.DownAfter)
	require.Nil(t, o.Sentinels)

	for args, want := range map[string]string{
		"":                                  "no nodes given: create host:port [host:port ...]",
		"a:1 --replicas -1":                 "--replicas -1: must be 0 or more",
		"a:1 --replicas x":                  `invalid value "x" for --replicas: must be a whole number`,
		"a:1 --down-after 1000":             `invalid value "1000" for --down-after: a duration needs a unit, as 1s or 500ms`,
		"a:1 --down-after 0s":               "--down-after 0s: must be 1ms or more",
		"a:1 --sentinels s1:26379,s1:26379": "--sentinels: s1:26379 is given twice",
		"a:1 --sentinels s1":                `--sentinels: "s1": want host:port, comma-separated`,
		"a --replicas 1":                    `"a": want host:port`,
		"a:1 --sentinel-prefix=":            `--sentinel-prefix "": must be a word`,
		"a:1 --replica 1":                   "unknown flag --replica: did you mean --replicas?",
		"a:1 --wait 0s":                     "--wait 0s: must be positive",
		"a:1 --failover-timeout 0s":         "--failover-timeout 0s: must be 1ms or more",
		"a:1 --timeout -1s":                 "--timeout -1s: must be positive",
		"a:1 --sentinels s1:26379,s2:0":     `--sentinels: "s2:0": want host:port, comma-separated`,
		"a:1 --sentinels s1:26379,":         `--sentinels "s1:26379,": an empty item`,
	} {
		_, err := ParseCreate(strings.Fields(args))
		require.EqualError(t, err, want, args)
	}
	_, err = ParseCreate([]string{"a:1", "--help"})
	require.True(t, errors.Is(err, flag.ErrHelp))
}

// redcell cluster create's exit statuses and messages.
func TestCreateMain(t *testing.T) {
	var stdout, stderr strings.Builder
	require.Equal(t, 2, Main([]string{"create", "--replicas", "1"}, &stdout, &stderr))
	require.Equal(t, "redcell cluster create: no nodes given: create host:port [host:port ...]\nTry 'redcell cluster --help'.\n", stderr.String())

	n := startNode(t, "no")
	stderr.Reset()
	require.Equal(t, 1, Main([]string{"create", n.addr}, &stdout, &stderr))
	require.Equal(t, "redcell cluster create: "+n.addr+" is not in cluster mode: start it with --cluster-enabled yes\n", stderr.String())

	stdout.Reset()
	require.Equal(t, 0, Main([]string{"create", "--help"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "redcell cluster create host:port [host:port ...] [--replicas n]")
}

// --user makes every connection authenticate as that ACL user, and is
// Sentinel's auth-user for the shards.
func TestUserAuthenticatesAsAnACLUser(t *testing.T) {
	o, err := ParseCreate([]string{"127.0.0.1:1", "--user", "ops", "--password", "s3cret"})
	require.NoError(t, err)
	require.Equal(t, "ops", o.User)
	require.Equal(t, "s3cret", o.Password)
	peer := testkit.StartPeer(t, func(args []string) string { return "+OK\r\n" })
	c, err := dial(peer.Addr, "ops", "s3cret", 5*time.Second)
	require.NoError(t, err)
	c.close()
	require.Equal(t, [][]string{{"AUTH", "ops", "s3cret"}}, peer.Drain())
}
