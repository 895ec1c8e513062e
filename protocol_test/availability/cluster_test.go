package availability_test

import (
	"cmp"
	"context"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// Redis Cluster as its clients meet it: nodes of the built binary, each with
// --cluster-enabled yes and a --dir of its own, given one topology by
// CLUSTERX SETNODES, as an operator (or kvrocks's controller) pushes it;
// go-redis and rueidis in cluster mode find each key's node from CLUSTER
// SLOTS or SHARDS and follow MOVED. redis-cli -c and --cluster check, and
// the replies compared with a real redis-server cluster node, are
// TestClusterWithRedisCLI and the tests beside it.

// clusterNode is one node of a test cluster.
type clusterNode struct {
	*harness.BinaryServer
	ID  string
	Dir string
	rdb *redis.Client // a plain client: it follows no redirect
}

// nodeID is the ID of a test cluster's i-th node: 40 hex digits, "aaaa..."
// for the first, "bbbb..." for the second, so that a failure names the node.
func nodeID(i int) string { return strings.Repeat(string(rune('a'+i)), 40) }

// startClusterNode starts the built binary in cluster mode (mode yes or
// emulated) in a fresh --dir, and, for yes, gives it ID id (CLUSTERX
// SETNODEID). It serves no slot until a topology is pushed.
func startClusterNode(t *testing.T, mode, id string) *clusterNode {
	t.Helper()
	dir := t.TempDir()
	p := harness.StartBinary(t, nil, harness.OnLoopback("--dir", dir, "--cluster-enabled", mode)...)
	n := &clusterNode{BinaryServer: p, Dir: dir, rdb: p.GoRedis(t, func(o *redis.Options) { o.MaxRetries = -1 })}
	if id != "" {
		require.Equal(t, "OK", n.do(t, "CLUSTERX", "SETNODEID", id))
		n.ID = id
	}
	return n
}

// do runs a command on the node through its plain client and returns its
// reply, failing the test on an error reply.
func (n *clusterNode) do(t testing.TB, args ...any) any {
	t.Helper()
	v, err := n.rdb.Do(harness.Ctx(t), args...).Result()
	require.NoError(t, err, "%v on %s", args, n.Addr)
	return v
}

// refusal is the error reply the node gives args ("" for none).
func (n *clusterNode) refusal(t testing.TB, args ...any) string {
	t.Helper()
	err := n.rdb.Do(harness.Ctx(t), args...).Err()
	if err == nil || err == redis.Nil {
		return ""
	}
	return err.Error()
}

// slotShares splits the 16384 slots among n masters as redis-cli --cluster
// create does: 0-5460, 5461-10922 and 10923-16383 for three.
func slotShares(n int) [][2]int {
	per := 16384.0 / float64(n)
	var out [][2]int
	first, cursor := 0, 0.0
	for i := 0; i < n; i++ {
		last := int(math.Round(cursor + per - 1))
		if last > 16383 || i == n-1 {
			last = 16383
		}
		out = append(out, [2]int{first, last})
		first, cursor = last+1, cursor+per
	}
	return out
}

// masterLine is a master's line of CLUSTERX SETNODES: its ID, address and
// slot range.
func masterLine(n *clusterNode, r [2]int) string {
	return n.ID + " 127.0.0.1 " + strconv.Itoa(n.Port) + " master - " + strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1]) + "\n"
}

// replicaLine is a replica's line of CLUSTERX SETNODES.
func replicaLine(n, master *clusterNode) string {
	return n.ID + " 127.0.0.1 " + strconv.Itoa(n.Port) + " slave " + master.ID + "\n"
}

// pushTopology sends the topology to every node at version, as an operator
// does, each answering OK.
func pushTopology(t *testing.T, text string, version int, nodes ...*clusterNode) {
	t.Helper()
	for _, n := range nodes {
		require.Equal(t, "OK", n.do(t, "CLUSTERX", "SETNODES", text, version), "node %s", n.ID)
	}
}

// testCluster is masters sharing the slots as slotShares splits them.
type testCluster struct {
	masters []*clusterNode
	shares  [][2]int
}

// startCluster starts n masters and pushes them their topology at version 1.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{shares: slotShares(n)}
	for i := 0; i < n; i++ {
		c.masters = append(c.masters, startClusterNode(t, "yes", nodeID(i)))
	}
	pushTopology(t, c.text(), 1, c.masters...)
	return c
}

// text is the cluster's topology as CLUSTERX SETNODES takes it.
func (c *testCluster) text() string {
	var b strings.Builder
	for i, m := range c.masters {
		b.WriteString(masterLine(m, c.shares[i]))
	}
	return b.String()
}

