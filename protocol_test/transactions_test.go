package protocol_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// MULTI, queued commands, EXEC: the replies in one array, under RESP2 and
// RESP3, and Redis's errors for the misuses.
func TestMultiExecReplies(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("PTTL", "k"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1", "-1"))
	require.Equal(t, "*4\r\n"+testkit.Ints(0, 5, 4, -1, 1)+testkit.Ints(0, 5, 3, -1, 2)+testkit.Int(2000)+
		testkit.Err("ERR quantity must not be negative"), c.Do("EXEC"), "an error inside EXEC is that command's reply")

	require.Equal(t, testkit.Err("ERR EXEC without MULTI"), c.Do("EXEC"))
	require.Equal(t, testkit.Err("ERR DISCARD without MULTI"), c.Do("DISCARD"))
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Err("ERR MULTI calls can not be nested"), c.Do("MULTI"))
	require.Equal(t, testkit.Err("ERR WATCH inside MULTI is not allowed"), c.Do("WATCH", "k"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("PING"))
	require.Equal(t, "*1\r\n"+testkit.Simple("PONG"), c.Do("EXEC"), "neither error aborts the transaction, as in Redis")

	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.OK, c.Do("DISCARD"))
	require.Equal(t, testkit.Ints(0, 5, 2, -1, 3), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "the discarded decision never ran")

	// RESP3: the same array.
	require.Equal(t, "*2\r\n"+testkit.Ints(0, 5, 1, -1, 4)+":1\r\n", execOn(t, ts, "CL.THROTTLE k 4 1 1", "EXISTS k"))
}

// execOn runs the commands (space-separated words) in one transaction on a
// fresh RESP3 connection and returns EXEC's reply.
func execOn(t *testing.T, ts *harness.TestServer, commands ...string) string {
	t.Helper()
	c := ts.Raw(t)
	c.Do("HELLO", "3")
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	for _, cmd := range commands {
		require.Equal(t, testkit.Simple("QUEUED"), c.Do(strings.Fields(cmd)...))
	}
	return c.Do("EXEC")
}

// A command refused while queued (unknown, wrong arity, not allowed in
// MULTI) aborts the transaction: EXEC answers EXECABORT and nothing runs, so
// a client that retries is never charged twice. (Before, every client's
// default transaction failed after spending the token.)
func TestRefusedCommandAbortsTheTransaction(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for _, refused := range [][]string{
		{"CL.NOSUCH", "k"},
		{"CL.THROTTLE", "k"},
		{"SAVE"},
	} {
		require.Equal(t, testkit.OK, c.Do("MULTI"))
		require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
		reply := c.Do(refused...)
		require.True(t, strings.HasPrefix(reply, "-ERR "), "%v: %q", refused, reply)
		require.Equal(t, testkit.Err("EXECABORT Transaction discarded because of previous errors."), c.Do("EXEC"), "%v", refused)
		require.Equal(t, testkit.Ints(0, 5, 5, -1, 0), c.Do("CL.THROTTLE", "k", "4", "1", "1", "0"), "%v: nothing ran", refused)
	}
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Err("ERR Command not allowed inside a transaction"), c.Do("SHUTDOWN"))
	require.Equal(t, testkit.OK, c.Do("DISCARD"))
}

// WATCH: a watched key changed by another client (or that expired) makes
// EXEC answer a null array and run nothing; an unchanged one lets it run;
// EXEC, DISCARD and UNWATCH forget the watches.
func TestWatch(t *testing.T) {
	ts := harness.StartServer(t)
	c, other := ts.Raw(t), ts.Raw(t)
	other.Do("CL.THROTTLE", "w", "4", "1", "10")

	require.Equal(t, testkit.OK, c.Do("WATCH", "w", "absent"))
	other.Do("CL.THROTTLE", "w", "4", "1", "10")
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "w", "4", "1", "10"))
	require.Equal(t, "*-1\r\n", c.Do("EXEC"), "the key changed: RESP2's null array")
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 20), c.Do("CL.THROTTLE", "w", "4", "1", "10", "0"), "the transaction's decision never ran")

	require.Equal(t, testkit.OK, c.Do("WATCH", "w"))
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "w", "4", "1", "10"))
	require.Equal(t, "*1\r\n"+testkit.Ints(0, 5, 2, -1, 30), c.Do("EXEC"), "unchanged: it runs")

	// A key created by another client counts as changed; so does one
	// that expired meanwhile.
	require.Equal(t, testkit.OK, c.Do("WATCH", "new"))
	other.Do("CL.THROTTLE", "new", "0", "1", "1")
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, "*-1\r\n", c.Do("EXEC"))
	require.Equal(t, testkit.OK, c.Do("WATCH", "new"))
	ts.Clock.Advance(2 * time.Second)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, "*-1\r\n", c.Do("EXEC"), "the watched key expired")

	require.Equal(t, testkit.OK, c.Do("WATCH", "w"))
	require.Equal(t, testkit.OK, c.Do("UNWATCH"))
	other.Do("CL.THROTTLE", "w", "4", "1", "10")
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, "*0\r\n", c.Do("EXEC"), "UNWATCH forgot it")

	h := ts.Raw(t)
	h.Do("HELLO", "3")
	require.Equal(t, testkit.OK, h.Do("WATCH", "w"))
	other.Do("CL.THROTTLE", "w", "4", "1", "10")
	require.Equal(t, testkit.OK, h.Do("MULTI"))
	require.Equal(t, "_\r\n", h.Do("EXEC"), "RESP3's null")
}

