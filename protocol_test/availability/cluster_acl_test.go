package availability_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
)

// clusterUsers is a cluster's ACL file: the default user with a password,
// the internal user the nodes move slots and push topologies as, and the
// application's user, allowed what a cluster client asks besides its
// decisions (CLUSTER SLOTS or SHARDS, COMMAND, ASKING, READONLY).
const clusterUsers = `user default on >admin-secret ~* &* +@all
user cluster on >cluster-secret ~* &* -@all +clusterx +client|pause +client|unpause +role +info +ping
user app on >app-secret resetkeys ~rl:* +cl.throttle +ping +client|setinfo +cluster|slots +cluster|shards +command +asking +readonly
`

// A slot moves, its keys' state with it, between nodes that authenticate
// to each other as the internal user (--cluster-auth-user): the source
// connects to the destination as that user, which the destination allows
// CLUSTERX; the application's user decides on the slot's keys before and
// after through go-redis's cluster client. An internal user refused
// CLUSTERX fails the move, and says so in the destination's ACL LOG.
func TestClusterMigratesASlotAsTheInternalUser(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(file, []byte(clusterUsers), 0o600))
	var nodes []*reshardNode
	var top strings.Builder
	for i := range 2 {
		p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory", "--cluster-enabled", "yes", "--aclfile", file,
			"--cluster-auth-user", "cluster", "--cluster-auth-pass", "cluster-secret")...)
		rdb := p.GoRedis(t, func(o *redis.Options) { o.Protocol, o.Password = 2, "admin-secret" })
		id, err := rdb.Do(harness.Ctx(t), "CLUSTER", "MYID").Text()
		require.NoError(t, err)
		nodes = append(nodes, &reshardNode{BinaryServer: p, id: id, rdb: rdb})
		fmt.Fprintf(&top, "%s 127.0.0.1 %d master - %d-%d\n", id, p.Port, i*cluster.Slots/2, (i+1)*cluster.Slots/2-1)
	}
	for _, n := range nodes {
		require.NoError(t, n.rdb.Do(harness.Ctx(t), "CLUSTERX", "SETNODES", top.String(), 1).Err())
	}
	from, to := nodes[0], nodes[1]

	app := goRedisCluster(t, []string{from.Addr}, func(o *redis.ClusterOptions) { o.Username, o.Password = "app", "app-secret" })
	// Two slots of the first node's: keys with a hash tag each.
	var tags []string
	for i := 0; len(tags) < 2; i++ {
		if tag := fmt.Sprintf("t%d", i); cluster.Slot([]byte(tag)) < cluster.Slots/2 {
			tags = append(tags, tag)
		}
	}
	keysOfTag := func(tag string) []string {
		var out []string
		for i := range 5 {
			out = append(out, fmt.Sprintf("rl:{%s}:%d", tag, i))
		}
		return out
	}
	for _, tag := range tags {
		for _, k := range keysOfTag(tag) {
			res, err := app.Do(harness.Ctx(t), "CL.THROTTLE", k, 9, 1, 3600, 3).Int64Slice()
			require.NoError(t, err, k)
			require.Equal(t, []int64{0, 10, 7, -1, 10800}, res, k)
		}
	}

	moved := cluster.Slot([]byte(tags[0]))
	require.NoError(t, from.rdb.Do(harness.Ctx(t), "CLUSTERX", "MIGRATE", moved, to.id, "SYNC").Err(),
		"the source moves the slot as the internal user")
	for _, n := range nodes {
		require.NoError(t, n.rdb.Do(harness.Ctx(t), "CLUSTERX", "SETSLOT", moved, "NODE", to.id, 2).Err())
	}
	for _, k := range keysOfTag(tags[0]) {
		res, err := to.rdb.Do(harness.Ctx(t), "CL.THROTTLE", k, 9, 1, 3600, 0).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, []int64{0, 10, 7, -1, 10800}, res, "%s: its state moved with it", k)
		res, err = app.Do(harness.Ctx(t), "CL.THROTTLE", k, 9, 1, 3600).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, int64(6), res[2], "%s: the application decides on its new node", k)
	}
	require.Empty(t, (&redcellNode{rdb: to.rdb}).refusals(t), "the destination refused the internal user nothing")

	// The internal user without CLUSTERX: the move fails, and stays.
	require.NoError(t, to.rdb.Do(harness.Ctx(t), "ACL", "SETUSER", "cluster", "-clusterx").Err())
	err := from.rdb.Do(harness.Ctx(t), "CLUSTERX", "MIGRATE", cluster.Slot([]byte(tags[1])), to.id, "SYNC").Err()
	require.ErrorContains(t, err, "NOPERM User cluster has no permissions to run the 'clusterx|import' command")
	require.Contains(t, (&redcellNode{rdb: to.rdb}).refusals(t), "cluster command clusterx|import")
	res, err := app.Do(harness.Ctx(t), "CL.THROTTLE", keysOfTag(tags[1])[0], 9, 1, 3600, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, int64(7), res[2], "the slot stayed on its node, its keys as they were")
}
