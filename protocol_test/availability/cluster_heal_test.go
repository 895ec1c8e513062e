package availability_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
)

// A cluster that heals itself (SPEC section 8): three shards of two built
// binaries, each shard's master registered with three real Sentinels under
// a name of its own, every node told the Sentinels (CLUSTERX SETSENTINELS).
// Sentinel decides each failover; every node follows.

// healShards and healNodes: shard i is node i, a master, and node i+3, its
// replica.
const (
	healShards = 3
	healNodes  = 2 * healShards
)

type healingCluster struct {
	nodes []*redcellNode
	ids   []string
	ss    []*sentinel
}

// shardName is the Sentinel master name of shard i.
func shardName(i int) string { return "redcell-" + strconv.Itoa(i+1) }

// startHealingCluster starts the six nodes in cluster mode, each with a
// --dir of its own, pushes the topology, starts three Sentinels and
// registers every shard's master with each, and returns once every Sentinel
// sees every shard's replica and the two other Sentinels.
func startHealingCluster(t *testing.T) *healingCluster {
	t.Helper()
	path := needSentinel(t)
	c := &healingCluster{}
	for i := range healNodes {
		dir := t.TempDir()
		n := &redcellNode{BinaryServer: harness.StartBinary(t, nil, harness.OnLoopback("--dir", dir, "--cluster-enabled", "yes")...), dir: dir}
		n.rdb = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, MaxRetries: -1})
		t.Cleanup(func() {
			_ = n.rdb.Close()
			if t.Failed() {
				t.Logf("redcell node %d on port %d, its log:\n%s", i, n.Port, n.Log())
			}
		})
		c.nodes = append(c.nodes, n)
		c.ids = append(c.ids, nodeID(i))
		require.NoError(t, n.rdb.Do(context.Background(), "CLUSTERX", "SETNODEID", nodeID(i)).Err())
	}
	var text strings.Builder
	for i, r := range slotShares(healShards) {
		fmt.Fprintf(&text, "%s 127.0.0.1 %d master - %d-%d\n", c.ids[i], c.nodes[i].Port, r[0], r[1])
		fmt.Fprintf(&text, "%s 127.0.0.1 %d slave %s\n", c.ids[i+healShards], c.nodes[i+healShards].Port, c.ids[i])
	}
	c.ss = startSentinels(t, path, 3, 0)
	sentinels := []any{"CLUSTERX", "SETSENTINELS"}
	for _, s := range c.ss {
		sentinels = append(sentinels, s.Addr)
	}
	for _, n := range c.nodes {
		require.NoError(t, n.rdb.Do(context.Background(), "CLUSTERX", "SETNODES", text.String(), "1").Err())
		require.NoError(t, n.rdb.Do(context.Background(), sentinels...).Err())
	}
	for i := range healNodes {
		if i >= healShards {
			require.Eventually(t, func() bool { return c.nodes[i].follows(c.nodes[i-healShards]) == nil },
				30*time.Second, 20*time.Millisecond, "node %d replicates its master", i)
		}
	}
	for _, s := range c.ss {
		for i := range healShards {
			ctx := context.Background()
			require.NoError(t, s.client.Monitor(ctx, shardName(i), "127.0.0.1", strconv.Itoa(c.nodes[i].Port), "2").Err())
			require.NoError(t, s.client.Set(ctx, shardName(i), "down-after-milliseconds", sentinelDownAfter).Err())
			require.NoError(t, s.client.Set(ctx, shardName(i), "failover-timeout", "5000").Err())
		}
	}
	var last lastErr
	require.Eventually(t, func() bool { return last.set(c.sentinelsSeeEveryShard()) },
		sentinelDeadline, 100*time.Millisecond, "the Sentinels see every shard: %v", &last)
	return c
}

