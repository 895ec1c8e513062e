package server

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// clusterNode is one in-process cluster node.
type clusterNode struct {
	id   string
	port int
	srv  *Server
	rdb  *redis.Client
}

func startClusterNodes(t *testing.T, n int) []*clusterNode {
	t.Helper()
	var nodes []*clusterNode
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		st, err := cluster.NewState("", false, "127.0.0.1", port)
		require.NoError(t, err)
		id := strings.Repeat(string(rune('a'+i)), 40)
		require.NoError(t, st.SetNodeID(id))
		srv := New(Config{Cluster: st}, storage.New(storage.Config{Shards: 8, BySlot: true}))
		done := make(chan struct{})
		go func() { _ = srv.Serve(ln); close(done) }()
		rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2})
		t.Cleanup(func() { _ = rdb.Close(); _ = srv.Close(); <-done })
		nodes = append(nodes, &clusterNode{id: id, port: port, srv: srv, rdb: rdb})
	}
	return nodes
}

// topology gives each node an equal share of the slots.
func topology(nodes []*clusterNode) string {
	var b strings.Builder
	per := cluster.Slots / len(nodes)
	for i, n := range nodes {
		from, to := i*per, (i+1)*per-1
		if i == len(nodes)-1 {
			to = cluster.Slots - 1
		}
		b.WriteString(n.id + " 127.0.0.1 " + strconv.Itoa(n.port) + " master - " + strconv.Itoa(from) + "-" + strconv.Itoa(to) + "\n")
	}
	return b.String()
}

func (n *clusterNode) do(t *testing.T, args ...any) (any, error) {
	t.Helper()
	return n.rdb.Do(context.Background(), args...).Result()
}

func TestClusterRoutesAndMigratesASlotExactly(t *testing.T) {
	nodes := startClusterNodes(t, 3)
	a, b := nodes[0], nodes[1]
	_, err := a.do(t, "CL.THROTTLE", "k", 1, 1, 1)
	require.EqualError(t, err, "CLUSTERDOWN This node is not part of the cluster topology (CLUSTERX SETNODES)")
	top := topology(nodes)
	for _, n := range nodes {
		v, err := n.do(t, "CLUSTERX", "SETNODES", top, 1)
		require.NoError(t, err)
		require.Equal(t, "OK", v)
	}
	_, err = a.do(t, "CLUSTERX", "SETNODES", top, 1)
	require.ErrorContains(t, err, "the version is not newer")
	v, _ := a.do(t, "CLUSTERX", "VERSION")
	require.Equal(t, int64(1), v)

	// "{a}" hashes to slot 15495 (node c), "foo" to 12182 (c), "bar" to 5061 (a).
	slot := cluster.Slot([]byte("bar"))
	require.Equal(t, 5061, slot)
	_, err = b.do(t, "CL.THROTTLE", "bar", 10, 1, 60)
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(a.port))
	stats, _ := b.do(t, "INFO", "errorstats")
	require.Contains(t, stats, "errorstat_MOVED:count=1", "a redirect is counted under its prefix, as Redis counts it")
	_, err = a.do(t, "DEL", "bar", "foo")
	require.EqualError(t, err, "CROSSSLOT Keys in request don't hash to the same slot")
	keys := []string{"bar"}
	for i := 0; len(keys) < 50; i++ {
		if k := "key" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		for j := 0; j < 3; j++ {
			_, err := a.do(t, "CL.THROTTLE", k, 10, 1, 3600)
			require.NoError(t, err)
		}
	}
	n, _ := a.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
	require.Equal(t, int64(len(keys)), n)
	before := map[string]any{}
	for _, k := range keys {
		before[k], _ = a.do(t, "GET", k)
	}

	v, err = a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
	require.NoError(t, err)
	require.Equal(t, "OK", v)
	_, err = a.do(t, "CL.THROTTLE", "bar", 10, 1, 3600)
	require.EqualError(t, err, "ASK 5061 127.0.0.1:"+strconv.Itoa(b.port))
	_, err = b.do(t, "CL.THROTTLE", "bar", 10, 1, 3600)
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(a.port), "without ASKING")
	nodesLine, _ := a.do(t, "CLUSTER", "NODES")
	require.Contains(t, nodesLine, "[5061->-"+b.id+"]")
	for _, k := range keys {
		got, err := b.rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
			p.Do(context.Background(), "ASKING")
			p.Do(context.Background(), "GET", k)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, before[k], got[1].(*redis.Cmd).Val(), "%s's state moved exactly", k)
	}

	// The flip: every node gets the slot's new owner at version 2.
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETSLOT", slot, "NODE", b.id, 2)
		require.NoError(t, err)
	}
	_, err = a.do(t, "CL.THROTTLE", "bar", 10, 1, 3600)
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(b.port))
	n, _ = a.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
	require.Equal(t, int64(0), n, "the old owner dropped its copy")
	n, _ = b.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
	require.Equal(t, int64(len(keys)), n)
	res, err := b.do(t, "CL.THROTTLE", "bar", 10, 1, 3600)
	require.NoError(t, err)
	require.Equal(t, int64(7), res.([]any)[2], "three decisions before the move, a fourth after: 11-4 remain")
}

