package clusteradmin

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// testNode is an in-process redcell node in cluster mode, on 127.0.0.1.
type testNode struct {
	id   string
	addr string
	srv  *server.Server
	st   *cluster.State
	c    *conn
}

// startNodes starts one node for each ID, with password pass ("" for none).
func startNodes(t *testing.T, pass string, ids ...string) []*testNode {
	t.Helper()
	var nodes []*testNode
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		st, err := cluster.NewState("", false, "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
		require.NoError(t, err)
		require.NoError(t, st.SetNodeID(id))
		srv := server.New(server.Config{Cluster: st, RequirePass: pass}, storage.New(storage.Config{Shards: 8, BySlot: true}))
		done := make(chan struct{})
		go func() { _ = srv.Serve(ln); close(done) }()
		c, err := dial(ln.Addr().String(), "", pass, 5*time.Second)
		require.NoError(t, err)
		n := &testNode{id: id, addr: ln.Addr().String(), srv: srv, st: st, c: c}
		t.Cleanup(func() { c.close(); _ = srv.Close(); <-done })
		nodes = append(nodes, n)
	}
	return nodes
}

func (n *testNode) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := n.try(args...)
	require.NoError(t, err, "%s: %v", n.addr, args)
	return v
}

func (n *testNode) try(args ...any) (any, error) {
	s := make([]string, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			s[i] = a
		case int:
			s[i] = strconv.Itoa(a)
		default:
			panic(a)
		}
	}
	return n.c.do(s...)
}

// line is node n's line of a topology, its slots from-to or none.
func (n *testNode) line(role string, slots string) string {
	host, port, _ := net.SplitHostPort(n.addr)
	return n.id + " " + host + " " + port + " " + role + " " + slots + "\n"
}

// keysIn returns count keys of slot.
func keysIn(slot, count int) []string {
	var keys []string
	for i := 0; len(keys) < count; i++ {
		if k := "k" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			keys = append(keys, k)
		}
	}
	return keys
}

// A three-master cluster with a replica: two slots of A move to B, a third
// B serves already is skipped; each key's state arrives exact, every node
// takes each slot's owner, A answers MOVED and holds none of the keys.
func TestReshardMovesSlotsAndPushesTheirOwner(t *testing.T) {
	nodes := startNodes(t, "pw", idA, idB, idC, idR)
	a, b, c, r := nodes[0], nodes[1], nodes[2], nodes[3]
	top := a.line("master -", "0-5999") + b.line("master -", "6000-10999") + c.line("master -", "11000-16383") + r.line("slave "+idC, "")
	for _, n := range nodes {
		require.Equal(t, "OK", n.do(t, "CLUSTERX", "SETNODES", top, 7))
	}
	slots := []int{5061, 5798}
	state := map[string]any{}
	for k, slot := range slots {
		for i, key := range keysIn(slot, 20+k) {
			for range i%5 + 1 {
				a.do(t, "CL.THROTTLE", key, 1000, 1, 3600)
			}
			state[key] = a.do(t, "GET", key)
		}
	}

	var out strings.Builder
	err := Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{5061, 5798, 6000}, Password: "pw", Out: &out})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String())
	require.Equal(t, "topology version 7, 4 nodes: moving 2 slots from "+a.addr+" ("+idA+") to "+b.addr+" ("+idB+")", lines[0])
	require.Equal(t, "slot 6000: served by "+b.addr+" already, skipped", lines[1])
	require.Regexp(t, `^slot 5061: 20 keys moved in [0-9.]+[µm]?s \(1/2\)$`, lines[2])
	require.Regexp(t, `^slot 5798: 21 keys moved in [0-9.]+[µm]?s \(2/2\)$`, lines[3])
	require.Regexp(t, `^moved 2 slots, 41 keys, in [0-9.]+[µm]?s: topology version 9$`, lines[4])

	for _, n := range nodes {
		require.Equal(t, int64(9), n.do(t, "CLUSTERX", "VERSION"), n.addr)
	}
	for k, slot := range slots {
		require.Equal(t, int64(0), a.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot), "the source dropped its copy")
		require.Equal(t, int64(20+k), b.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot))
		for _, key := range keysIn(slot, 20+k) {
			require.Equal(t, state[key], b.do(t, "GET", key), "%s's state, exact", key)
			_, err := a.try("GET", key)
			require.EqualError(t, err, "MOVED "+strconv.Itoa(slot)+" "+b.addr)
		}
	}
	err = Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{5000}, Password: "nope"})
	require.EqualError(t, err, a.addr+": connecting: AUTH: WRONGPASS invalid username-password pair or user is disabled.")

	nodesLine := b.do(t, "CLUSTER", "NODES").(string)
	require.Contains(t, nodesLine, idB+" "+b.addr+"@")
	require.Contains(t, nodesLine, " connected 5061 5798 6000-10999\n", "B's slots, with no move left")
}

