package server

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/testkit"
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

// fakeDestination is a migration's destination that speaks just enough of
// CLUSTERX IMPORT to die at a chosen moment (a testkit.Peer): it answers +OK
// to each command, after delay, until die says otherwise, then closes the
// connection (a process killed: the source reads EOF at once). A topology
// lists it as a master without slots.
type fakeDestination struct {
	id   string
	port int
	got  chan []string // every command read, as it is read
}

func startFakeDestination(t *testing.T, delay time.Duration, die func(args []string) bool) *fakeDestination {
	t.Helper()
	p := testkit.StartPeer(t, func(args []string) string {
		if die(args) {
			return ""
		}
		time.Sleep(delay) // a destination slow to answer, not a wait for anything
		return "+OK\r\n"
	})
	return &fakeDestination{id: strings.Repeat("f", 40), port: p.Port, got: p.Got}
}

// withFakeDestination is nodes a and b serving every slot, and the fake
// destination, in one topology at version 1; keys are keys of a slot a
// serves, each with a decision made.
func withFakeDestination(t *testing.T, delay time.Duration, die func(args []string) bool) (a, b *clusterNode, f *fakeDestination, slot int, keys []string) {
	t.Helper()
	nodes := startClusterNodes(t, 2)
	a, b = nodes[0], nodes[1]
	f = startFakeDestination(t, delay, die)
	top := a.id + " 127.0.0.1 " + strconv.Itoa(a.port) + " master - 0-8191\n" +
		b.id + " 127.0.0.1 " + strconv.Itoa(b.port) + " master - 8192-16383\n" +
		f.id + " 127.0.0.1 " + strconv.Itoa(f.port) + " master -\n"
	for _, n := range nodes {
		_, err := n.do(t, "CLUSTERX", "SETNODES", top, 1)
		require.NoError(t, err)
	}
	slot = cluster.Slot([]byte("bar"))
	for i := 0; len(keys) < 20; i++ {
		if k := "key" + strconv.Itoa(i); cluster.Slot([]byte(k)) == slot {
			keys = append(keys, k)
			_, err := a.do(t, "CL.THROTTLE", k, 10, 1, 3600)
			require.NoError(t, err)
		}
	}
	return a, b, f, slot, keys
}