// BenchmarkThrottleHandlerCluster is BenchmarkThrottleHandler in cluster
// mode, the node serving every slot: what routing by slot adds to a
// decision (compare the two, side by side).
func BenchmarkThrottleHandlerCluster(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	st, err := cluster.NewState("", true, "127.0.0.1", 6379)
	require.NoError(b, err)
	srv := New(Config{Cluster: st, Now: func() time.Time { return time.Unix(0, now.Add(1000)) }},
		storage.New(storage.Config{BySlot: true}))
	conn := newFakeConn()
	require.True(b, srv.acceptFake(conn))
	cmd := argv("CL.THROTTLE", "user:12345", "100", "10", "1")
	srv.handle(conn, redconCommand(cmd))
	require.Contains(b, string(conn.Buffer()), "*5\r\n")
	conn.SetBuffer(nil)
	b.ReportAllocs()
	for b.Loop() {
		srv.handle(conn, redconCommand(cmd))
		conn.SetBuffer(nil)
	}
}

// BenchmarkConnBatchCluster is BenchmarkConnBatch in cluster mode, the node
// serving every slot: routing's cost on the whole path of a command.
func BenchmarkConnBatchCluster(b *testing.B) {
	st, err := cluster.NewState("", true, "127.0.0.1", 6379)
	require.NoError(b, err)
	stepper, lc := newLoopConnOn(b, New(Config{Cluster: st}, storage.New(storage.Config{BySlot: true})))
	require.Positive(b, lc.written)
	benchBatches(b, stepper)
}