// sentinelsSeeEveryShard reports what a Sentinel misses of the shards as
// registered: each shard's replica, online, and the other two Sentinels.
func (c *healingCluster) sentinelsSeeEveryShard() error {
	ctx := context.Background()
	for _, s := range c.ss {
		for i := range healShards {
			m, err := s.client.Master(ctx, shardName(i)).Result()
			if err != nil {
				return err
			}
			if m["num-other-sentinels"] != "2" {
				return fmt.Errorf("the Sentinel on port %d, %s: num-other-sentinels %s", s.Port, shardName(i), m["num-other-sentinels"])
			}
			rs, err := s.client.Replicas(ctx, shardName(i)).Result()
			if err != nil {
				return err
			}
			if len(rs) != 1 || rs[0]["port"] != strconv.Itoa(c.nodes[i+healShards].Port) || rs[0]["flags"] != "slave" {
				return fmt.Errorf("the Sentinel on port %d, %s: replicas %v", s.Port, shardName(i), rs)
			}
		}
	}
	return nil
}

// addrs are the nodes' addresses, for a cluster client.
func (c *healingCluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.Addr)
	}
	return out
}

// mastersOn returns, by node index, the masters node n's CLUSTER NODES lists
// with their first slot, or the error.
func (c *healingCluster) mastersOn(n *redcellNode) (map[int]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	text, err := n.rdb.Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return nil, err
	}
	out := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !slices.Contains(strings.Split(f[2], ","), "master") {
			continue
		}
		first, _, _ := strings.Cut(f[8], "-")
		slot, err := strconv.Atoi(first)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		out[slices.Index(c.ids, f[0])] = slot
	}
	return out, nil
}

// agree reports what is missing for every node in live to list masters as
// the masters of the shards (each serving its shard's slots).
func (c *healingCluster) agree(live []int, masters [healShards]int) error {
	want := map[int]int{}
	for i, m := range masters {
		want[m] = slotShares(healShards)[i][0]
	}
	for _, i := range live {
		got, err := c.mastersOn(c.nodes[i])
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("node %d lists the masters (node: first slot) %v, want %v", i, got, want)
		}
	}
	return nil
}

// shardOf returns the shard (0 to 2) of key.
func shardOf(key string) int {
	slot := cluster.Slot([]byte(key))
	for i, r := range slotShares(healShards) {
		if slot >= r[0] && slot <= r[1] {
			return i
		}
	}
	return -1
}

// lostOnShard compares what the new masters hold with what the client saw
// for the keys of shard: no key holds more than its acknowledged decisions
// and one unseen, and the decisions lost are the key's last, acknowledged
// by the killed master at most window before the kill. It returns how many
// were lost of how many that master acknowledged.
func lostOnShard(t *testing.T, load *failoverLoad, cc redis.UniversalClient, shard int, killedAt, exitedAt time.Time, window time.Duration) (lost, acked int) {
	t.Helper()
	load.mu.Lock()
	acks, perKey := slices.Clone(load.acks), make(map[string]int, len(load.keys))
	for k, n := range load.keys {
		perKey[k] = n
	}
	load.mu.Unlock()
	var keys []string
	for k := range perKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	remaining := peekAll(t, cc, keys)
	byKey := map[string][]ack{}
	for _, a := range acks {
		byKey[a.key] = append(byKey[a.key], a)
	}
	for _, k := range keys {
		stored, n := foLimit-int(remaining[k]), perKey[k]
		require.LessOrEqual(t, stored, n+1, "%s holds %d decisions, %d acknowledged and at most one unseen", k, stored, n)
		if shardOf(k) != shard {
			require.GreaterOrEqual(t, stored, n, "%s, of a shard that did not fail over, lost a decision", k)
			continue
		}
		for _, a := range byKey[k] {
			if a.sent.Before(exitedAt) {
				acked++
			}
		}
		for _, a := range byKey[k][min(stored, n):] {
			require.True(t, a.sent.Before(exitedAt), "%s: a decision sent %v after the old master exited was lost", k, a.sent.Sub(exitedAt))
			require.Less(t, killedAt.Sub(a.done), window, "%s: a decision acknowledged %v before the kill was lost", k, killedAt.Sub(a.done))
			lost++
		}
	}
	return lost, acked
}