// A destination that dies mid-way, wherever it dies, leaves the slot
// served by the source with its state intact: the source answers the
// MIGRATE with what stopped it, stops sending clients elsewhere, thaws the
// slot, and a cluster client making decisions meanwhile saw no error; a
// later migration to a live node moves the slot exactly.
func TestClusterMigrationToADestinationThatDiesLeavesTheSlotHere(t *testing.T) {
	for _, c := range []struct {
		name string
		die  func(args []string) bool
		last string // the last IMPORT it read
		// hold: it dies once clients have made decisions since it read
		// the last, which they cannot while the slot is frozen.
		hold bool
	}{
		{"at START", func(args []string) bool { return args[3] == "START" }, "START", true},
		{"copying", func(args []string) bool { return args[3] == "KEY" && args[4] == "key11700" }, "KEY", true},
		{"frozen, at DONE", func(args []string) bool { return args[3] == "DONE" }, "DONE", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var decided atomic.Int64
			// A slow link, so that clients decide while it copies.
			a, b, f, slot, keys := withFakeDestination(t, 200*time.Microsecond, func(args []string) bool {
				if !c.die(args) {
					return false
				}
				for mark := decided.Load(); c.hold && decided.Load() < mark+50; {
					time.Sleep(time.Millisecond)
				}
				return true
			})
			ctx := context.Background()
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(a.port)}})
			defer cc.Close()
			stop, done := make(chan struct{}), make(chan struct{})
			allowed := map[string]int64{}
			var clientErr error
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					decided.Add(1)
					select {
					case <-stop:
						return
					default:
					}
					k := keys[i%len(keys)]
					v, err := cc.Do(ctx, "CL.THROTTLE", k, 10, 1, 3600).Int64Slice()
					if err != nil {
						clientErr = err
						return
					}
					if v[0] == 0 {
						allowed[k]++
					}
				}
			}()

			require.Eventually(t, func() bool { return decided.Load() > 100 }, 10*time.Second, time.Millisecond)
			before := decided.Load()
			_, err := a.do(t, "CLUSTERX", "MIGRATE", slot, f.id, "SYNC")
			want := "ERR slot " + strconv.Itoa(slot) + " to " + f.id + " at 127.0.0.1:" + strconv.Itoa(f.port) + ": "
			if c.last == "DONE" {
				want += "frozen for "
			}
			require.ErrorContains(t, err, want)
			// Frozen, a slow link may be given up on before it dies.
			require.True(t, strings.HasSuffix(err.Error(), ": EOF") || c.last == "DONE" && strings.HasSuffix(err.Error(), ": i/o timeout"), err.Error())
			during := decided.Load() - before
			close(stop)
			<-done
			require.NoError(t, clientErr)
			t.Logf("%d decisions while it migrated", during)
			var importCmds []string
			for len(f.got) > 0 {
				args := <-f.got
				importCmds = append(importCmds, args[3])
			}
			require.Equal(t, "START", importCmds[0])
			require.Equal(t, c.last, importCmds[len(importCmds)-1], "%v", importCmds)

			require.Nil(t, a.srv.cluster.Move(slot), "the move is over")
			require.False(t, a.srv.store.Frozen(slot), "the slot thawed")
			nodesLine, _ := a.do(t, "CLUSTER", "NODES")
			require.NotContains(t, nodesLine, "->-")
			for _, k := range keys {
				require.Equal(t, 10-allowed[k], a.remaining(t, k, false), "%s: one decision before, %d during", k, allowed[k])
			}

			v, err := a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
			require.NoError(t, err)
			require.Equal(t, "OK", v)
			for _, k := range keys {
				require.Equal(t, 10-allowed[k], b.remaining(t, k, true), "%s moved exactly", k)
			}
		})
	}
}

// While a slot migrates, a second MIGRATE of it, to any node, is refused,
// and the slot is served here meanwhile.
func TestClusterMigrateRefusesASecondMigrationOfTheSlot(t *testing.T) {
	release := make(chan struct{})
	a, b, f, slot, keys := withFakeDestination(t, 0, func(args []string) bool {
		<-release // holds the first migration at START, then dies
		return true
	})
	v, err := a.do(t, "CLUSTERX", "MIGRATE", slot, f.id)
	require.NoError(t, err)
	require.Equal(t, "OK", v, "without SYNC, at once")
	require.Equal(t, []string{"CLUSTERX", "IMPORT", strconv.Itoa(slot), "START", a.id}, <-f.got)

	for _, dst := range []string{f.id, b.id} {
		_, err := a.do(t, "CLUSTERX", "MIGRATE", slot, dst, "SYNC")
		require.EqualError(t, err, "ERR slot "+strconv.Itoa(slot)+" is already moving", dst)
	}
	nodesLine, _ := a.do(t, "CLUSTER", "NODES")
	require.Contains(t, nodesLine, "["+strconv.Itoa(slot)+"->-"+f.id+"]")
	_, err = a.do(t, "CL.THROTTLE", keys[0], 10, 1, 3600)
	require.NoError(t, err, "served while copying")

	close(release)
	require.Eventually(t, func() bool { return a.srv.cluster.Move(slot) == nil }, 10*time.Second, time.Millisecond)
	v, err = a.do(t, "CLUSTERX", "MIGRATE", slot, b.id, "SYNC")
	require.NoError(t, err)
	require.Equal(t, "OK", v, "once the first has failed")
	require.Equal(t, int64(9), b.remaining(t, keys[0], true), "two decisions, before and while it moved")
}