// An EXEC whose slot froze after it was routed, before it took its locks
// (a migration's last copy), is answered as a command on the frozen slot
// would be once the wait for the thaw ends: TRYAGAIN for the whole EXEC,
// which clients retry, never a TRYAGAIN inside EXEC's reply, which they do
// not; and nothing of it runs.
func TestClusterExecOnASlotThatFrozeIsRetriedWhole(t *testing.T) {
	nodes := startClusterNodes(t, 1)
	a := nodes[0]
	_, err := a.do(t, "CLUSTERX", "SETNODES", topology(nodes), 1)
	require.NoError(t, err)
	c := testkit.Dial(t, "127.0.0.1:"+strconv.Itoa(a.port))
	c.Write("MULTI\r\nCL.THROTTLE {t}k 10 1 3600\r\n")
	require.Equal(t, "+OK\r\n", c.Read())
	require.Equal(t, "+QUEUED\r\n", c.Read())
	slot := cluster.Slot([]byte("{t}k"))
	a.srv.store.Freeze(slot, true) // frozen in the store, not yet in the routing
	require.Equal(t, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n", c.DoInline("EXEC"), "the whole EXEC, not a reply inside it")
	a.srv.store.Freeze(slot, false)
	res, err := a.do(t, "CL.THROTTLE", "{t}k", 10, 1, 3600, 0)
	require.NoError(t, err)
	require.Equal(t, int64(11), res.([]any)[2], "nothing of the transaction ran: a peek sees all 11 left")
}

// Shard channels live in their name's slot, as keys do: SPUBLISH and
// SSUBSCRIBE elsewhere are MOVED, channels of two slots are CROSSSLOT, and
// go-redis's ClusterClient subscribes and publishes on the slot's node.
func TestClusterShardChannelsLiveInTheirSlot(t *testing.T) {
	nodes := startClusterNodes(t, 2)
	top := topology(nodes)
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", top, 1)
		require.NoError(t, err)
	}
	a, b := nodes[0], nodes[1] // "bar" hashes to slot 5061 (a), "foo" to 12182 (b)
	_, err := b.do(t, "SPUBLISH", "bar", "x")
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(a.port))
	_, err = b.do(t, "SSUBSCRIBE", "bar")
	require.EqualError(t, err, "MOVED 5061 127.0.0.1:"+strconv.Itoa(a.port))
	_, err = a.do(t, "SSUBSCRIBE", "bar", "foo")
	require.EqualError(t, err, "CROSSSLOT Keys in request don't hash to the same slot")

	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(a.port)}, Protocol: 2})
	defer cc.Close()
	ps := cc.SSubscribe(ctx, "foo")
	defer ps.Close()
	got, err := ps.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, &redis.Subscription{Kind: "ssubscribe", Channel: "foo", Count: 1}, got)
	numsub, err := b.do(t, "PUBSUB", "SHARDNUMSUB", "foo")
	require.NoError(t, err)
	require.Equal(t, []any{"foo", int64(1)}, numsub, "subscribed on foo's node")
	n, err := cc.SPublish(ctx, "foo", "hi").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	select {
	case msg := <-ps.Channel():
		require.Equal(t, "foo", msg.Channel)
		require.Equal(t, "hi", msg.Payload)
	case <-time.After(10 * time.Second):
		t.Fatal("no smessage within 10 s")
	}
}