// EXEC runs its commands with no other client's command between them: with
// eight clients deciding on the same keys, every transaction's replies count
// down one at a time, and no decision is lost or doubled.
func TestExecIsAtomic(t *testing.T) {
	ts := harness.StartServer(t)
	const clients, rounds, perTx = 8, 200, 4
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rdb := ts.GoRedis(t, func(o *redis.Options) { o.PoolSize = 1 })
			ctx := context.Background()
			for i := 0; i < rounds; i++ {
				key := fmt.Sprintf("k%d", i%3)
				cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					for j := 0; j < perTx; j++ {
						p.Do(ctx, "CL.THROTTLE", key, 1_000_000, 1, 1)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				first := cmds[0].(*redis.Cmd).Val().([]any)[2].(int64)
				for j, cmd := range cmds {
					if got := cmd.(*redis.Cmd).Val().([]any)[2].(int64); got != first-int64(j) {
						errs <- fmt.Errorf("client %d round %d: remaining %d at %d, want %d: another command ran inside EXEC", w, i, got, j, first-int64(j))
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c := ts.Raw(t)
	total := int64(0)
	for i := 0; i < 3; i++ {
		r := c.Do("CL.THROTTLE", fmt.Sprintf("k%d", i), "1000000", "1", "1", "0")
		var limited, limit, remaining, retry, reset int64
		_, err := fmt.Sscanf(r, "*5\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n", &limited, &limit, &remaining, &retry, &reset)
		require.NoError(t, err)
		total += limit - remaining
	}
	require.Equal(t, int64(clients*rounds*perTx), total, "every decision counted once")
}

// go-redis's TxPipelined and Watch, and rueidis's MULTI/EXEC, work as with
// Redis.
func TestClientTransactions(t *testing.T) {
	ts := harness.StartServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
		key := fmt.Sprintf("go%d", proto)
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "CL.THROTTLE", key, 1, 1, 60)
			p.Do(ctx, "CL.THROTTLE", key, 1, 1, 60)
			p.PTTL(ctx, key)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, []any{int64(0), int64(2), int64(1), int64(-1), int64(60)}, cmds[0].(*redis.Cmd).Val())
		require.Equal(t, []any{int64(0), int64(2), int64(0), int64(-1), int64(120)}, cmds[1].(*redis.Cmd).Val())
		require.Equal(t, 120*time.Second, cmds[2].(*redis.DurationCmd).Val())

		// Watch: the optimistic check-and-act loop go-redis documents.
		other := ts.GoRedis(t)
		watchKey := key + ":w"
		attempts := 0
		err = rdb.Watch(ctx, func(tx *redis.Tx) error {
			attempts++
			if attempts == 1 {
				other.Do(ctx, "CL.THROTTLE", watchKey, 1, 1, 60) // meddles once
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "CL.THROTTLE", watchKey, 1, 1, 60)
				return nil
			})
			return err
		}, watchKey)
		require.ErrorIs(t, err, redis.TxFailedErr, "the first attempt failed on the meddling")
		require.Equal(t, 1, attempts)
	}

	rc := ts.Rueidis(t)
	replies := rc.DoMulti(ctx,
		rc.B().Multi().Build(),
		rc.B().Arbitrary("CL.THROTTLE").Keys("rue").Args("1", "1", "60").Build(),
		rc.B().Exec().Build())
	arr, err := replies[2].ToArray()
	require.NoError(t, err)
	vals, err := arr[0].AsIntSlice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 2, 1, -1, 60}, vals)
}

