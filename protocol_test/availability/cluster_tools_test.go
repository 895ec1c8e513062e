package availability_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// Redis Cluster as operators' tools meet it (redis-cli -c, redis-cli
// --cluster check) and as a real redis-server cluster node answers the
// same questions: CLUSTER SLOTS, SHARDS, NODES and INFO shaped as Redis 7
// shapes them. Needs redis-cli, and redis-server for the comparison.

// redis-cli -c follows MOVED to the key's owner; without -c it prints the
// redirect; --cluster check finds every slot covered and every node
// agreeing, replicas included.
func TestClusterWithRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	c := startCluster(t, 3)
	a, cOwner := c.masters[0], c.masters[2]

	// foo is slot 12182, the third master's.
	require.Equal(t, "MOVED 12182 127.0.0.1:"+strconv.Itoa(cOwner.Port)+"\n\n", harness.CLI(t, a.Port, "", "CL.THROTTLE", "foo", "9", "1", "3600"))
	require.Equal(t, "0\n10\n9\n-1\n3600\n", harness.CLI(t, a.Port, "", "-c", "CL.THROTTLE", "foo", "9", "1", "3600"))
	requireDecision(t, int64s(t, cOwner.do(t, hourly("foo", 0)...)), 1, "the decision was the owner's")

	// Commands on stdin: redis-cli says where it was redirected. bar is
	// slot 5061, the first master's.
	out := harness.CLI(t, cOwner.Port, "CL.THROTTLE bar 9 1 3600\nGET bar\nCLUSTER MYID\n", "-c")
	tat := a.do(t, "GET", "bar").(string)
	require.Equal(t, "-> Redirected to slot [5061] located at 127.0.0.1:"+strconv.Itoa(a.Port)+"\n0\n10\n9\n-1\n3600\n"+tat+"\n"+a.ID+"\n", out,
		"it stays on the node it was sent to")

	// A replica of the first master joins at version 2.
	d := startClusterNode(t, "yes", nodeID(3))
	pushTopology(t, c.text()+replicaLine(d, a), 2, append(c.masters, d)...)
	require.Eventually(t, func() bool {
		return d.infoField(t, "replication", "master_link_status") == "up"
	}, 20*time.Second, 10*time.Millisecond, "the replica's link; its log:\n%s", d.Log())

	check := harness.CLI(t, a.Port, "", "--cluster", "check", a.Addr)
	for _, want := range []string{
		"127.0.0.1:" + strconv.Itoa(a.Port) + " (aaaaaaaa...) -> 1 keys | 5461 slots | 1 slaves.",
		"127.0.0.1:" + strconv.Itoa(cOwner.Port) + " (cccccccc...) -> 1 keys | 5461 slots | 0 slaves.",
		"[OK] 2 keys in 3 masters.",
		"M: " + a.ID + " 127.0.0.1:" + strconv.Itoa(a.Port) + "\n   slots:[0-5460] (5461 slots) master\n   1 additional replica(s)",
		"S: " + d.ID + " 127.0.0.1:" + strconv.Itoa(d.Port) + "\n   slots: (0 slots) slave\n   replicates " + a.ID,
		"[OK] All nodes agree about slots configuration.",
		"[OK] All 16384 slots covered.",
	} {
		require.Contains(t, check, want, "redis-cli --cluster check")
	}
	require.NotContains(t, check, "[ERR]")
	require.NotContains(t, check, "[WARNING]")
}

// shape is a reply's types and lengths without its values: a map's keys
// are kept, and so are the values under the keys literal names.
func shape(r testkit.Reply, literal ...string) string {
	switch r.Kind {
	case '*', '~':
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = shape(e, literal...)
		}
		return string(r.Kind) + "[" + strings.Join(parts, " ") + "]"
	case '%':
		var parts []string
		for i := 0; i+1 < len(r.Elems); i += 2 {
			k, v := r.Elems[i].Text, r.Elems[i+1]
			if slices.Contains(literal, k) {
				parts = append(parts, k+"="+string(v.Kind)+v.Text)
			} else {
				parts = append(parts, k+"="+shape(v, literal...))
			}
		}
		return "%{" + strings.Join(parts, " ") + "}"
	}
	return string(r.Kind)
}