func (c *testCluster) addrs() []string {
	var out []string
	for _, m := range c.masters {
		out = append(out, m.Addr)
	}
	return out
}

// owner is the master that serves slot.
func (c *testCluster) owner(slot int) *clusterNode {
	for i, r := range c.shares {
		if r[0] <= slot && slot <= r[1] {
			return c.masters[i]
		}
	}
	panic("slot " + strconv.Itoa(slot) + " out of range")
}

// slot is key's hash slot, as the cluster's first node computes it
// (CLUSTER KEYSLOT).
func (c *testCluster) slot(t testing.TB, key string) int {
	t.Helper()
	return int(c.masters[0].do(t, "CLUSTER", "KEYSLOT", key).(int64))
}

// goRedisCluster is a go-redis cluster client knowing the nodes at addrs.
func goRedisCluster(t testing.TB, addrs []string, opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	o := &redis.ClusterOptions{Addrs: addrs}
	for _, f := range opts {
		f(o)
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// rueidisCluster is a rueidis client given the nodes at addrs, which finds
// itself in cluster mode from CLUSTER SLOTS (or SHARDS, with shards).
func rueidisCluster(t testing.TB, addrs []string, shards bool) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true,
		ClusterOption: rueidis.ClusterOption{PreferClusterShards: shards}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.Equal(t, rueidis.ClientModeCluster, c.Mode())
	return c
}

// hourly is CL.THROTTLE key 9 1 3600 [quantity]: a burst of ten, one
// action an hour, so that nothing refills while a test runs on the real
// clock of the built binary.
func hourly(key string, quantity ...int) []any {
	args := []any{"CL.THROTTLE", key, 9, 1, 3600}
	for _, q := range quantity {
		args = append(args, q)
	}
	return args
}

// firstDecision is the reply to hourly on a fresh key: allowed, limit 10,
// 9 left, no retry, full again in an hour.
var firstDecision = []any{int64(0), int64(10), int64(9), int64(-1), int64(3600)}

// requireDecision checks an hourly reply after the key's n-th action:
// allowed, 10-n left. reset_after is n hours less the time since the first
// action, which the real clock makes a second shorter when one has passed.
func requireDecision(t testing.TB, reply []int64, n int64, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, reply, 5, msgAndArgs...)
	require.Equal(t, []int64{0, 10, 10 - n, -1}, reply[:4], msgAndArgs...)
	require.InDelta(t, n*3600, reply[4], 1, msgAndArgs...)
}

func int64s(t testing.TB, v any) []int64 {
	t.Helper()
	vs, ok := v.([]any)
	require.True(t, ok, "%#v is not an array", v)
	out := make([]int64, len(vs))
	for i, e := range vs {
		out[i], ok = e.(int64)
		require.True(t, ok, "%#v is not an array of integers", v)
	}
	return out
}

// Three masters: go-redis, rueidis from CLUSTER SLOTS and rueidis from
// CLUSTER SHARDS each make one decision on every key, and all three
// decisions land on the key's owner, which alone holds it.
func TestClusterClientsSendEachDecisionToItsKeysOwner(t *testing.T) {
	c := startCluster(t, 3)
	cc := goRedisCluster(t, c.addrs())
	bySlots, byShards := rueidisCluster(t, c.addrs(), false), rueidisCluster(t, c.addrs(), true)
	require.Len(t, bySlots.Nodes(), 3)
	require.Len(t, byShards.Nodes(), 3)
	var masters atomic.Int32
	require.NoError(t, cc.ForEachMaster(harness.Ctx(t), func(context.Context, *redis.Client) error { masters.Add(1); return nil }))
	require.Equal(t, int32(3), masters.Load(), "go-redis found three masters")

	keysBySlot := map[int][]string{}
	for i := 0; i < 120; i++ {
		k := "user:" + strconv.Itoa(i)
		v, err := cc.Do(harness.Ctx(t), hourly(k)...).Result()
		require.NoError(t, err, k)
		require.Equal(t, firstDecision, v, "go-redis, %s", k)
		for n, ru := range []rueidis.Client{bySlots, byShards} {
			reply, err := ru.Do(harness.Ctx(t), ru.B().Arbitrary("CL.THROTTLE").Keys(k).Args("9", "1", "3600").Build()).AsIntSlice()
			require.NoError(t, err, k)
			requireDecision(t, reply, int64(n+2), "rueidis, %s", k)
		}
		slot := c.slot(t, k)
		keysBySlot[slot] = append(keysBySlot[slot], k)
	}

	owned := map[string]int{}
	for slot, keys := range keysBySlot {
		owner := c.owner(slot)
		owned[owner.ID] += len(keys)
		for _, n := range c.masters {
			want := int64(0)
			if n == owner {
				want = int64(len(keys))
			}
			require.Equal(t, want, n.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot), "slot %d on %s (owner %s)", slot, n.ID, owner.ID)
		}
		require.ElementsMatch(t, keys, strs(t, owner.do(t, "CLUSTER", "GETKEYSINSLOT", slot, 1000)), "slot %d", slot)
		for _, k := range keys {
			tat, err := strconv.ParseInt(owner.do(t, "GET", k).(string), 10, 64)
			require.NoError(t, err, "GET %s on its owner is the key's TAT", k)
			require.Positive(t, tat)
			for _, n := range c.masters {
				if n != owner {
					require.Equal(t, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(owner.Port), n.refusal(t, "GET", k), "GET %s on %s", k, n.ID)
				}
			}
		}
	}
	for _, m := range c.masters {
		require.Positive(t, owned[m.ID], "some of the keys are %s's", m.ID)
	}
}