// Run again after it moved everything, it moves nothing.
func TestReshardSkipsSlotsMovedAlready(t *testing.T) {
	nodes := startNodes(t, "", idA, idB)
	a, b := nodes[0], nodes[1]
	top := a.line("master -", "0-99") + b.line("master -", "100-16383")
	for _, n := range nodes {
		n.do(t, "CLUSTERX", "SETNODES", top, 1)
	}
	require.NoError(t, Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{5, 6}}))
	var out strings.Builder
	require.NoError(t, Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{5, 6}, Out: &out}))
	require.Equal(t, "topology version 3, 2 nodes: moving 0 slots from "+a.addr+" ("+idA+") to "+b.addr+" ("+idB+")\n"+
		"slot 5: served by "+b.addr+" already, skipped\n"+
		"slot 6: served by "+b.addr+" already, skipped\n", out.String()[:strings.LastIndex(out.String(), "moved 0 slots")])
}

// Errors name the node and the command, and nothing moves when the nodes
// disagree on the topology.
func TestReshardErrorsNameTheNodeAndCommand(t *testing.T) {
	nodes := startNodes(t, "", idA, idB, idC)
	a, b, c := nodes[0], nodes[1], nodes[2]
	top := a.line("master -", "0-99") + b.line("master -", "100-199") + c.line("master -", "200-16383")
	for _, n := range nodes {
		n.do(t, "CLUSTERX", "SETNODES", top, 1)
	}

	c.do(t, "CLUSTERX", "SETSLOT", 300, "NODE", idB, 2)
	err := Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{5}})
	require.EqualError(t, err, "the nodes disagree on the topology: "+a.addr+" ("+idA+") has version 1, but "+
		c.addr+" ("+idC+") has version 2; push one topology to every node (CLUSTERX SETNODES) first")
	require.Equal(t, int64(1), a.do(t, "CLUSTERX", "VERSION"))
	a.do(t, "CLUSTERX", "SETSLOT", 300, "NODE", idB, 2)
	b.do(t, "CLUSTERX", "SETSLOT", 300, "NODE", idB, 2)

	// Slot 5 moving already (a migration done but not yet pushed): MIGRATE
	// is refused, and the reshard stops with what A answered.
	a.do(t, "CLUSTERX", "MIGRATE", 5, idC, "SYNC")
	err = Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{4, 5, 6}})
	require.EqualError(t, err, "slot 5 stays on "+a.addr+": "+a.addr+" ("+idA+"): CLUSTERX MIGRATE 5 "+idB+" SYNC: ERR slot 5 is already moving")
	require.Equal(t, int64(3), b.do(t, "CLUSTERX", "VERSION"), "slot 4 moved first")
	var nerr *NodeError
	require.ErrorAs(t, err, &nerr)
	require.Equal(t, "CLUSTERX MIGRATE 5 "+idB+" SYNC", nerr.Command)

	err = Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{250}})
	require.EqualError(t, err, "slot 250 is served by "+c.addr+" ("+idC+"), not --from, "+a.addr+" ("+idA+")")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr().String()
	require.NoError(t, ln.Close())
	err = Reshard(ReshardOptions{From: a.addr, To: gone, Slots: []int{6}})
	require.ErrorContains(t, err, gone+": connecting: dial tcp "+gone+": connect: connection refused")
}

// down stops node n as a crash would for its peers: it accepts no
// connection, and the ones open are dropped.
func (n *testNode) down(t *testing.T) {
	t.Helper()
	require.NoError(t, n.srv.Close())
	_, _ = n.try("CLIENT", "KILL", "TYPE", "normal") // this connection too
	n.c.close()
}