// nodesColumns is a CLUSTER NODES reply as the shape of each line's
// columns, the lines sorted: an ID, an address ip:port@cport, the flags, the
// master's ID or -, ping and pong times, the epoch, the link state, the
// slots.
func nodesColumns(t testing.TB, text string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(text, "\n"), "CLUSTER NODES ends each line in LF: %q", text)
	id := regexp.MustCompile(`^[0-9a-f]{40}$`)
	addr := regexp.MustCompile(`^(\d+\.\d+\.\d+\.\d+)?:\d+@\d+$`)
	number := regexp.MustCompile(`^\d+$`)
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		cols := strings.Split(line, " ")
		for i, col := range cols {
			switch {
			case id.MatchString(col):
				cols[i] = "<id>"
			case addr.MatchString(col):
				cols[i] = "<ip:port@cport>"
			case i >= 4 && i <= 6 && number.MatchString(col):
				cols[i] = "<n>"
			}
		}
		lines = append(lines, strings.Join(cols, " "))
	}
	slices.Sort(lines)
	return lines
}

// gossipStat is a CLUSTER INFO field counting one type of cluster bus
// message.
var gossipStat = regexp.MustCompile(`^cluster_stats_messages_[a-z-]+_(sent|received)$`)

// clusterAnswers is what a node answers the questions cluster clients and
// tools ask it, as shapes: CLUSTER SLOTS and SHARDS in RESP2 and RESP3,
// CLUSTER INFO's fields (their values where both clusters agree on them)
// and CLUSTER NODES's columns.
func clusterAnswers(t testing.TB, e harness.Endpoint) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, proto := range []string{"2", "3"} {
		c := e.Raw(t)
		c.Do("HELLO", proto)
		out["SLOTS RESP"+proto] = shape(c.DoReply("CLUSTER", "SLOTS"))
		out["SHARDS RESP"+proto] = shape(c.DoReply("CLUSTER", "SHARDS"), "role", "health")
		info := c.DoReply("CLUSTER", "INFO")
		out["INFO type RESP"+proto] = string(info.Kind)
		var fields []string
		for _, kv := range clusterInfoFields(t, info.Text) {
			switch {
			case gossipStat.MatchString(kv[0]):
				// Redis counts its bus's messages by type, each printed
				// once one of that type is sent or received: redcell's
				// nodes send none.
			case slices.Contains(redcellClusterInfo, kv[0]):
				// redcell's own, after Redis's: TestClusterInfoSaysWhere-
				// TheTopologyComesFrom.
			case slices.Contains([]string{"cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_known_nodes", "cluster_size"}, kv[0]):
				fields = append(fields, kv[0]+":"+kv[1])
			default:
				fields = append(fields, kv[0])
			}
		}
		out["INFO RESP"+proto] = fields
		nodes := c.DoReply("CLUSTER", "NODES")
		out["NODES type RESP"+proto] = string(nodes.Kind)
		out["NODES RESP"+proto] = nodesColumns(t, nodes.Text)
		out["MYID RESP"+proto] = shape(c.DoReply("CLUSTER", "MYID"))
		out["REPLICAS RESP"+proto] = shape(c.DoReply("CLUSTER", "REPLICAS", myMaster(t, c)))
		out["COUNTKEYSINSLOT RESP"+proto] = c.Do("CLUSTER", "COUNTKEYSINSLOT", "12182")
		out["KEYSLOT RESP"+proto] = c.Do("CLUSTER", "KEYSLOT", "{user1}:a")
	}
	return out
}

// redcellClusterInfo are the fields redcell adds to CLUSTER INFO, after
// Redis's: where the topology comes from.
var redcellClusterInfo = []string{"cluster_topology_version", "cluster_failovers_decided_by", "cluster_sentinels",
	"cluster_sentinels_reachable", "cluster_waiting_for_sentinels"}