func strs(t testing.TB, v any) []string {
	t.Helper()
	vs, ok := v.([]any)
	require.True(t, ok, "%#v is not an array", v)
	out := make([]string, len(vs))
	for i, e := range vs {
		out[i], ok = e.(string)
		require.True(t, ok, "%#v is not an array of strings", v)
	}
	return out
}

// A plain client at a node that does not serve the key is told where it
// is, in Redis's words: MOVED, the slot, the owner's address.
func TestClusterMovedNamesTheKeysOwner(t *testing.T) {
	c := startCluster(t, 3)
	a, cOwner := c.masters[0], c.masters[2]
	// Redis's CLUSTER KEYSLOT foo is 12182, the third share's.
	require.Equal(t, int64(12182), a.do(t, "CLUSTER", "KEYSLOT", "foo"))
	want := "MOVED 12182 127.0.0.1:" + strconv.Itoa(cOwner.Port)
	require.Equal(t, want, a.refusal(t, hourly("foo")...))
	require.Equal(t, want, a.refusal(t, "GET", "foo"))
	require.Equal(t, want, a.refusal(t, hourly("foo", 0)...), "a peek too: this node is no replica of the owner")
	require.Equal(t, want, a.refusal(t, "CL.WINDOW", "foo", 10, 60))
	require.Equal(t, int64(0), a.do(t, "CLUSTER", "COUNTKEYSINSLOT", 12182), "the refused commands stored nothing")
	require.Equal(t, firstDecision, cOwner.do(t, hourly("foo")...), "the owner's first decision on foo")

	// go-redis, given only the wrong node, finds the owner from CLUSTER SLOTS.
	cc := goRedisCluster(t, []string{a.Addr})
	v, err := cc.Do(harness.Ctx(t), hourly("foo")...).Result()
	require.NoError(t, err)
	requireDecision(t, int64s(t, v), 2)
}

// Keys with one hash tag are in one slot, so one node serves them all and a
// transaction may hold several: go-redis's TxPipelined on the cluster client
// sends MULTI/EXEC to their node.
func TestClusterHashTagsKeepKeysTogether(t *testing.T) {
	c := startCluster(t, 3)
	slot := c.slot(t, "{user1}:a")
	require.Equal(t, slot, c.slot(t, "{user1}:b"))
	require.Equal(t, slot, c.slot(t, "user1"), "only the tag is hashed")
	owner := c.owner(slot)

	cc := goRedisCluster(t, c.addrs())
	for round := int64(1); round <= 2; round++ {
		cmds, err := cc.TxPipelined(harness.Ctx(t), func(p redis.Pipeliner) error {
			p.Do(harness.Ctx(t), hourly("{user1}:a")...)
			p.Do(harness.Ctx(t), hourly("{user1}:b")...)
			p.Do(harness.Ctx(t), hourly("{user1}:b")...)
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cmds, 3)
		for i, want := range []int64{round, 2*round - 1, 2 * round} {
			requireDecision(t, int64s(t, cmds[i].(*redis.Cmd).Val()), want, "round %d, command %d", round, i)
		}
	}
	require.Equal(t, int64(2), owner.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot))
	require.ElementsMatch(t, []string{"{user1}:a", "{user1}:b"}, strs(t, owner.do(t, "CLUSTER", "GETKEYSINSLOT", slot, 10)))
	require.Equal(t, int64(2), owner.do(t, "EXISTS", "{user1}:a", "{user1}:b"), "a multi-key command in one slot runs")
	requireDecision(t, int64s(t, owner.do(t, hourly("{user1}:b", 0)...)), 4, "a peek on the owner: four actions on b")
}

