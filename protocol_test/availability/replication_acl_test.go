package availability_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Replication and Sentinel with ACL users, docs/security.md's: each node loads
// one ACL file, in which the default user has a password, the replicas
// link to their master as a user allowed PSYNC, REPLCONF and PING alone
// (--masteruser), Sentinel connects as a user allowed what it sends
// (auth-user), and the application as a user allowed CL.THROTTLE on its
// prefix.

// aclUsers is that ACL file.
const aclUsers = `user default on >admin-secret ~* &* +@all
user replica on >replica-secret +psync +replconf +ping
user sentinel on >sentinel-secret allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill
user app on >app-secret resetkeys ~rl:* +cl.throttle +ping +client|setinfo
`

// aclFile writes aclUsers to a file of the test's.
func aclFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte(aclUsers), 0o600))
	return path
}

// startACLNode starts the built binary with the ACL file, replicating (if
// replicaOf is not 0) as the replica user, with args after its own, and a
// client authenticated as the default user.
func startACLNode(t *testing.T, file string, replicaOf int, args ...string) *redcellNode {
	t.Helper()
	dir := t.TempDir()
	all := harness.OnLoopback(append([]string{"--dir", dir, "--aclfile", file, "--masteruser", "replica", "--masterauth", "replica-secret"}, args...)...)
	if replicaOf != 0 {
		all = append(all, "--replicaof", "127.0.0.1 "+strconv.Itoa(replicaOf))
	}
	n := &redcellNode{BinaryServer: harness.StartBinary(t, nil, all...), dir: dir}
	n.rdb = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, MaxRetries: -1, Password: "admin-secret"})
	t.Cleanup(func() {
		_ = n.rdb.Close()
		if t.Failed() {
			t.Logf("redcell on port %d (--dir %s), its log:\n%s", n.Port, n.dir, n.Log())
		}
	})
	return n
}

// monitorWithUser makes each Sentinel monitor the master at port as the
// sentinel user, with the failover test's timings.
func monitorWithUser(t *testing.T, ss []*sentinel, port int) {
	t.Helper()
	c := context.Background()
	for _, s := range ss {
		require.NoError(t, s.client.Monitor(c, sentinelMaster, "127.0.0.1", strconv.Itoa(port), "2").Err())
		require.NoError(t, s.client.Set(c, sentinelMaster, "auth-user", "sentinel").Err())
		require.NoError(t, s.client.Set(c, sentinelMaster, "auth-pass", "sentinel-secret").Err())
		require.NoError(t, s.client.Set(c, sentinelMaster, "down-after-milliseconds", sentinelDownAfter).Err())
		require.NoError(t, s.client.Set(c, sentinelMaster, "failover-timeout", "5000").Err())
	}
}

// refusals returns a node's ACL LOG entries as "user reason object" lines.
func (n *redcellNode) refusals(t *testing.T) []string {
	t.Helper()
	entries, err := n.rdb.Do(context.Background(), "ACL", "LOG").Slice()
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		f := map[string]any{}
		fields := e.([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			f[fields[i].(string)] = fields[i+1]
		}
		out = append(out, fmt.Sprintf("%v %v %v", f["username"], f["reason"], f["object"]))
	}
	return out
}

// A master and its replica linked as the replica user, three Sentinels
// watching them as the sentinel user: the Sentinels see the topology,
// promote the replica when the master is killed under the application
// user's load, and make the old master, restarted, a replica of the new
// one, which it links to as the replica user. No node refused any of it:
// their ACL LOGs hold nothing but what the test asked to be refused.
func TestSentinelFailoverWithUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Sentinels through a failover, some 15 s; skipped with -short")
	}
	path := needSentinel(t)
	file := aclFile(t)
	master := startACLNode(t, file, 0)
	replica := startACLNode(t, file, master.Port)
	var last lastErr
	require.Eventually(t, func() bool { return last.set(replica.follows(master)) }, 30*time.Second, 20*time.Millisecond,
		"the replica links as the replica user: %v", &last)

	// The replica user may link, and nothing else.
	ru := redis.NewClient(&redis.Options{Addr: master.Addr, Username: "replica", Password: "replica-secret", Protocol: 2})
	t.Cleanup(func() { _ = ru.Close() })
	require.EqualError(t, ru.Do(context.Background(), "CL.THROTTLE", "rl:x", 1, 1, 1).Err(),
		"NOPERM User replica has no permissions to run the 'cl.throttle' command")
	require.NoError(t, master.rdb.Do(context.Background(), "ACL", "LOG", "RESET").Err())

	ss := startSentinels(t, path, 3, 0)
	monitorWithUser(t, ss, master.Port)
	waitTopology(t, ss, master, replica)

	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: sentinelMaster, SentinelAddrs: sentinelAddrs(ss),
		Username: "app", Password: "app-secret", MaxRetries: -1,
	})
	t.Cleanup(func() { _ = fc.Close() })
	decide := func(key string) error { return fc.Do(context.Background(), "CL.THROTTLE", key, 100, 1, 3600).Err() }
	require.NoError(t, decide("rl:before"))

	_ = master.Stop(syscall.SIGKILL) // exits "signal: killed"
	require.Eventually(t, func() bool {
		addr, err := ss[0].masterAddr()
		return last.set(err) && addr == replica.Addr
	}, sentinelDeadline, 50*time.Millisecond, "Sentinel promotes the replica: %v", &last)
	require.Eventually(t, func() bool { return last.set(decide("rl:after")) }, 30*time.Second, 20*time.Millisecond,
		"the application user decides on the new master: %v", &last)

	master.Restart()
	require.Eventually(t, func() bool { return last.set(master.follows(replica)) }, sentinelDeadline, 100*time.Millisecond,
		"Sentinel makes the old master a replica of the new, which it links to as the replica user: %v", &last)
	for _, n := range []*redcellNode{master, replica} {
		require.Empty(t, n.refusals(t), "redcell %d refused Sentinel or a replica something", n.Port)
	}
	for _, s := range ss {
		require.NotContains(t, s.Log(), "-NOPERM", "Sentinel %d was refused something", s.Port)
	}
	info, err := replica.info()
	require.NoError(t, err)
	require.Equal(t, "master", info["role"])
	require.True(t, strings.HasPrefix(info["slave0"], "ip=127.0.0.1,port="+strconv.Itoa(master.Port)+","), info["slave0"])
}