// CLUSTER INFO ends with redcell's own fields: the topology's version, who
// decides failovers, the Sentinels and whether the node waits to hear them.
func TestClusterInfoSaysWhereTheTopologyComesFrom(t *testing.T) {
	m := startClusterNode(t, "yes", nodeID(0))
	pushTopology(t, masterLine(m, [2]int{0, 16383}), 5, m)
	info := clusterInfoFields(t, m.do(t, "CLUSTER", "INFO").(string))
	require.Equal(t, [][2]string{{"cluster_topology_version", "5"}, {"cluster_failovers_decided_by", "operator"},
		{"cluster_sentinels", "0"}, {"cluster_sentinels_reachable", "0"}, {"cluster_waiting_for_sentinels", "0"}},
		info[len(info)-len(redcellClusterInfo):])
}

// myMaster is the ID of the master of the node c is connected to, or its
// own if it is the master.
func myMaster(t testing.TB, c *testkit.Conn) string {
	t.Helper()
	for _, line := range strings.Split(c.DoReply("CLUSTER", "NODES").Text, "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(f[2], "myself,") {
			if f[3] == "-" {
				return f[0]
			}
			return f[3]
		}
	}
	t.Fatal("CLUSTER NODES has no myself line")
	return ""
}

// startRedisClusterPair starts two redis-server cluster nodes, the first
// serving every slot and the second its replica, and returns them once
// both see the cluster ok and the replica in sync.
func startRedisClusterPair(t *testing.T) (master, replica harness.Endpoint) {
	t.Helper()
	start := func() (harness.Endpoint, string) {
		busPort := strconv.Itoa(harness.FreePort(t))
		e := harness.StartRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", busPort,
			// The replica syncs at once, not 5s later; the master hears of
			// it within half the node timeout (7.5s by default), and lists
			// it in CLUSTER SLOTS once its offset is past 0, which the
			// master's PING down the stream moves (every 10s by default).
			"--repl-diskless-sync-delay", "0", "--cluster-node-timeout", "1000", "--repl-ping-replica-period", "1")
		return e, busPort
	}
	master, _ = start()
	replica, replicaBus := start()
	m, r := master.GoRedis(t), replica.GoRedis(t)
	require.NoError(t, m.Do(harness.Ctx(t), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	require.NoError(t, m.Do(harness.Ctx(t), "CLUSTER", "MEET", "127.0.0.1", replica.Port, replicaBus).Err())
	masterID := m.Do(harness.Ctx(t), "CLUSTER", "MYID").Val()
	require.Eventually(t, func() bool {
		nodes, _ := r.Do(harness.Ctx(t), "CLUSTER", "NODES").Text()
		return strings.Contains(nodes, masterID.(string))
	}, 20*time.Second, 10*time.Millisecond, "the replica learns of the master")
	require.NoError(t, r.Do(harness.Ctx(t), "CLUSTER", "REPLICATE", masterID).Err())
	require.Eventually(t, func() bool {
		mi, _ := m.Do(harness.Ctx(t), "CLUSTER", "INFO").Text()
		ri, _ := r.Do(harness.Ctx(t), "CLUSTER", "INFO").Text()
		slots, _ := m.Do(harness.Ctx(t), "CLUSTER", "SLOTS").Slice()
		repl, _ := r.Info(harness.Ctx(t), "replication").Result()
		return strings.Contains(mi, "cluster_state:ok") && strings.Contains(ri, "cluster_state:ok") &&
			len(slots) == 1 && len(slots[0].([]any)) == 4 && strings.Contains(repl, "master_link_status:up")
	}, 30*time.Second, 20*time.Millisecond, "redis-server's cluster of a master and its replica")
	return master, replica
}

// The replies cluster clients read, from a master serving every slot and
// from its replica, shaped as a real redis-server cluster's.
func TestClusterRepliesShapedAsRedisClusterNodes(t *testing.T) {
	redisMaster, redisReplica := startRedisClusterPair(t)

	m, r := startClusterNode(t, "yes", nodeID(0)), startClusterNode(t, "yes", nodeID(1))
	pushTopology(t, masterLine(m, [2]int{0, 16383})+replicaLine(r, m), 1, m, r)
	require.Eventually(t, func() bool {
		return r.infoField(t, "replication", "master_link_status") == "up"
	}, 20*time.Second, 10*time.Millisecond, "the replica's link; its log:\n%s", r.Log())

	for _, c := range []struct {
		role         string
		redis, redcl harness.Endpoint
	}{{"master", redisMaster, m.Endpoint}, {"replica", redisReplica, r.Endpoint}} {
		want, got := clusterAnswers(t, c.redis), clusterAnswers(t, c.redcl)
		for k := range want {
			assert.Equal(t, want[k], got[k], "%s on the %s", k, c.role)
		}
		require.Len(t, got, len(want))
	}
}

// routingTips are the tips of a COMMAND entry that tell a cluster client
// where to send a command (request_policy) and how to merge the replies of
// several nodes (response_policy).
func routingTips(entry testkit.Reply) []string {
	var out []string
	for _, tip := range entry.Elems[7].Elems {
		if strings.HasPrefix(tip.Text, "request_policy:") || strings.HasPrefix(tip.Text, "response_policy:") {
			out = append(out, tip.Text)
		}
	}
	return out
}

// COMMAND INFO tells cluster clients where a command's keys are (first key,
// last key and step, and its key specs) and where to send a command of keys
// in several slots (its request and response policies, which go-redis's
// cluster client follows with a dynamic command info resolver): as
// redis-server's, for every command and subcommand both serve. CL.THROTTLE,
// CL.WINDOW and CL.RESERVE have GET's key spec, which cluster clients
// route on: one key, at 1. Needs redis-server.
func TestClusterCommandInfoAsRedis(t *testing.T) {
	real := harness.StartRedisServer(t).Raw(t)
	ours := harness.StartServer(t).Raw(t)
	compared := 0
	for _, name := range testkit.BulkList(t, ours.Do("COMMAND", "LIST")) {
		want := real.DoReply("COMMAND", "INFO", name).Elems[0]
		if want.Kind != '*' {
			continue // not a Redis command: redcell's own (CL.*, CLUSTERX ...)
		}
		got := ours.DoReply("COMMAND", "INFO", name).Elems[0]
		require.Equal(t, byte('*'), got.Kind, name)
		compared++
		assert.Equal(t, []string{want.Elems[3].Text, want.Elems[4].Text, want.Elems[5].Text},
			[]string{got.Elems[3].Text, got.Elems[4].Text, got.Elems[5].Text}, "%s: first key, last key, step", name)
		assert.Equal(t, routingTips(want), routingTips(got), "%s: request and response policies", name)
		assert.Equal(t, want.Elems[8].String(), got.Elems[8].String(), "%s: key specs", name)
	}
	require.Greater(t, compared, 50, "commands both serve")
	for _, name := range []string{"get", "del", "exists"} {
		assert.Equal(t, real.Do("COMMAND", "INFO", name), ours.Do("COMMAND", "INFO", name), "COMMAND INFO %s, byte for byte", name)
	}

	getSpec := real.DoReply("COMMAND", "INFO", "get").Elems[0].Elems[8].Elems[0]
	for _, name := range []string{"cl.throttle", "cl.window", "cl.reserve"} {
		entry := ours.DoReply("COMMAND", "INFO", name).Elems[0]
		require.Equal(t, []string{"1", "1", "1"}, []string{entry.Elems[3].Text, entry.Elems[4].Text, entry.Elems[5].Text}, name)
		require.Len(t, entry.Elems[8].Elems, 1, "%s: one key spec", name)
		spec := entry.Elems[8].Elems[0]
		require.Equal(t, testkit.Reply{Kind: '%', Elems: getSpec.Elems[2:]}.String(), testkit.Reply{Kind: '%', Elems: spec.Elems[2:]}.String(), "%s: begin_search and find_keys as GET's", name)
	}
}