// Keys of two slots in one command, or in one transaction, are refused with
// Redis's CROSSSLOT: by any node, before it looks at who serves them. A
// transaction is refused at EXEC, as Redis refuses it, and runs nothing.
func TestClusterRefusesKeysOfSeveralSlots(t *testing.T) {
	c := startCluster(t, 3)
	const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
	// Two tags whose slots one node serves, and one whose another does.
	a := "{user1}:a"
	owner := c.owner(c.slot(t, a))
	var sameNode, otherNode string
	for i := 2; sameNode == "" || otherNode == ""; i++ {
		k := "{user" + strconv.Itoa(i) + "}:a"
		if s := c.slot(t, k); c.owner(s) == owner && s != c.slot(t, a) {
			sameNode = cmp.Or(sameNode, k)
		} else if c.owner(s) != owner {
			otherNode = cmp.Or(otherNode, k)
		}
	}
	for _, n := range c.masters {
		require.Equal(t, crossSlot, n.refusal(t, "DEL", a, sameNode), "DEL on %s", n.ID)
		require.Equal(t, crossSlot, n.refusal(t, "EXISTS", a, otherNode), "EXISTS on %s", n.ID)
		require.Equal(t, crossSlot, n.refusal(t, "UNLINK", sameNode, a), "UNLINK on %s", n.ID)
	}

	raw := owner.Raw(t)
	require.Equal(t, testkit.Simple("OK"), raw.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), raw.Do("CL.THROTTLE", a, "9", "1", "3600"))
	require.Equal(t, testkit.Simple("QUEUED"), raw.Do("CL.THROTTLE", sameNode, "9", "1", "3600"), "queued: the slots are checked at EXEC, as Redis does")
	require.Equal(t, testkit.Err(crossSlot), raw.Do("EXEC"))
	require.Equal(t, testkit.Err("ERR EXEC without MULTI"), raw.Do("EXEC"), "the transaction is over")
	require.Equal(t, int64(0), owner.do(t, "EXISTS", a), "nothing ran")
	require.Equal(t, int64(0), owner.do(t, "EXISTS", sameNode))

	// A key of another node is refused as it is queued, with MOVED, which
	// aborts the transaction.
	otherOwner := c.owner(c.slot(t, otherNode))
	require.Equal(t, testkit.Simple("OK"), raw.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), raw.Do("CL.THROTTLE", a, "9", "1", "3600"))
	require.Equal(t, testkit.Err("MOVED "+strconv.Itoa(c.slot(t, otherNode))+" 127.0.0.1:"+strconv.Itoa(otherOwner.Port)),
		raw.Do("CL.THROTTLE", otherNode, "9", "1", "3600"))
	require.Equal(t, testkit.Err("EXECABORT Transaction discarded because of previous errors."), raw.Do("EXEC"))
	require.Equal(t, int64(0), owner.do(t, "EXISTS", a), "nothing ran")

	// go-redis's cluster client sends a DEL of keys in several slots to one
	// node, as it would to Redis's; with a resolver that reads the servers'
	// COMMAND tips it splits it by slot (DEL's request_policy:multi_shard)
	// and adds the counts (response_policy:agg_sum).
	cc := goRedisCluster(t, c.addrs())
	for _, k := range []string{a, sameNode, otherNode} {
		require.Equal(t, firstDecision, cc.Do(harness.Ctx(t), hourly(k)...).Val(), k)
	}
	require.EqualError(t, cc.Del(harness.Ctx(t), a, sameNode, otherNode).Err(), crossSlot)
	cc.SetCommandInfoResolver(cc.NewDynamicResolver())
	require.Equal(t, int64(3), cc.Exists(harness.Ctx(t), a, sameNode, otherNode).Val())
	n, err := cc.Del(harness.Ctx(t), a, sameNode, otherNode).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, int64(0), cc.Exists(harness.Ctx(t), a, sameNode, otherNode).Val())
}

// clusterInfoFields reads CLUSTER INFO's "field:value" lines, in order.
func clusterInfoFields(t testing.TB, text string) [][2]string {
	t.Helper()
	require.True(t, strings.HasSuffix(text, "\r\n"), "CLUSTER INFO ends in CRLF: %q", text)
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		require.True(t, ok, "%q is not field:value", line)
		out = append(out, [2]string{k, v})
	}
	return out
}

func clusterInfoField(t testing.TB, n *clusterNode, field string) string {
	t.Helper()
	for _, kv := range clusterInfoFields(t, n.do(t, "CLUSTER", "INFO").(string)) {
		if kv[0] == field {
			return kv[1]
		}
	}
	t.Fatalf("CLUSTER INFO on %s has no %s", n.Addr, field)
	return ""
}

