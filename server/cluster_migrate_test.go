package server

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"redcell/cluster"
)

// migrationPair is nodes a and b of a pushed topology at version 1, and
// keys of a slot a serves.
func migrationPair(t *testing.T) (a, b *clusterNode, slot int, keys []string) {
	t.Helper()
	nodes := startClusterNodes(t, 3)
	top := topology(nodes)
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", top, 1)
		require.NoError(t, err)
	}
	slot = cluster.Slot([]byte("bar"))
	for i := 0; len(keys) < 5; i++ {
		if k := "key" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			keys = append(keys, k)
		}
	}
	return nodes[0], nodes[1], slot, keys
}

// remaining is CL.THROTTLE key 10 1 3600's remaining, peeked on n.
func (n *clusterNode) remaining(t *testing.T, key string, asking bool) int64 {
	t.Helper()
	ctx := context.Background()
	cmds, err := n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if asking {
			p.Do(ctx, "ASKING")
		}
		p.Do(ctx, "CL.THROTTLE", key, 10, 1, 3600, 0)
		return nil
	})
	require.NoError(t, err)
	v, err := cmds[len(cmds)-1].(*redis.Cmd).Int64Slice()
	require.NoError(t, err)
	return v[2]
}

// A transaction queued while its slot was served here, and EXEC'd once the
// slot has moved, is redirected as a whole and runs nothing, as Redis's EXEC
// (which routes the queued commands again): run here it would decide on a
// copy the slot's owner never sees, a decision lost.
func TestClusterExecAfterTheSlotMovedIsRedirected(t *testing.T) {
	a, b, slot, keys := migrationPair(t)
	ctx := context.Background()
	k := keys[0]
	_, err := a.do(t, "CL.THROTTLE", k, 10, 1, 3600)
	require.NoError(t, err)

	// No retries: go-redis sends a command again after TRYAGAIN, which
	// would hide what EXEC answered.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(a.port), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	asking := rdb.Conn()
	defer asking.Close()
	moved := rdb.Conn()
	defer moved.Close()
	for _, conn := range []*redis.Conn{asking, moved} {
		require.NoError(t, conn.Do(ctx, "MULTI").Err())
		v, err := conn.Do(ctx, "CL.THROTTLE", k, 10, 1, 3600).Result()
		require.NoError(t, err)
		require.Equal(t, "QUEUED", v)
	}

	_, err = a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
	require.NoError(t, err)
	_, err = asking.Do(ctx, "EXEC").Result()
	require.EqualError(t, err, "ASK "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(b.port))
	require.EqualError(t, asking.Do(ctx, "EXEC").Err(), "ERR EXEC without MULTI", "the transaction was discarded")

	for _, n := range []*clusterNode{b, a} {
		_, err := n.do(t, "CLUSTERX", "SETSLOT", slot, "NODE", b.id, 2)
		require.NoError(t, err)
	}
	_, err = moved.Do(ctx, "EXEC").Result()
	require.EqualError(t, err, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(b.port))

	require.Equal(t, int64(10), b.remaining(t, k, false), "one decision, before the move; none from the transactions")
	n, _ := a.do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
	require.Equal(t, int64(0), n, "nothing decided on the old owner")
}

// ASKING holds for the transaction it precedes, as Redis's (go-redis sends
// ASKING, MULTI, the commands, EXEC to follow an ASK): the destination of a
// migration runs it.
func TestClusterAskingHoldsForATransaction(t *testing.T) {
	a, b, slot, keys := migrationPair(t)
	ctx := context.Background()
	_, err := a.do(t, "CL.THROTTLE", keys[0], 10, 1, 3600)
	require.NoError(t, err)
	_, err = a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
	require.NoError(t, err)

	cmds, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING")
		p.Do(ctx, "MULTI")
		p.Do(ctx, "CL.THROTTLE", keys[0], 10, 1, 3600)
		p.Do(ctx, "CL.THROTTLE", keys[1], 10, 1, 3600)
		p.Do(ctx, "EXEC")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []any{"OK", "OK", "QUEUED", "QUEUED"},
		[]any{cmds[0].(*redis.Cmd).Val(), cmds[1].(*redis.Cmd).Val(), cmds[2].(*redis.Cmd).Val(), cmds[3].(*redis.Cmd).Val()})
	require.Equal(t, []any{
		[]any{int64(0), int64(11), int64(9), int64(-1), int64(7200)},
		[]any{int64(0), int64(11), int64(10), int64(-1), int64(3600)},
	}, cmds[4].(*redis.Cmd).Val())
	_, err = b.do(t, "CL.THROTTLE", keys[0], 10, 1, 3600)
	require.EqualError(t, err, "MOVED "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(a.port), "ASKING ended with EXEC")

	// A cluster client's transaction follows the ASK.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(a.port)}})
	defer cc.Close()
	tx := cc.TxPipeline()
	first := tx.Do(ctx, "CL.THROTTLE", keys[0], 10, 1, 3600)
	second := tx.Do(ctx, "CL.THROTTLE", keys[2], 10, 1, 3600)
	_, err = tx.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, []any{int64(0), int64(11), int64(8), int64(-1), int64(10800)}, first.Val())
	require.Equal(t, []any{int64(0), int64(11), int64(10), int64(-1), int64(3600)}, second.Val())
	require.Equal(t, int64(8), b.remaining(t, keys[0], true))
}