// TestClusterHealsItselfUnderSentinel: kill -9 of a master under a go-redis
// ClusterClient's load; Sentinel promotes its replica and every live node
// serves the new topology, the client carries on, and the decisions lost
// are at most the last moments' before the kill. A replica down during the
// failover learns it when it comes back; the old master restarted never
// decides for its old slots and ends a replica of its successor. Then two
// shards fail over at once, and both heal.
func TestClusterHealsItselfUnderSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six nodes and three Sentinels through three failovers, some 60 s; skipped with -short")
	}
	c := startHealingCluster(t)
	// go-redis keeps sending a dead master's slots to it until it reloads
	// the cluster's state, by default every 60 s; docs/cluster.md says so.
	cc := goRedisCluster(t, c.addrs(), func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = time.Second })
	load := startFailoverLoad(t, cc)
	require.Eventually(t, func() bool { return load.acked() >= 2000 }, 30*time.Second, 10*time.Millisecond, "the load's decisions")
	ctx := context.Background()

	// The replica of shard 1 is down through the failover of shard 0.
	require.NoError(t, c.nodes[4].Stop(syscall.SIGTERM))
	killedAt := time.Now()
	_ = c.nodes[0].Stop(syscall.SIGKILL)
	exitedAt := time.Now()

	live := []int{1, 2, 3, 5}
	var last lastErr
	require.Eventually(t, func() bool { return last.set(c.agree(live, [healShards]int{3, 1, 2})) },
		sentinelDeadline, 20*time.Millisecond, "every live node serves the promoted replica: %v", &last)
	healedAt := time.Now()
	firstOn := func(shard int) (first time.Time) {
		load.mu.Lock()
		defer load.mu.Unlock()
		for _, a := range load.acks {
			if shardOf(a.key) == shard && a.sent.After(exitedAt) && (first.IsZero() || a.done.Before(first)) {
				first = a.done
			}
		}
		return first
	}
	require.Eventually(t, func() bool { return !firstOn(0).IsZero() }, 30*time.Second, 10*time.Millisecond,
		"a decision on shard 0's keys succeeds on the new master; the client's last error: %v", load.lastError())
	firstOnNew := firstOn(0)
	before := load.acked()
	require.Eventually(t, func() bool { return load.acked() >= before+foWorkers*foPerKey }, 30*time.Second, 10*time.Millisecond,
		"the client carries on")
	load.stop()
	lost, acked := lostOnShard(t, load, cc, 0, killedAt, exitedAt, 2*time.Second)
	t.Logf("failover of shard 0: the kill to every live node serving the promoted replica %v, to the first decision on it %v; "+
		"decisions lost %d of the %d its old master acknowledged; %d errors seen by the client",
		healedAt.Sub(killedAt), firstOnNew.Sub(killedAt), lost, acked, load.errs)

	t.Run("a node down during the failover learns it", func(t *testing.T) {
		c.nodes[4].Restart()
		require.Eventually(t, func() bool { return last.set(c.agree([]int{4}, [healShards]int{3, 1, 2})) },
			sentinelDeadline, 20*time.Millisecond, "%v", &last)
		require.Eventually(t, func() bool { return last.set(c.nodes[4].follows(c.nodes[1])) },
			sentinelDeadline, 20*time.Millisecond, "%v", &last)
	})

	t.Run("the old master never decides for its old slots and ends a replica", func(t *testing.T) {
		key := ""
		for k := range load.keys {
			if shardOf(k) == 0 {
				key = k
				break
			}
		}
		// The Sentinels paused (under the 2 s after which a Sentinel
		// distrusts its clock): the old master, restarted believing it
		// serves shard 0, cannot hear them, and must not decide.
		for _, s := range c.ss {
			require.NoError(t, s.process.Signal(syscall.SIGSTOP))
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				for _, s := range c.ss {
					_ = s.process.Signal(syscall.SIGCONT)
				}
			}
		}
		t.Cleanup(resume)
		c.nodes[0].Restart()
		err := c.nodes[0].rdb.Do(ctx, "CL.THROTTLE", key, foBurst, 1, foPeriod).Err()
		require.EqualError(t, err, "CLUSTERDOWN The cluster is down", "the old master decided for a slot it may no longer own")
		require.Equal(t, "1", c.infoField(t, 0, "cluster_waiting_for_sentinels"))
		resume()
		require.Eventually(t, func() bool { return strings.Contains(c.nodes[0].Log(), "Sentinels heard") },
			sentinelDeadline, 20*time.Millisecond, "the old master hears its Sentinels")
		require.Eventually(t, func() bool {
			return last.set(c.nodes[0].follows(c.nodes[3])) && last.set(c.agree([]int{0}, [healShards]int{3, 1, 2}))
		}, sentinelDeadline, 20*time.Millisecond, "%v", &last)
		err = c.nodes[0].rdb.Do(ctx, "CL.THROTTLE", key, foBurst, 1, foPeriod).Err()
		require.ErrorContains(t, err, "MOVED "+strconv.Itoa(cluster.Slot([]byte(key)))+" "+c.nodes[3].Addr)
		require.Eventually(t, func() bool { return last.set(c.sentinelsSeeReplica(0, 3, 0)) },
			sentinelDeadline, 50*time.Millisecond, "%v", &last)
	})

	t.Run("CLUSTER FAILOVER asks Sentinel for a planned switch", func(t *testing.T) {
		load := startFailoverLoad(t, cc)
		require.Eventually(t, func() bool { return load.acked() >= 500 }, 30*time.Second, 10*time.Millisecond)
		err := c.nodes[5].rdb.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err()
		require.EqualError(t, err, "ERR TAKEOVER would bypass the Sentinels that decide this cluster's failovers; use CLUSTER FAILOVER (or FORCE), which asks them")
		require.NoError(t, c.nodes[5].rdb.Do(ctx, "CLUSTER", "FAILOVER").Err())
		require.Eventually(t, func() bool { return last.set(c.agree([]int{0, 1, 2, 3, 4, 5}, [healShards]int{3, 1, 5})) },
			sentinelDeadline, 20*time.Millisecond, "every node serves the replica switched to: %v", &last)
		before := load.acked()
		require.Eventually(t, func() bool { return load.acked() >= before+foWorkers*foPerKey }, 30*time.Second, 10*time.Millisecond,
			"the client carries on; its last error: %v", load.lastError())
		load.stop()
		lost, acked := lostOnShard(t, load, cc, 2, time.Now(), time.Now(), time.Nanosecond)
		require.Zero(t, lost, "a planned switch loses nothing of the %d decisions acknowledged", acked)
	})

	t.Run("two shards fail over at once", func(t *testing.T) {
		load := startFailoverLoad(t, cc)
		require.Eventually(t, func() bool { return load.acked() >= 500 }, 30*time.Second, 10*time.Millisecond)
		_ = c.nodes[3].Stop(syscall.SIGKILL)
		_ = c.nodes[1].Stop(syscall.SIGKILL)
		require.Eventually(t, func() bool { return last.set(c.agree([]int{0, 2, 4, 5}, [healShards]int{0, 4, 5})) },
			sentinelDeadline, 20*time.Millisecond, "both shards heal: %v", &last)
		before := load.acked()
		require.Eventually(t, func() bool { return load.acked() >= before+foWorkers*foPerKey }, 30*time.Second, 10*time.Millisecond,
			"the client carries on; its last error: %v", load.lastError())
	})
}