// reconnect replaces the node's plain client, after a restart.
func (n *clusterNode) reconnect(t testing.TB) {
	t.Helper()
	n.rdb = n.GoRedis(t, func(o *redis.Options) { o.MaxRetries = -1 })
}

const notInTopology = "CLUSTERDOWN This node is not part of the cluster topology (CLUSTERX SETNODES)"

// A topology is taken only at a newer version, unless FORCE: a push that
// arrives late cannot undo a newer one.
func TestClusterTopologyVersionOnlyMovesForward(t *testing.T) {
	c := startCluster(t, 3)
	a := c.masters[0]
	require.Equal(t, "ERR the version is not newer than the topology's: 1 <= 1", a.refusal(t, "CLUSTERX", "SETNODES", c.text(), 1))
	require.Equal(t, "ERR the version is not newer than the topology's: 0 <= 1", a.refusal(t, "CLUSTERX", "SETNODES", c.text(), 0))
	require.Equal(t, int64(1), a.do(t, "CLUSTERX", "VERSION"), "unchanged")
	require.Equal(t, "1", clusterInfoField(t, a, "cluster_current_epoch"))

	// FORCE takes it whatever its version, say to roll a bad push back.
	require.Equal(t, "OK", a.do(t, "CLUSTERX", "SETNODES", c.text(), 0, "FORCE"))
	require.Equal(t, int64(0), a.do(t, "CLUSTERX", "VERSION"))
	require.Equal(t, "OK", a.do(t, "CLUSTERX", "SETNODES", c.text(), 1), "1 is newer than 0 now")
	require.Equal(t, int64(1), a.do(t, "CLUSTERX", "VERSION"))
	require.Equal(t, "ERR syntax error", a.refusal(t, "CLUSTERX", "SETNODES", c.text(), 5, "FORCEFULLY"))
	require.Equal(t, int64(1), a.do(t, "CLUSTERX", "VERSION"))
}

// A node the topology leaves out, and a node given no topology yet, serve
// no key: CLUSTERDOWN, while the others serve every slot between them.
func TestClusterNodeOutsideTheTopologyServesNoKey(t *testing.T) {
	c := startCluster(t, 3)
	a, b, left := c.masters[0], c.masters[1], c.masters[2]
	two := &testCluster{masters: []*clusterNode{a, b}, shares: slotShares(2)}
	pushTopology(t, two.text(), 2, a, b, left)

	for _, args := range [][]any{hourly("foo"), hourly("foo", 0), {"GET", "foo"}, {"DEL", "foo"}} {
		require.Equal(t, notInTopology, left.refusal(t, args...), "%v", args)
	}
	require.Equal(t, int64(2), left.do(t, "CLUSTERX", "VERSION"), "it keeps the topology it is not in")
	require.Equal(t, nodeID(2), left.do(t, "CLUSTER", "MYID"))
	require.Equal(t, "fail", clusterInfoField(t, left, "cluster_state"))
	require.Equal(t, "ok", clusterInfoField(t, a, "cluster_state"))
	require.Equal(t, "2", clusterInfoField(t, a, "cluster_known_nodes"))
	require.Equal(t, "PONG", left.do(t, "PING"), "keyless commands still run")

	// Clients given every address find the two masters only.
	cc := goRedisCluster(t, c.addrs())
	for i := 0; i < 20; i++ {
		k := "user:" + strconv.Itoa(i)
		require.Equal(t, firstDecision, cc.Do(harness.Ctx(t), hourly(k)...).Val(), k)
		require.Equal(t, int64(1), two.owner(c.slot(t, k)).do(t, "EXISTS", k), "%s on its owner", k)
	}

	fresh := startClusterNode(t, "yes", "")
	require.Regexp(t, `^[0-9a-f]{40}$`, fresh.do(t, "CLUSTER", "MYID"), "a random ID until CLUSTERX SETNODEID")
	require.Equal(t, notInTopology, fresh.refusal(t, hourly("foo")...))
	require.Equal(t, notInTopology, fresh.refusal(t, "GET", "foo"))
	require.Equal(t, int64(-1), fresh.do(t, "CLUSTERX", "VERSION"))
	require.Equal(t, []any{}, fresh.do(t, "CLUSTER", "SLOTS"))
	require.Equal(t, []any{}, fresh.do(t, "CLUSTER", "SHARDS"))
	require.Equal(t, "fail", clusterInfoField(t, fresh, "cluster_state"))
	require.Equal(t, "0", clusterInfoField(t, fresh, "cluster_slots_assigned"))
}

