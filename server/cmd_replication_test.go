package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/storage"
)

// replNode is one in-process node: its server, store and replication, and a
// client.
type replNode struct {
	addr  string
	port  int
	srv   *Server
	store *storage.Store
	node  *replication.Node
	rdb   *redis.Client
}

func startReplNode(t *testing.T) *replNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	store := storage.New(storage.Config{Shards: 4})
	node := replication.New(replication.Config{Store: store, ListeningPort: port, FeedInterval: time.Millisecond})
	srv := New(Config{Replication: node}, store)
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2})
	t.Cleanup(func() { _ = rdb.Close(); node.Close(); _ = srv.Close(); <-done })
	return &replNode{addr: ln.Addr().String(), port: port, srv: srv, store: store, node: node, rdb: rdb}
}

func (n *replNode) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := n.rdb.Do(context.Background(), args...).Result()
	require.NoError(t, err, "%v", args)
	return v
}

func (n *replNode) info(t *testing.T, field string) string {
	t.Helper()
	s := n.do(t, "INFO", "replication").(string)
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// values returns each key's GET (its TAT), or its error (a window's
// WRONGTYPE), in one pipeline.
func (n *replNode) values(t *testing.T, keys []string) []string {
	cmds, _ := n.rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Get(context.Background(), k)
		}
		return nil
	})
	out := make([]string, len(cmds))
	for i, c := range cmds {
		v, err := c.(*redis.StringCmd).Result()
		if err != nil {
			v = "error: " + err.Error()
		}
		out[i] = v
	}
	return out
}

// sameKeys reports the first of keys whose GET differs between a and b.
func sameKeys(t *testing.T, a, b *replNode, keys []string) error {
	va, vb := a.values(t, keys), b.values(t, keys)
	for i := range keys {
		if va[i] != vb[i] {
			return fmt.Errorf("%s: %v on the master, %v on the replica", keys[i], va[i], vb[i])
		}
	}
	return nil
}