// Every command the table serves, queued after a decision on a key and run
// by EXEC, answers: none of them takes a lock the transaction holds (which
// would wait forever).
func TestEveryCommandRunsInsideExec(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	c.Do("CL.THROTTLE", "k", "4", "1", "1")
	for _, cmd := range [][]string{
		{"GET", "k"}, {"TTL", "k"}, {"PTTL", "k"}, {"TYPE", "k"}, {"EXISTS", "k", "x"}, {"STRLEN", "k"},
		{"KEYS", "*"}, {"SCAN", "0"}, {"DBSIZE"}, {"INFO"}, {"INFO", "keyspace"}, {"INFO", "memory"},
		{"MEMORY", "USAGE", "k"}, {"OBJECT", "ENCODING", "k"}, {"CONFIG", "GET", "maxmemory"},
		{"CLIENT", "LIST"}, {"CLIENT", "ID"}, {"COMMAND", "COUNT"}, {"TIME"}, {"ECHO", "x"},
		{"LASTSAVE"}, {"SLOWLOG", "LEN"}, {"UNWATCH"}, {"DEL", "gone"}, {"UNLINK", "gone"},
		{"FLUSHDB"}, {"CL.THROTTLE", "k", "4", "1", "1"},
	} {
		require.Equal(t, testkit.OK, c.Do("MULTI"))
		require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
		require.Equal(t, testkit.Simple("QUEUED"), c.Do(cmd...), "%v", cmd)
		require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		reply := c.Do("EXEC")
		require.True(t, strings.HasPrefix(reply, "*2\r\n"), "%v inside EXEC: %q", cmd, reply)
	}
}

// Sentinel reconfigures a node inside MULTI/EXEC, with CLIENT KILL and
// CONFIG among the queued commands: they run, in order.
func TestSentinelStyleTransaction(t *testing.T) {
	ts := harness.StartServer(t)
	victim := ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), victim.Do("PING"))
	c := ts.Raw(t)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CONFIG", "GET", "port"))
	reply := c.Do("EXEC")
	require.True(t, strings.HasPrefix(reply, "*2\r\n:1\r\n"), "one client killed: %q", reply)
	victim.ExpectClosed()
}

// A monitor sees MULTI, then each queued command as EXEC runs it, then
// EXEC, as Redis shows a transaction.
func TestMonitorShowsATransaction(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	m := startMonitor(t, ts)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("PTTL", "k"))
	c.Do("EXEC")
	for _, want := range [][]string{{"MULTI"}, {"CL.THROTTLE", "k", "4", "1", "1"}, {"PTTL", "k"}, {"EXEC"}} {
		require.Equal(t, line(harness.T0, addrOf(c), quote(want...)), m.Read())
	}
}

// Under CLIENT PAUSE WRITE, an EXEC that would write waits like a write;
// one that only reads runs.
func TestPauseWriteHoldsAnExecThatWrites(t *testing.T) {
	ts := harness.StartServer(t)
	admin, c, r := ts.Raw(t), ts.Raw(t), ts.Raw(t)
	require.Equal(t, testkit.OK, admin.Do("CLIENT", "PAUSE", "60000", "WRITE"))
	require.Equal(t, testkit.OK, r.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), r.Do("PTTL", "k"))
	require.Equal(t, "*1\r\n"+testkit.Int(-2), r.Do("EXEC"), "reads only: runs under the pause")

	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	c.Write(testkit.Command("EXEC"))
	require.Eventually(t, func() bool { return strings.Contains(admin.Do("CLIENT", "LIST"), "flags=b") }, 5*time.Second, 5*time.Millisecond,
		"the EXEC waits on the pause")
	require.Contains(t, bulkBody(t, admin.Do("INFO", "clients")), "blocked_clients:1\r\n")
	require.Equal(t, testkit.OK, admin.Do("CLIENT", "UNPAUSE"))
	require.Equal(t, "*1\r\n"+testkit.Ints(0, 5, 4, -1, 1), c.Read())
}

// countingPersistence counts the syncs durable mode asks for.
type countingPersistence struct {
	mu    sync.Mutex
	syncs int
}

func (p *countingPersistence) Flush() error         { return nil }
func (p *countingPersistence) BackgroundSave() bool { return true }
func (p *countingPersistence) Pending() int         { return 0 }
func (p *countingPersistence) InFlight() int        { return 0 }
func (p *countingPersistence) Failing() bool        { return false }
func (p *countingPersistence) Stats() storage.FlushStats {
	return storage.FlushStats{LastOK: true, DiskState: "ok"}
}
func (p *countingPersistence) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncs++
	return nil
}
func (p *countingPersistence) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.syncs
}

// In durable mode one EXEC is one group commit: its changes are synced
// once, before its reply, however many there are; queueing syncs nothing.
func TestDurableExecIsOneGroupCommit(t *testing.T) {
	p := &countingPersistence{}
	ts := harness.StartServer(t, func(c *server.Config) { c.Persistence, c.DurableWrites = p, true })
	c := ts.Raw(t)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	for i := 0; i < 5; i++ {
		require.Equal(t, testkit.Simple("QUEUED"), c.Do("CL.THROTTLE", fmt.Sprintf("k%d", i), "4", "1", "1"))
	}
	require.Zero(t, p.count(), "queueing changes nothing")
	require.True(t, strings.HasPrefix(c.Do("EXEC"), "*5\r\n"))
	require.Equal(t, 1, p.count())
	for i := 0; i < 5; i++ {
		c.Do("CL.THROTTLE", fmt.Sprintf("k%d", i), "4", "1", "1")
	}
	require.Equal(t, 6, p.count(), "outside a transaction, each change waits for its own")
}