// A node restarted comes back with its ID, its topology and its keys, in
// the --dir it persists them in.
func TestClusterNodeRestartedKeepsItsIDTopologyAndKeys(t *testing.T) {
	c := startCluster(t, 3)
	a := c.masters[0]
	pushTopology(t, c.text(), 7, c.masters...)
	var mine []string
	for i := 0; len(mine) < 10; i++ {
		if k := "user:" + strconv.Itoa(i); c.owner(c.slot(t, k)) == a {
			mine = append(mine, k)
			require.Equal(t, firstDecision, a.do(t, hourly(k)...), k)
		}
	}
	tats := map[string]any{}
	for _, k := range mine {
		tats[k] = a.do(t, "GET", k)
	}
	nodes := a.do(t, "CLUSTER", "NODES")

	require.NoError(t, a.Stop(syscall.SIGTERM), "a clean exit; log:\n%s", a.Log())
	a.Restart()
	a.reconnect(t)
	require.Equal(t, nodeID(0), a.do(t, "CLUSTER", "MYID"))
	require.Equal(t, int64(7), a.do(t, "CLUSTERX", "VERSION"))
	require.Equal(t, nodes, a.do(t, "CLUSTER", "NODES"))
	for _, k := range mine {
		require.Equal(t, tats[k], a.do(t, "GET", k), k)
		requireDecision(t, int64s(t, a.do(t, hourly(k)...)), 2, "%s's second decision, after the restart", k)
	}
	require.Equal(t, "MOVED 12182 127.0.0.1:"+strconv.Itoa(c.masters[2].Port), a.refusal(t, "GET", "foo"))
	require.Equal(t, "ERR the version is not newer than the topology's: 7 <= 7", a.refusal(t, "CLUSTERX", "SETNODES", c.text(), 7))
}

// A slot migrated (CLUSTERX MIGRATE) and not yet given to its destination
// by a topology stays handed over across a restart of either node: the
// source, restarted, still sends its clients to the destination with ASK
// rather than serve its copy of the slot as of the handover; the
// destination, restarted, still serves them after ASKING with the state it
// imported and decided on, rather than refuse them and drop its keys as a
// slot it does not serve. The topology's flip then ends the move as it
// would have: no decision lost or doubled.
func TestClusterASlotHandedOverSurvivesARestartOfEitherNode(t *testing.T) {
	c := startCluster(t, 2)
	a, b := c.masters[0], c.masters[1]
	tag := "{h0}"
	for i := 1; c.owner(c.slot(t, tag)) != a; i++ {
		tag = "{h" + strconv.Itoa(i) + "}"
	}
	var keys []string // ten keys of one slot of a's
	for i := range 10 {
		keys = append(keys, tag+strconv.Itoa(i))
		require.Equal(t, firstDecision, a.do(t, hourly(keys[i])...), keys[i])
	}
	slot := c.slot(t, tag)
	require.Equal(t, "OK", a.do(t, "CLUSTERX", "MIGRATE", slot, b.ID, "SYNC"))
	ask := "ASK " + strconv.Itoa(slot) + " 127.0.0.1:" + strconv.Itoa(b.Port)
	require.Equal(t, ask, a.refusal(t, hourly(keys[0])...))
	asking := func(n *clusterNode, args ...any) []int64 {
		t.Helper()
		cmds, err := n.rdb.Pipelined(harness.Ctx(t), func(p redis.Pipeliner) error {
			p.Do(harness.Ctx(t), "ASKING")
			p.Do(harness.Ctx(t), args...)
			return nil
		})
		require.NoError(t, err, "%v on %s", args, n.Addr)
		return int64s(t, cmds[1].(*redis.Cmd).Val())
	}
	requireDecision(t, asking(b, hourly(keys[0])...), 2, "decided on the destination after ASKING")

	require.NoError(t, a.Stop(syscall.SIGTERM), "a clean exit; log:\n%s", a.Log())
	a.Restart()
	a.reconnect(t)
	require.Equal(t, ask, a.refusal(t, hourly(keys[0])...), "the restarted source still sends the slot's clients on")

	require.NoError(t, b.Stop(syscall.SIGTERM), "a clean exit; log:\n%s", b.Log())
	b.Restart()
	b.reconnect(t)
	require.Equal(t, int64(len(keys)), b.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot), "the restarted destination keeps what it imported")
	requireDecision(t, asking(b, hourly(keys[0])...), 3, "and serves it after ASKING")
	require.Equal(t, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(a.Port), b.refusal(t, hourly(keys[0])...), "not without")

	for _, n := range c.masters {
		require.Equal(t, "OK", n.do(t, "CLUSTERX", "SETSLOT", slot, "NODE", b.ID, 2))
	}
	require.Equal(t, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(b.Port), a.refusal(t, hourly(keys[0])...))
	require.Equal(t, int64(0), a.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot), "the source dropped its copy")
	requireDecision(t, int64s(t, b.do(t, hourly(keys[0])...)), 4, "the flip: served without ASKING")
	for _, k := range keys[1:] {
		requireDecision(t, int64s(t, b.do(t, hourly(k)...)), 2, "%s's second decision, its first on the destination", k)
	}
	require.NoError(t, a.Stop(syscall.SIGTERM))
	a.Restart()
	a.reconnect(t)
	require.Equal(t, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(b.Port), a.refusal(t, hourly(keys[0])...), "the ended move stays ended")
}