// A failover of the source's shard, then of the destination's, in the
// middle of a reshard (Sentinel's report applied to every node that is
// up, as their SentinelWatch does): each slot's move is tried again with
// the topology read again, from the promoted source to the promoted
// destination, and the nodes that went down are named at the end, behind.
func TestReshardGoesOnAcrossFailovers(t *testing.T) {
	const idRB = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	nodes := startNodes(t, "", idA, idB, idR, idRB)
	a, b, ra, rb := nodes[0], nodes[1], nodes[2], nodes[3]
	top := a.line("master -", "0-8191") + b.line("master -", "8192-16383") + ra.line("slave "+idA, "") + rb.line("slave "+idB, "")
	for _, n := range nodes {
		n.do(t, "CLUSTERX", "SETNODES", top, 3)
		// Sentinels decide the failovers (the test applies their reports).
		require.NoError(t, n.st.SetSentinels([]string{"127.0.0.1:1"}))
	}
	failover := func(dead, promoted *testNode, live ...*testNode) {
		dead.down(t)
		for _, n := range live {
			changed, err := n.st.SetMaster(promoted.id, 1)
			require.NoError(t, err)
			require.True(t, changed)
		}
	}
	var out strings.Builder
	err := Reshard(ReshardOptions{From: a.addr, To: b.addr, Slots: []int{10, 11, 12}, Out: &out, Timeout: 5 * time.Second,
		beforeMove: func(slot int) {
			switch slot {
			case 11:
				failover(a, ra, b, ra, rb)
			case 12:
				failover(b, rb, ra, rb)
			}
		}})
	require.EqualError(t, err, "the slots moved, but these nodes did not answer and hold an older topology: "+
		a.addr+" ("+idA+") (from version 5: dial tcp "+a.addr+": connect: connection refused), "+
		b.addr+" ("+idB+") (from version 6: dial tcp "+b.addr+": connect: connection refused); "+
		"once they are back, run this reshard again (each slot is skipped, and a replica behind is given the topology)")
	t.Log(out.String())
	require.Regexp(t, `(?s)^topology version 3, 4 nodes: moving 3 slots from `+a.addr+` \(`+idA+`\) to `+b.addr+` \(`+idB+`\)\n`+
		`slot 10: 0 keys moved in \S+ \(1/3\)\n`+
		`slot 11: .*; trying again with the topology read again \(2\)\n`+
		`the masters now: `+ra.addr+` \(`+idR+`\) from, `+b.addr+` \(`+idB+`\) to\n`+
		`.*`+a.addr+` \(`+idA+`\) does not answer \(.*\): left behind from version 5\n`+
		`slot 11: 0 keys moved in \S+ \(2/3\)\n`+
		`slot 12: .*; trying again with the topology read again \(2\)\n`+
		`the masters now: `+ra.addr+` \(`+idR+`\) from, `+rb.addr+` \(`+idRB+`\) to\n`+
		`.*`+b.addr+` \(`+idB+`\) does not answer \(.*\): left behind from version 6\n`+
		`slot 12: 0 keys moved in \S+ \(3/3\)\n`+
		`moved 3 slots, 0 keys, in \S+: topology version 6\n$`, out.String())
	for _, n := range []*testNode{ra, rb} {
		require.Equal(t, int64(6), n.do(t, "CLUSTERX", "VERSION"))
		text := n.do(t, "CLUSTER", "NODES").(string)
		require.Contains(t, text, idRB+" "+rb.addr+"@")
		require.Regexp(t, idRB+` \S+ (myself,)?master - 0 0 \d+ connected 10-12 8192-16383\n`, text)
		require.Regexp(t, idR+` \S+ (myself,)?master - 0 0 \d+ connected 0-9 13-8191\n`, text)
	}

	// The old source back, told by Sentinel of both shards' failovers (as
	// its SentinelWatch hears them after a restart) and so a replica now:
	// run again, the reshard gives it the topology it missed; the old
	// destination, still down, is left behind again.
	a.restart(t)
	for _, promoted := range []*testNode{ra, rb} {
		_, err = a.st.SetMaster(promoted.id, 1)
		require.NoError(t, err)
	}
	require.Equal(t, int64(4), a.do(t, "CLUSTERX", "VERSION"))
	out.Reset()
	err = Reshard(ReshardOptions{From: ra.addr, To: rb.addr, Slots: []int{10, 11, 12}, Out: &out, Timeout: 5 * time.Second})
	require.EqualError(t, err, "the slots moved, but these nodes did not answer and hold an older topology: "+
		b.addr+" ("+idB+") (from version 6: dial tcp "+b.addr+": connect: connection refused); "+
		"once they are back, run this reshard again (each slot is skipped, and a replica behind is given the topology)")
	require.Regexp(t, `\ntopology version 6, 4 nodes: moving 0 slots from `+ra.addr+` \(`+idR+`\) to `+rb.addr+` \(`+idRB+`\)\n`, out.String())
	require.Contains(t, out.String(), b.addr+" ("+idB+") does not answer (dial tcp "+b.addr+": connect: connection refused): a replica, left behind\n")
	require.Contains(t, out.String(), a.addr+" ("+idA+"), a replica, had version 4: given the topology at version 6\n")
	require.Equal(t, int64(6), a.do(t, "CLUSTERX", "VERSION"))
	require.Equal(t, ra.do(t, "CLUSTER", "NODES"), strings.Replace(strings.Replace(a.do(t, "CLUSTER", "NODES").(string),
		"myself,", "", 1), idR+" "+ra.addr+"@"+strconv.Itoa(mustAtoi(ra.addr[strings.LastIndex(ra.addr, ":")+1:])+10000)+" ",
		idR+" "+ra.addr+"@"+strconv.Itoa(mustAtoi(ra.addr[strings.LastIndex(ra.addr, ":")+1:])+10000)+" myself,", 1))
}

// restart starts node n again, down, on its address with its state.
func (n *testNode) restart(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", n.addr)
	require.NoError(t, err)
	n.srv = server.New(server.Config{Cluster: n.st}, storage.New(storage.Config{Shards: 8, BySlot: true}))
	done := make(chan struct{})
	srv := n.srv
	go func() { _ = srv.Serve(ln); close(done) }()
	n.c, err = dial(n.addr, "", "", 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { n.c.close(); _ = srv.Close(); <-done })
}