// A command on a frozen slot waits for the freeze to end, then is routed:
// sent to the destination with ASK once it holds the slot, or run here if
// the destination was given up on (it stopped answering: a process
// stopped, a link cut without a reset). It is not answered TRYAGAIN, whose
// retries a cluster client shares with its MOVED and ASK redirects
// (go-redis's four attempts in all): one whose map of slots is stale, sent
// on twice with MOVED, gives up after one more TRYAGAIN and 10ms to 50ms.
func TestClusterCommandsWaitOutAFreeze(t *testing.T) {
	for _, c := range []struct {
		name string
		hang bool // the destination never answers DONE; else it does in 10ms
		ask  bool // the command is answered ASK; else it runs here
	}{
		{"which ends in ASK", false, true},
		{"whose destination hangs", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hung := make(chan struct{})
			defer close(hung)
			a, _, f, slot, keys := withFakeDestination(t, 0, func(args []string) bool {
				switch {
				case args[3] == "DONE" && c.hang:
					<-hung
				case args[3] == "DONE":
					time.Sleep(10 * time.Millisecond)
				}
				return false
			})
			ctx := context.Background()
			// No retries: TRYAGAIN would be answered to the test.
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(a.port), Protocol: 2, MaxRetries: -1})
			defer rdb.Close()
			require.NoError(t, rdb.Ping(ctx).Err())
			migrated := make(chan error, 1)
			go func() {
				_, err := a.do(t, "CLUSTERX", "MIGRATE", slot, f.id, "SYNC")
				migrated <- err
			}()
			for got := range f.got {
				if got[3] == "DONE" {
					break
				}
			}
			began := time.Now()
			v, err := rdb.Do(ctx, "CL.THROTTLE", keys[0], 10, 1, 3600).Int64Slice()
			took := time.Since(began)
			if c.ask {
				require.EqualError(t, err, "ASK "+strconv.Itoa(slot)+" 127.0.0.1:"+strconv.Itoa(f.port))
			} else {
				require.NoError(t, err)
				require.Equal(t, int64(9), v[2], "decided here, the second decision")
			}
			err = <-migrated
			t.Logf("the command was answered in %v; MIGRATE answered %v", took, err)
		})
	}
}

// A destination that stops answering while the slot is frozen (a process
// stopped, a link cut without a reset) holds the freeze only briefly: the
// source gives up on it, thaws the slot and serves it, and a cluster
// client's decision meanwhile is decided here, as if nothing had happened.
func TestClusterMigrationToADestinationThatHangsWhileFrozen(t *testing.T) {
	hung := make(chan struct{})
	a, _, f, slot, keys := withFakeDestination(t, 0, func(args []string) bool {
		if args[3] == "DONE" {
			<-hung // never answers, never closes, until the test ends
		}
		return false
	})
	defer close(hung)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(a.port)}})
	defer cc.Close()
	migrated := make(chan error, 1)
	go func() {
		_, err := a.do(t, "CLUSTERX", "MIGRATE", slot, f.id, "SYNC")
		migrated <- err
	}()
	for {
		if got := <-f.got; got[3] == "DONE" {
			break
		}
	}
	began := time.Now()
	v, err := cc.Do(ctx, "CL.THROTTLE", keys[0], 10, 1, 3600).Int64Slice()
	took := time.Since(began)
	require.NoError(t, err, "a decision while the destination hangs, after %v", took)
	require.Equal(t, int64(9), v[2], "decided on the source, its state intact: the second decision")
	err = <-migrated
	require.ErrorContains(t, err, "ERR slot "+strconv.Itoa(slot)+" to "+f.id+" at 127.0.0.1:"+strconv.Itoa(f.port)+": frozen for ")
	require.ErrorContains(t, err, "i/o timeout")
	t.Logf("a decision %v after the freeze began; MIGRATE answered %v", took, err)
	require.Nil(t, a.srv.cluster.Move(slot))
}

// A node in cluster mode before its first topology refuses an import, as
// one that does not serve the slot's source, and goes on serving (it
// crashed: the import looked the source up in no topology).
func TestClusterImportBeforeAnyTopologyIsRefused(t *testing.T) {
	n := startClusterNodes(t, 1)[0]
	_, err := n.do(t, "CLUSTERX", "IMPORT", 7, "START", strings.Repeat("b", 40))
	require.EqualError(t, err, "ERR slot 7 is not served by this node")
	v, err := n.do(t, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}