// infoField is one field of the node's INFO section ("" if absent).
func (n *clusterNode) infoField(t testing.TB, section, field string) string {
	t.Helper()
	text := n.do(t, "INFO", section).(string)
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// A fourth node listed as a replica of the first master follows it, shows
// as its replica in CLUSTER SLOTS, SHARDS, NODES and REPLICAS, and answers
// a READONLY client's reads of the master's keys (GET, and CL.THROTTLE
// peeks, quantity 0) as the master does; a decision it sends to the master.
func TestClusterReplicaServesReadsOfItsMastersSlots(t *testing.T) {
	c := &testCluster{shares: slotShares(3)}
	for i := 0; i < 3; i++ {
		c.masters = append(c.masters, startClusterNode(t, "yes", nodeID(i)))
	}
	a := c.masters[0]
	d := startClusterNode(t, "yes", nodeID(3))
	pushTopology(t, c.text()+replicaLine(d, a), 1, append(c.masters, d)...)

	require.Eventually(t, func() bool {
		return d.infoField(t, "replication", "master_link_status") == "up"
	}, 20*time.Second, 10*time.Millisecond, "the replica's link to its master; its log:\n%s", d.Log())
	require.Equal(t, "slave", d.infoField(t, "replication", "role"))
	require.Equal(t, strconv.Itoa(a.Port), d.infoField(t, "replication", "master_port"))
	require.Equal(t, "1", a.infoField(t, "replication", "connected_slaves"))

	endpointOf := func(n *clusterNode) []any { return []any{"127.0.0.1", int64(n.Port), n.ID, map[any]any{}} }
	for _, n := range []*clusterNode{a, d} {
		slots := n.do(t, "CLUSTER", "SLOTS").([]any)
		require.Len(t, slots, 3)
		require.Equal(t, []any{int64(0), int64(5460), endpointOf(a), endpointOf(d)}, slots[0], "CLUSTER SLOTS on %s", n.ID)
		require.Equal(t, []any{int64(5461), int64(10922), endpointOf(c.masters[1])}, slots[1])

		shards := n.do(t, "CLUSTER", "SHARDS").([]any)
		require.Len(t, shards, 3, "one shard a master")
		first := shards[0].(map[any]any)
		require.Equal(t, []any{int64(0), int64(5460)}, first["slots"])
		members := first["nodes"].([]any)
		require.Len(t, members, 2)
		for i, want := range []struct {
			n    *clusterNode
			role string
		}{{a, "master"}, {d, "replica"}} {
			m := members[i].(map[any]any)
			require.Equal(t, want.n.ID, m["id"])
			require.Equal(t, int64(want.n.Port), m["port"])
			require.Equal(t, want.role, m["role"])
			require.Equal(t, "online", m["health"])
		}
	}
	line := func(from *clusterNode, id string) string {
		for _, l := range strings.Split(from.do(t, "CLUSTER", "NODES").(string), "\n") {
			if strings.HasPrefix(l, id+" ") {
				return l
			}
		}
		t.Fatalf("CLUSTER NODES on %s has no line for %s", from.ID, id)
		return ""
	}
	addr := func(n *clusterNode) string {
		return "127.0.0.1:" + strconv.Itoa(n.Port) + "@" + strconv.Itoa(n.Port+10000)
	}
	require.Equal(t, d.ID+" "+addr(d)+" slave "+a.ID+" 0 0 1 connected", line(a, d.ID))
	require.Equal(t, d.ID+" "+addr(d)+" myself,slave "+a.ID+" 0 0 1 connected", line(d, d.ID))
	require.Equal(t, a.ID+" "+addr(a)+" master - 0 0 1 connected 0-5460", line(d, a.ID))
	require.Equal(t, []any{d.ID + " " + addr(d) + " slave " + a.ID + " 0 0 1 connected"}, a.do(t, "CLUSTER", "REPLICAS", a.ID))
	require.Equal(t, []any{}, a.do(t, "CLUSTER", "REPLICAS", c.masters[1].ID))

	// Decisions on keys of the first master, through the cluster client.
	cc := goRedisCluster(t, c.addrs())
	var keys []string
	for i := 0; len(keys) < 10; i++ {
		if k := "user:" + strconv.Itoa(i); c.owner(c.slot(t, k)) == a {
			keys = append(keys, k)
			require.Equal(t, firstDecision, cc.Do(harness.Ctx(t), hourly(k)...).Val(), k)
		}
	}
	readOnly := d.GoRedis(t, func(o *redis.Options) {
		o.MaxRetries = -1
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	})
	for _, k := range keys {
		tat := a.do(t, "GET", k)
		require.Eventually(t, func() bool { return readOnly.Get(harness.Ctx(t), k).Val() == tat }, 10*time.Second, 5*time.Millisecond,
			"%s replicated", k)
		peek, err := readOnly.Do(harness.Ctx(t), hourly(k, 0)...).Result()
		require.NoError(t, err, "a peek of %s on the replica", k)
		requireDecision(t, int64s(t, peek), 1, "the replica's peek of %s", k)
		requireDecision(t, int64s(t, a.do(t, hourly(k, 0)...)), 1, "the master's peek of %s", k)
		slot := strconv.Itoa(c.slot(t, k))
		require.Equal(t, "MOVED "+slot+" 127.0.0.1:"+strconv.Itoa(a.Port), readOnly.Do(harness.Ctx(t), hourly(k)...).Err().Error(),
			"a decision on the replica goes to the master")
		require.Equal(t, "MOVED "+slot+" 127.0.0.1:"+strconv.Itoa(a.Port), d.refusal(t, hourly(k, 0)...),
			"without READONLY, a peek too")
	}
	other := "foo" // the third master's
	require.Equal(t, "MOVED 12182 127.0.0.1:"+strconv.Itoa(c.masters[2].Port), readOnly.Get(harness.Ctx(t), other).Err().Error(),
		"a READONLY read of another master's key goes to it")

	// go-redis with ReadOnly sends reads to the replica (READONLY first),
	// and decisions, which COMMAND marks as writes, to the master.
	before := d.infoField(t, "commandstats", "cmdstat_get")
	reads := goRedisCluster(t, c.addrs(), func(o *redis.ClusterOptions) { o.ReadOnly = true })
	for _, k := range keys {
		require.Equal(t, a.do(t, "GET", k), reads.Get(harness.Ctx(t), k).Val(), k)
		requireDecision(t, int64s(t, reads.Do(harness.Ctx(t), hourly(k)...).Val()), 2, "%s's second decision", k)
	}
	require.NotEqual(t, before, d.infoField(t, "commandstats", "cmdstat_get"), "the GETs reached the replica")
}

// In emulated mode a node alone, given no topology, serves every slot, so
// that a client that insists on cluster mode works against one node.
func TestClusterEmulatedNodeServesEverySlot(t *testing.T) {
	n := startClusterNode(t, "emulated", "")
	id := n.do(t, "CLUSTER", "MYID").(string)
	require.Equal(t, []any{[]any{int64(0), int64(16383), []any{"127.0.0.1", int64(n.Port), id, map[any]any{}}}}, n.do(t, "CLUSTER", "SLOTS"))
	require.Equal(t, "ok", clusterInfoField(t, n, "cluster_state"))
	require.Equal(t, "16384", clusterInfoField(t, n, "cluster_slots_assigned"))
	require.Equal(t, "1", clusterInfoField(t, n, "cluster_known_nodes"))
	require.Equal(t, id+" 127.0.0.1:"+strconv.Itoa(n.Port)+"@"+strconv.Itoa(n.Port+10000)+" myself,master - 0 0 0 connected 0-16383\n",
		n.do(t, "CLUSTER", "NODES"))

	cc := goRedisCluster(t, []string{n.Addr})
	ru := rueidisCluster(t, []string{n.Addr}, false)
	slots := map[int]int64{}
	for i := 0; i < 50; i++ {
		k := "user:" + strconv.Itoa(i)
		require.Equal(t, firstDecision, cc.Do(harness.Ctx(t), hourly(k)...).Val(), k)
		reply, err := ru.Do(harness.Ctx(t), ru.B().Arbitrary("CL.THROTTLE").Keys(k).Args("9", "1", "3600").Build()).AsIntSlice()
		require.NoError(t, err, k)
		requireDecision(t, reply, 2, "rueidis, %s", k)
		slots[int(n.do(t, "CLUSTER", "KEYSLOT", k).(int64))]++
	}
	for slot, count := range slots {
		require.Equal(t, count, n.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot), "slot %d", slot)
	}
	require.Equal(t, "CROSSSLOT Keys in request don't hash to the same slot", n.refusal(t, "DEL", "user:0", "user:1"),
		"one node, but still a cluster: keys of one command in one slot")
}