func TestReplicaConvergesRefusesWritesAndContinuesAfterABreak(t *testing.T) {
	ctx := context.Background()
	m, r := startReplNode(t), startReplNode(t)
	var keys []string
	for i := 0; i < 2000; i++ {
		k := "user:" + strconv.Itoa(i)
		keys = append(keys, k)
		m.do(t, "CL.THROTTLE", k, 1000, 1, 3600, 1+i%7)
	}
	_, err := m.rdb.Do(ctx, "CL.WINDOW", "win", 10, 60).Result()
	require.NoError(t, err)
	keys = append(keys, "win")

	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Equal(t, "OK Already connected to specified master", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool { return r.info(t, "master_link_status") == "up" }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return sameKeys(t, m, r, keys) == nil }, 10*time.Second, 10*time.Millisecond)

	// Writes after the full sync stream over: a new key, a changed one, a
	// deleted one, a window's state.
	m.do(t, "CL.THROTTLE", "late", 5, 1, 60)
	m.do(t, "CL.THROTTLE", "user:1", 1000, 1, 3600, 50)
	m.do(t, "DEL", "user:2")
	m.do(t, "CL.WINDOW", "win", 10, 60)
	keys = append(keys, "late")
	require.Eventually(t, func() bool { return sameKeys(t, m, r, keys) == nil }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, m.do(t, "CL.WINDOW", "win", 10, 60, 0), r.do(t, "CL.WINDOW", "win", 10, 60, 0), "a window's peek")
	require.Equal(t, m.do(t, "CL.THROTTLE", "user:1", 1000, 1, 3600, 0), r.do(t, "CL.THROTTLE", "user:1", 1000, 1, 3600, 0), "a peek")

	// The replica refuses writes, and answers peeks.
	for _, cmd := range [][]any{{"CL.THROTTLE", "user:1", 1000, 1, 3600}, {"DEL", "user:1"}, {"CL.WINDOW", "win", 10, 60},
		{"CL.RESERVE", "q", 10, 1, 1}, {"GCRA", "g", 10, 1, 1}, {"FLUSHALL"}} {
		_, err := r.rdb.Do(ctx, cmd...).Result()
		require.EqualError(t, err, "READONLY You can't write against a read only replica.", "%v", cmd)
	}

	// INFO and ROLE as Sentinel reads them.
	require.Equal(t, "slave", r.info(t, "role"))
	require.Equal(t, strconv.Itoa(m.port), r.info(t, "master_port"))
	require.Equal(t, "1", m.info(t, "connected_slaves"))
	require.Regexp(t, `^ip=127\.0\.0\.1,port=`+strconv.Itoa(r.port)+`,state=online,offset=\d+,lag=\d+$`, m.info(t, "slave0"))
	require.Len(t, m.info(t, "master_replid"), 40)
	require.Equal(t, m.info(t, "master_replid"), r.info(t, "master_replid"))
	role := r.do(t, "ROLE").([]any)
	require.Equal(t, []any{"slave", "127.0.0.1", int64(m.port), "connected"}, role[:4])
	mrole := m.do(t, "ROLE").([]any)
	require.Equal(t, "master", mrole[0])
	require.Len(t, mrole[2], 1)

	// WAIT: the replica acknowledges the writes made before it.
	m.do(t, "CL.THROTTLE", "waited", 5, 1, 60)
	require.Equal(t, int64(1), m.do(t, "WAIT", 1, 5000))
	require.Equal(t, int64(1), m.do(t, "WAIT", 2, 100), "one replica of two asked for, after the timeout")
	_, err = r.rdb.Do(ctx, "WAIT", 1, 10).Result()
	require.ErrorContains(t, err, "WAIT cannot be used with replica instances")

	// A short break: the link is dropped and resumes with +CONTINUE.
	full := m.node.Status()
	m.do(t, "CLIENT", "KILL", "TYPE", "replica")
	m.do(t, "CL.THROTTLE", "during-break", 5, 1, 60)
	keys = append(keys, "during-break", "waited")
	require.Eventually(t, func() bool {
		return r.info(t, "master_link_status") == "up" && sameKeys(t, m, r, keys) == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, int64(1), full.SyncFull)
	require.Equal(t, full.SyncFull, m.node.Status().SyncFull, "no second full resynchronization")
	require.Equal(t, full.SyncPartialOK+1, m.node.Status().SyncPartialOK, "a +CONTINUE")
	stats := m.do(t, "INFO", "stats").(string)
	require.Contains(t, stats, "\r\nsync_full:1\r\n")
	require.Contains(t, stats, "\r\nsync_partial_ok:1\r\n")

	// Promotion: the replica takes writes, with a new stream id.
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "NO", "ONE"))
	require.Equal(t, "master", r.info(t, "role"))
	require.Equal(t, m.info(t, "master_replid"), r.info(t, "master_replid2"))
	r.do(t, "CL.THROTTLE", "user:1", 1000, 1, 3600)
}

// Sentinel reconfigures a node with one transaction (sentinelSendSlaveOf in
// Redis's sentinel.c): MULTI, SLAVEOF, CONFIG REWRITE, CLIENT KILL TYPE
// normal, CLIENT KILL TYPE pubsub, EXEC, replies discarded. Its CLIENT KILL
// TYPE normal drops the node's clients, so that they ask Sentinel where the
// master now is, but not the links of the node's replicas, which are not
// normal clients: they stay up, with no resynchronization.
func TestSentinelReconfigurationKeepsReplicaLinks(t *testing.T) {
	m, r := startReplNode(t), startReplNode(t)
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool { return r.info(t, "master_link_status") == "up" }, 10*time.Second, 10*time.Millisecond)
	before := m.node.Status()
	require.Len(t, before.Replicas, 1)

	sentinelTx := func(t *testing.T, addr, host, port string) string {
		bystander, sentinel := testkit.Dial(t, addr), testkit.Dial(t, addr)
		require.Equal(t, "+PONG\r\n", bystander.DoInline("PING"))
		for _, cmd := range []string{"MULTI", "SLAVEOF " + host + " " + port, "CONFIG REWRITE",
			"CLIENT KILL TYPE normal", "CLIENT KILL TYPE pubsub"} {
			want := "+QUEUED\r\n"
			if cmd == "MULTI" {
				want = "+OK\r\n"
			}
			require.Equal(t, want, sentinel.DoInline(cmd), cmd)
		}
		exec := sentinel.DoInline("EXEC")
		require.NoError(t, bystander.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := bystander.Reader.ReadByte()
		require.ErrorIs(t, err, io.EOF, "the bystander, a normal client, is disconnected")
		return exec
	}

	// On the master: SLAVEOF NO ONE keeps it one; CONFIG REWRITE fails
	// without a daemon to write the file; one normal client is killed (the
	// bystander: replies go to the transaction's own connection), no pubsub
	// client.
	exec := sentinelTx(t, m.addr, "NO", "ONE")
	require.Regexp(t, `^\*4\r\n\+OK\r\n-ERR [^\r]*\r\n:1\r\n:0\r\n$`, exec)
	m.do(t, "CL.THROTTLE", "after", 5, 1, 60)
	require.Eventually(t, func() bool { return sameKeys(t, m, r, []string{"after"}) == nil }, 10*time.Second, 10*time.Millisecond,
		"the replica's link is still up and streams")
	after := m.node.Status()
	require.Len(t, after.Replicas, 1)
	require.Equal(t, before.SyncFull, after.SyncFull, "no full resynchronization")
	require.Equal(t, before.SyncPartialOK, after.SyncPartialOK, "no reconnection")

	// On the replica: the same transaction promotes it.
	sentinelTx(t, r.addr, "NO", "ONE")
	require.Equal(t, "master", r.info(t, "role"))
	r.do(t, "CL.THROTTLE", "after", 5, 1, 60)
}