// REPLICAOF in cluster mode: refused as Redis refuses it while the topology
// pushed decides roles; with Sentinels set, accepted as Sentinel's failover
// of the node's shard, which the node then serves (or stops serving) at
// once, and refused for a node of another shard.
func TestReplicaOfInClusterMode(t *testing.T) {
	nodes := startClusterNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	text := a.id + " 127.0.0.1 " + strconv.Itoa(a.port) + " master - 0-8191\n" +
		b.id + " 127.0.0.1 " + strconv.Itoa(b.port) + " slave " + a.id + "\n" +
		c.id + " 127.0.0.1 " + strconv.Itoa(c.port) + " master - 8192-16383\n"
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", text, "1")
		require.NoError(t, err)
	}
	_, err := b.do(t, "REPLICAOF", "NO", "ONE")
	require.EqualError(t, err, "ERR REPLICAOF not allowed in cluster mode.")

	_, err = b.do(t, "CLUSTERX", "SETSENTINELS", "127.0.0.1")
	require.EqualError(t, err, "ERR Invalid Sentinel address '127.0.0.1': want host:port")
	got, err := b.do(t, "CLUSTERX", "SENTINELS")
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = b.do(t, "CLUSTERX", "SETSENTINELS", "127.0.0.1:1", "127.0.0.1:2")
	require.NoError(t, err)
	got, err = b.do(t, "CLUSTERX", "SENTINELS")
	require.NoError(t, err)
	require.Equal(t, []any{"127.0.0.1:1", "127.0.0.1:2"}, got)

	_, err = b.do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(c.port))
	require.EqualError(t, err, "ERR 127.0.0.1:"+strconv.Itoa(c.port)+" is not a node of this node's shard in the cluster topology")
	_, err = b.do(t, "REPLICAOF", "NO", "ONE")
	require.NoError(t, err)
	nodesText, err := b.do(t, "CLUSTER", "NODES")
	require.NoError(t, err)
	require.Contains(t, nodesText, b.id+" 127.0.0.1:"+strconv.Itoa(b.port)+"@"+strconv.Itoa(b.port+10000)+" myself,master - 0 0 0 connected 0-8191\n")
	require.Contains(t, nodesText, a.id+" 127.0.0.1:"+strconv.Itoa(a.port)+"@"+strconv.Itoa(a.port+10000)+" slave "+b.id+" 0 0 0 connected\n")
	info, err := b.do(t, "CLUSTER", "INFO")
	require.NoError(t, err)
	for _, line := range []string{"cluster_state:ok", "cluster_topology_version:1", "cluster_failovers_decided_by:sentinel",
		"cluster_sentinels:2", "cluster_sentinels_reachable:0", "cluster_waiting_for_sentinels:0"} {
		require.Contains(t, info, line+"\r\n")
	}
	_, err = b.do(t, "CL.THROTTLE", "{"+keyInSlot(100)+"}", "1", "1", "1")
	require.NoError(t, err, "the promoted node serves its shard's slots")
	_, err = b.do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(a.port))
	require.NoError(t, err, "and follows its shard's old master again when told to")
	_, err = b.do(t, "CL.THROTTLE", "{"+keyInSlot(100)+"}", "1", "1", "1")
	require.ErrorContains(t, err, "MOVED 100 127.0.0.1:"+strconv.Itoa(a.port))
}

// keyInSlot returns a key of slot.
func keyInSlot(slot int) string {
	for i := 0; ; i++ {
		if k := "k" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			return k
		}
	}
}

// A node's view of the cluster in CLUSTER INFO, INFO's Cluster section and
// the metrics: its topology's version, who decides failovers, its Sentinels.
func TestClusterFactsInInfoAndMetrics(t *testing.T) {
	nodes := startClusterNodes(t, 2)
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", topology(nodes), "7")
		require.NoError(t, err)
	}
	a := nodes[0]
	got, err := a.do(t, "CLUSTERX", "TOPOLOGY")
	require.NoError(t, err)
	require.Equal(t, []any{int64(7), topology(nodes)}, got, "the topology as pushed, for a peer catching up")
	_, err = a.do(t, "CLUSTERX", "SETSENTINELS", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
	require.NoError(t, err)
	info, err := a.rdb.Info(context.Background(), "cluster").Result()
	require.NoError(t, err)
	for _, line := range []string{"cluster_enabled:1", "cluster_state:ok", "cluster_current_epoch:0", "cluster_topology_version:7",
		"cluster_failovers_decided_by:sentinel", "cluster_sentinels:3", "cluster_sentinels_reachable:0", "cluster_waiting_for_sentinels:0"} {
		require.Contains(t, info, line+"\r\n")
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(a.srv.Collector()))
	text := gatherText(t, reg)
	for _, line := range []string{
		`redcell_cluster_topology_version 7`,
		`redcell_cluster_current_epoch 0`,
		`redcell_cluster_slots{state="ok"} 16384`,
		`redcell_cluster_slots{state="fail"} 0`,
		`redcell_cluster_sentinels{state="unreachable"} 3`,
		`redcell_cluster_waiting_for_sentinels 0`,
	} {
		require.Contains(t, text, "\n"+line+"\n")
	}
	b := nodes[1]
	info, err = b.rdb.Info(context.Background(), "cluster").Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_current_epoch:7\r\n", "without Sentinels, the topology's version")
	require.Contains(t, info, "cluster_failovers_decided_by:operator\r\n")
}