// sentinelsSeeReplica reports what the first Sentinel to miss it misses of
// node replica being an online replica of node master in shard: every
// Sentinel must see it (the loop returned at the first one before, checking
// one Sentinel of three).
func (c *healingCluster) sentinelsSeeReplica(shard, master, replica int) error {
	for _, s := range c.ss {
		addr, err := s.masterAddrOf(shardName(shard))
		if err != nil {
			return err
		}
		if addr != c.nodes[master].Addr {
			return fmt.Errorf("the Sentinel on port %d: %s's master is %s", s.Port, shardName(shard), addr)
		}
		rs, err := s.client.Replicas(context.Background(), shardName(shard)).Result()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(rs, func(r map[string]string) bool {
			return r["port"] == strconv.Itoa(c.nodes[replica].Port) && r["flags"] == "slave"
		}) {
			return fmt.Errorf("the Sentinel on port %d: %s's replicas %v", s.Port, shardName(shard), rs)
		}
	}
	return nil
}

// masterAddrOf is the address Sentinel s gives for the master name.
func (s *sentinel) masterAddrOf(name string) (string, error) {
	hp, err := s.client.GetMasterAddrByName(context.Background(), name).Result()
	if err != nil {
		return "", err
	}
	return hp[0] + ":" + hp[1], nil
}

// infoField is CLUSTER INFO's field on node i.
func (c *healingCluster) infoField(t *testing.T, i int, field string) string {
	t.Helper()
	text, err := c.nodes[i].rdb.Do(context.Background(), "CLUSTER", "INFO").Text()
	require.NoError(t, err)
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	t.Fatalf("CLUSTER INFO has no %s:\n%s", field, text)
	return ""
}