// FAILOVER switches master and replica without losing a decision: the old
// master pauses writes, waits for the replica to acknowledge everything,
// and hands over; the replica continues its stream (+CONTINUE, no full
// resynchronization).
func TestFailoverSwitchesRolesAndKeepsEveryDecision(t *testing.T) {
	ctx := context.Background()
	m, r := startReplNode(t), startReplNode(t)
	_, err := m.rdb.Do(ctx, "FAILOVER").Result()
	require.EqualError(t, err, "ERR FAILOVER requires connected replicas.")
	_, err = m.rdb.Do(ctx, "FAILOVER", "ABORT").Result()
	require.EqualError(t, err, "ERR No failover in progress.")
	_, err = m.rdb.Do(ctx, "FAILOVER", "FORCE").Result()
	require.EqualError(t, err, "ERR FAILOVER requires connected replicas.")

	var keys []string
	for i := 0; i < 500; i++ {
		k := "k" + strconv.Itoa(i)
		keys = append(keys, k)
		m.do(t, "CL.THROTTLE", k, 100, 1, 3600)
	}
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool { return m.info(t, "slave0") != "" && strings.Contains(m.info(t, "slave0"), "state=online") },
		10*time.Second, 10*time.Millisecond)
	_, err = r.rdb.Do(ctx, "FAILOVER").Result()
	require.EqualError(t, err, "ERR FAILOVER is not valid when server is a replica.")
	_, err = m.rdb.Do(ctx, "FAILOVER", "TO", "127.0.0.1", 1).Result()
	require.EqualError(t, err, "ERR FAILOVER target HOST and PORT is not a replica.")
	_, err = m.rdb.Do(ctx, "FAILOVER", "TO", "127.0.0.1", r.port, "FORCE").Result()
	require.EqualError(t, err, "ERR FAILOVER with force option requires both a timeout and target HOST and IP.")

	for _, k := range keys[:100] { // the last writes before the switch
		m.do(t, "CL.THROTTLE", k, 100, 1, 3600)
	}
	for _, tok := range []string{"a", "b"} { // and leases, a concurrency limit of 2
		require.Equal(t, int64(0), m.do(t, "CL.ACQUIRE", "db", 2, 3600_000, "TOKEN", tok).([]any)[0])
	}
	want := m.values(t, keys)
	require.Equal(t, "OK", m.do(t, "FAILOVER", "TO", "127.0.0.1", r.port, "TIMEOUT", 10000))
	require.Eventually(t, func() bool {
		return m.info(t, "role") == "slave" && m.info(t, "master_link_status") == "up" && r.info(t, "role") == "master"
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, strconv.Itoa(r.port), m.info(t, "master_port"))
	require.Equal(t, "no-failover", m.info(t, "master_failover_state"))
	require.Equal(t, want, r.values(t, keys), "the new master holds every decision")
	require.Equal(t, int64(0), r.node.Status().SyncFull, "the old master continued the stream")
	require.Equal(t, int64(1), r.node.Status().SyncPartialOK)

	leases := r.do(t, "CL.LEASES", "db").([]any)
	require.Len(t, leases, 2, "the new master holds the leases granted before the switch")
	require.Equal(t, int64(1), r.do(t, "CL.ACQUIRE", "db", 2, 3600_000, "TOKEN", "c").([]any)[0], "and the limit against them")
	_, err = m.rdb.Do(ctx, "CL.ACQUIRE", "db", 2, 3600_000).Result()
	require.EqualError(t, err, "READONLY You can't write against a read only replica.")
	require.Equal(t, int64(1), r.do(t, "CL.RELEASE", "db", "a"))
	require.Eventually(t, func() bool { return len(m.do(t, "CL.LEASES", "db").([]any)) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the release reaches the new replica")

	r.do(t, "CL.THROTTLE", "k1", 100, 1, 3600)
	require.Eventually(t, func() bool { return sameKeys(t, r, m, keys) == nil }, 10*time.Second, 10*time.Millisecond)
	_, err = m.rdb.Do(ctx, "CL.THROTTLE", "k1", 100, 1, 3600).Result()
	require.EqualError(t, err, "READONLY You can't write against a read only replica.")
}

// min-replicas-to-write, as Redis's: a master with fewer good replicas
// refuses what would store (NOREPLICAS), answers peeks and decisions that
// store nothing, and says in INFO how many replicas are good; CONFIG SET
// turns it on and off.
func TestMinReplicasToWrite(t *testing.T) {
	ctx := context.Background()
	m := startReplNode(t)
	noReplicas := "NOREPLICAS Not enough good replicas to write."
	require.Equal(t, "OK", m.do(t, "CONFIG", "SET", "min-replicas-to-write", 1))
	require.Equal(t, []any{"min-replicas-max-lag", "10", "min-replicas-to-write", "1"}, m.do(t, "CONFIG", "GET", "min-replicas-*"))
	require.Equal(t, "0", m.info(t, "min_slaves_good_slaves"))
	for _, cmd := range [][]any{{"CL.THROTTLE", "k", 1, 1, 60}, {"GCRA", "g", 1, 1, 60}, {"CL.WINDOW", "w", 1, 60},
		{"CL.RESERVE", "q", 1, 1, 60}, {"CL.ACQUIRE", "l", 1, 1000}, {"DEL", "k"}, {"FLUSHALL"}} {
		_, err := m.rdb.Do(ctx, cmd...).Result()
		require.EqualError(t, err, noReplicas, "%v", cmd)
	}
	require.Equal(t, []any{int64(0), int64(2), int64(2), int64(-1), int64(0)}, m.do(t, "CL.THROTTLE", "k", 1, 1, 60, 0), "a peek")
	require.Equal(t, []any{int64(1), int64(2), int64(2), int64(-1), int64(0)}, m.do(t, "CL.THROTTLE", "k", 1, 1, 60, 3),
		"a decision that stores nothing: more than the burst")
	require.Contains(t, m.do(t, "INFO", "errorstats"), "errorstat_NOREPLICAS:count=28", "go-redis tries each refused command 4 times: it retries NOREPLICAS")

	// A replica that acknowledges: the master decides again.
	r := startReplNode(t)
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool {
		_, err := m.rdb.Do(ctx, "CL.THROTTLE", "k", 1, 1, 60).Result()
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "1", m.info(t, "min_slaves_good_slaves"))

	// It goes: NOREPLICAS again, until the check is turned off.
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "NO", "ONE"))
	require.Eventually(t, func() bool { return m.info(t, "min_slaves_good_slaves") == "0" }, 10*time.Second, 10*time.Millisecond)
	_, err := m.rdb.Do(ctx, "CL.THROTTLE", "k", 1, 1, 60).Result()
	require.EqualError(t, err, noReplicas)
	require.Equal(t, "OK", m.do(t, "CONFIG", "SET", "min-replicas-max-lag", 0))
	require.Equal(t, "", m.info(t, "min_slaves_good_slaves"), "shown only while the check is on")
	require.Equal(t, []any{int64(0), int64(2), int64(0), int64(-1), int64(120)}, m.do(t, "CL.THROTTLE", "k", 1, 1, 60))

	_, err = m.rdb.Do(ctx, "CONFIG", "SET", "min-replicas-to-write", -1).Result()
	require.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument 'min-replicas-to-write') - argument must be between 0 and 2147483647 inclusive")
	_, err = m.rdb.Do(ctx, "CONFIG", "SET", "min-slaves-max-lag", "x").Result()
	require.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument 'min-slaves-max-lag') - argument couldn't be parsed into an integer")
}