// CLUSTER FAILOVER on a replica, where the operator decides failovers: the
// master's writes pause until the replica has applied all of them, then the
// replica pushes the topology with itself as the shard's master to every
// node; under a cluster client's load nothing acknowledged is lost. FORCE
// switches without waiting for the master.
func TestClusterFailoverWithoutSentinel(t *testing.T) {
	var nodes []*redcellNode
	for i := range 3 {
		dir := t.TempDir()
		n := &redcellNode{BinaryServer: harness.StartBinary(t, nil, harness.OnLoopback("--dir", dir, "--cluster-enabled", "yes")...), dir: dir}
		n.rdb = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, MaxRetries: -1})
		t.Cleanup(func() {
			_ = n.rdb.Close()
			if t.Failed() {
				t.Logf("redcell node %d on port %d, its log:\n%s", i, n.Port, n.Log())
			}
		})
		require.NoError(t, n.rdb.Do(context.Background(), "CLUSTERX", "SETNODEID", nodeID(i)).Err())
		nodes = append(nodes, n)
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	text := fmt.Sprintf("%s 127.0.0.1 %d master - 0-16383\n%s 127.0.0.1 %d slave %s\n%s 127.0.0.1 %d slave %s\n",
		nodeID(0), a.Port, nodeID(1), b.Port, nodeID(0), nodeID(2), c.Port, nodeID(0))
	ctx := context.Background()
	for _, n := range nodes {
		require.NoError(t, n.rdb.Do(ctx, "CLUSTERX", "SETNODES", text, "3").Err())
	}
	var last lastErr
	require.Eventually(t, func() bool { return last.set(b.follows(a)) && last.set(c.follows(a)) }, 30*time.Second, 20*time.Millisecond, "%v", &last)
	masterIs := func(m *redcellNode, version string) error {
		for i, n := range nodes {
			text, err := n.rdb.Do(ctx, "CLUSTER", "NODES").Text()
			if err != nil {
				return err
			}
			for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
				f := strings.Fields(line)
				master := slices.Contains(strings.Split(f[2], ","), "master")
				if master != (f[1] == m.Addr+"@"+strconv.Itoa(m.Port+10000)) || master && strings.Join(f[3:], " ") != "- 0 0 "+version+" connected 0-16383" {
					return fmt.Errorf("node %d: CLUSTER NODES\n%s", i, text)
				}
			}
		}
		return nil
	}
	cc := goRedisCluster(t, []string{a.Addr, b.Addr, c.Addr}, func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = time.Second })
	load := startFailoverLoad(t, cc)
	require.Eventually(t, func() bool { return load.acked() >= 500 }, 30*time.Second, 10*time.Millisecond)

	_, err := a.rdb.Do(ctx, "CLUSTER", "FAILOVER").Result()
	require.EqualError(t, err, "ERR You should send CLUSTER FAILOVER to a replica")
	require.NoError(t, b.rdb.Do(ctx, "CLUSTER", "FAILOVER").Err())
	require.Eventually(t, func() bool { return last.set(masterIs(b, "4")) }, 30*time.Second, 20*time.Millisecond, "%v", &last)
	require.Eventually(t, func() bool { return last.set(a.follows(b)) && last.set(c.follows(b)) }, 30*time.Second, 20*time.Millisecond, "%v", &last)
	before := load.acked()
	require.Eventually(t, func() bool { return load.acked() >= before+foWorkers*foPerKey }, 30*time.Second, 10*time.Millisecond,
		"the client carries on; its last error: %v", load.lastError())
	load.stop()
	lost, acked := lostOnShard(t, load, cc, 0, time.Now(), time.Now(), time.Nanosecond)
	require.Zero(t, lost, "a planned switch loses nothing of the %d decisions acknowledged", acked)

	require.NoError(t, c.rdb.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Err())
	require.Eventually(t, func() bool { return last.set(masterIs(c, "5")) }, 30*time.Second, 20*time.Millisecond, "%v", &last)
	require.Eventually(t, func() bool { return last.set(a.follows(c)) && last.set(b.follows(c)) }, 30*time.Second, 20*time.Millisecond, "%v", &last)
}
