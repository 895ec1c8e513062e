package availability_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/testkit"
)

// reshardNode is one node of a cluster of built binaries.
type reshardNode struct {
	*harness.BinaryServer
	id  string
	rdb *redis.Client
}

// startReshardCluster runs n binaries in cluster mode and pushes them one
// topology at version 1, the slots shared equally in order.
func startReshardCluster(t *testing.T, n int) []*reshardNode {
	t.Helper()
	var nodes []*reshardNode
	var top strings.Builder
	for i := range n {
		p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory", "--cluster-enabled", "yes")...)
		rdb := p.GoRedis(t, func(o *redis.Options) { o.Protocol = 2 })
		id, err := rdb.Do(harness.Ctx(t), "CLUSTER", "MYID").Text()
		require.NoError(t, err)
		nodes = append(nodes, &reshardNode{BinaryServer: p, id: id, rdb: rdb})
		from, to := i*cluster.Slots/n, (i+1)*cluster.Slots/n-1
		fmt.Fprintf(&top, "%s 127.0.0.1 %d master - %d-%d\n", id, p.Port, from, to)
	}
	for _, nd := range nodes {
		require.NoError(t, nd.rdb.Do(harness.Ctx(t), "CLUSTERX", "SETNODES", top.String(), 1).Err())
	}
	return nodes
}

// keysOf returns perSlot keys of each slot, found by cluster.Slot.
func keysOf(slots []int, perSlot int) map[int][]string {
	out := map[int][]string{}
	want := map[int]bool{}
	for _, s := range slots {
		want[s] = true
	}
	for i, full := 0, 0; full < len(slots); i++ {
		k := "user:" + strconv.Itoa(i)
		if s := cluster.Slot([]byte(k)); want[s] && len(out[s]) < perSlot {
			if out[s] = append(out[s], k); len(out[s]) == perSlot {
				full++
			}
		}
	}
	return out
}

// redirects counts the redirections and refusals the nodes answer a
// cluster client's decisions, which the client follows or retries without
// the application seeing them: a hook on each node's client. An ASK is
// counted by the ASKING the client sends to follow it, alone or before a
// transaction; a transaction's MOVED and TRYAGAIN are not seen.
type redirects struct {
	tryAgain, ask, moved, other atomic.Int64
	mu                          sync.Mutex
	others                      map[string]int // other errors' texts
}

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "cl.throttle" {
			r.count(err)
		}
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			switch c.Name() {
			case "asking":
				r.ask.Add(1)
			case "cl.throttle":
				r.count(c.Err())
			}
		}
		return err
	}
}

func (r *redirects) count(err error) {
	switch {
	case err == nil:
	case strings.HasPrefix(err.Error(), "TRYAGAIN"):
		r.tryAgain.Add(1)
	case strings.HasPrefix(err.Error(), "ASK "):
		// Counted by the ASKING that follows it.
	case strings.HasPrefix(err.Error(), "MOVED "):
		r.moved.Add(1)
	default:
		r.other.Add(1)
		r.mu.Lock()
		if r.others == nil {
			r.others = map[string]int{}
		}
		r.others[err.Error()]++
		r.mu.Unlock()
	}
}

// throttleLoad runs CL.THROTTLE key 1000 1 3600 from workers goroutines
// through a go-redis cluster client, at about rate decisions a second in
// all, on keys picked in turn, and records what the application sees:
// each key's allowed decisions, and every error. Half the workers send
// each decision alone, half in a transaction (MULTI, EXEC), which go-redis
// redirects and retries as a whole.
type throttleLoad struct {
	keys    []string
	allowed []atomic.Int64 // by index in keys
	total   atomic.Int64
	hops    redirects

	mu   sync.Mutex
	errs []string

	stop chan struct{}
	wg   sync.WaitGroup
}

func startThrottleLoad(t *testing.T, addrs []string, keys []string, workers, rate int) *throttleLoad {
	t.Helper()
	l := &throttleLoad{keys: keys, allowed: make([]atomic.Int64, len(keys)), stop: make(chan struct{})}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	rdb.OnNewNode(func(c *redis.Client) { c.AddHook(&l.hops) })
	t.Cleanup(func() { _ = rdb.Close() })
	// Every key once first, so that each is stored before the move.
	for from := 0; from < len(keys); from += 1000 {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmds, err := rdb.Pipelined(c, func(p redis.Pipeliner) error {
			for _, k := range keys[from:min(from+1000, len(keys))] {
				p.Do(c, "CL.THROTTLE", k, 1000, 1, 3600)
			}
			return nil
		})
		cancel()
		require.NoError(t, err)
		for i, cmd := range cmds {
			v, err := cmd.(*redis.Cmd).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, int64(0), v[0], "a first decision is allowed")
			l.allowed[from+i].Add(1)
			l.total.Add(1)
		}
	}
	every := time.Duration(workers) * time.Second / time.Duration(rate)
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := w; ; i += workers {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				l.decide(rdb, i%len(keys), w%2 == 1)
			}
		}()
	}
	return l
}

// decide makes one decision on keys[i], in a transaction (MULTI, EXEC)
// with tx.
func (l *throttleLoad) decide(rdb *redis.ClusterClient, i int, tx bool) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cmd *redis.Cmd
	if tx {
		p := rdb.TxPipeline()
		cmd = p.Do(c, "CL.THROTTLE", l.keys[i], 1000, 1, 3600)
		_, _ = p.Exec(c)
	} else {
		cmd = rdb.Do(c, "CL.THROTTLE", l.keys[i], 1000, 1, 3600)
	}
	v, err := cmd.Int64Slice()
	l.total.Add(1)
	if err != nil {
		l.mu.Lock()
		l.errs = append(l.errs, fmt.Sprintf("%s (transaction: %v) at %s: %v", l.keys[i], tx, time.Now().Format("15:04:05.000000"), err))
		l.mu.Unlock()
		return
	}
	if len(v) == 5 && v[0] == 0 {
		l.allowed[i].Add(1)
	}
}

// waitFor returns once n more decisions have been made.
func (l *throttleLoad) waitFor(t *testing.T, n int64) {
	t.Helper()
	until := l.total.Load() + n
	require.Eventually(t, func() bool { return l.total.Load() >= until }, 30*time.Second, 5*time.Millisecond)
}

func (l *throttleLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// reshardLine is the reshard subcommand's line for one slot.
var reshardLine = regexp.MustCompile(`^slot (\d+): (\d+) keys moved in (\S+) \((\d+)/(\d+)\)$`)

// reshard runs `redcell cluster reshard` from one node to another and
// checks its output; it returns how long each slot took.
func reshard(t *testing.T, from, to *reshardNode, slots []int, perSlot int, version int64) []time.Duration {
	t.Helper()
	list := make([]string, len(slots))
	for i, s := range slots {
		list[i] = strconv.Itoa(s)
	}
	cmd := testkit.Binary(t).Command(nil, "cluster", "reshard", "--from", from.Addr, "--to", to.Addr,
		"--slots", strings.Join(list, ","), "--timeout", "30s")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "reshard: %s\nsource's log:\n%s", stderr.String(), from.Log())
	t.Logf("reshard output:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 2+len(slots), stdout.String())
	require.Equal(t, fmt.Sprintf("topology version %d, 3 nodes: moving %d slots from %s (%s) to %s (%s)",
		version, len(slots), from.Addr, from.id, to.Addr, to.id), lines[0])
	var took []time.Duration
	for i, s := range slots {
		m := reshardLine.FindStringSubmatch(lines[1+i])
		require.NotNil(t, m, lines[1+i])
		require.Equal(t, []string{strconv.Itoa(s), strconv.Itoa(perSlot), strconv.Itoa(i + 1), strconv.Itoa(len(slots))},
			[]string{m[1], m[2], m[4], m[5]}, lines[1+i])
		d, err := time.ParseDuration(m[3])
		require.NoError(t, err)
		took = append(took, d)
	}
	require.Regexp(t, fmt.Sprintf(`^moved %d slots, %d keys, in \S+: topology version %d$`,
		len(slots), len(slots)*perSlot, version+int64(len(slots))), lines[len(lines)-1])
	return took
}

// migrateByHand moves slots as reshard does, but lingers in the Asking
// phase, once every slot is migrated and before any is pushed, for as long
// as linger takes: clients are sent ASK to the destination meanwhile.
func migrateByHand(t *testing.T, from, to *reshardNode, nodes []*reshardNode, slots []int, version int64, linger func()) {
	t.Helper()
	for _, s := range slots {
		require.NoError(t, from.rdb.Do(harness.Ctx(t), "CLUSTERX", "MIGRATE", s, to.id, "SYNC").Err())
	}
	linger()
	order := []*reshardNode{to, from}
	for _, nd := range nodes {
		if nd != to && nd != from {
			order = append(order, nd)
		}
	}
	for _, s := range slots {
		version++
		for _, nd := range order {
			require.NoError(t, nd.rdb.Do(harness.Ctx(t), "CLUSTERX", "SETSLOT", s, "NODE", to.id, version).Err())
		}
	}
}

// Four slots of A, a hundred keys each, move to B with `redcell cluster
// reshard`, back to A, and to B again, five times over (once by hand,
// lingering while clients are sent ASK), while a go-redis cluster client
// makes thousands of decisions a second on those keys, alone and in
// transactions: the application sees no error (go-redis follows MOVED and
// ASK; a decision on a frozen slot waits the freeze out), and each key's
// state on B accounts for exactly the decisions the application saw
// allowed, none lost or doubled.
func TestClusterReshardUnderLoadIsExact(t *testing.T) {
	nodes := startReshardCluster(t, 3)
	a, b := nodes[0], nodes[1]
	slots := []int{100, 1234, 3000, 5000} // A serves 0-5460
	const perSlot = 100
	load := startThrottleLoad(t, addrsOf(nodes), keysIn(slots, perSlot), 8, 4000)
	requireKeys(t, a, slots, perSlot)
	load.waitFor(t, 2000)

	var took []time.Duration
	var during int64
	var busy time.Duration
	from, to, version := a, b, int64(1)
	for round := range 5 {
		began, decided := time.Now(), load.total.Load()
		if round == 2 {
			migrateByHand(t, from, to, nodes, slots, version, func() { load.waitFor(t, 1000) })
		} else {
			took = append(took, reshard(t, from, to, slots, perSlot, version)...)
		}
		busy += time.Since(began)
		during += load.total.Load() - decided
		version += int64(len(slots))
		from, to = to, from
		load.waitFor(t, 1000)
	}
	load.end()
	allowed := requireExact(t, load, nodes, a, b, slots, perSlot, version)
	t.Logf("%d decisions in all, %d allowed; %d during the reshards' %v (%.0f/s); per slot %v; slots frozen for %s; "+
		"the nodes answered TRYAGAIN %d times, ASK %d, MOVED %d, another error %d (%v), all followed by go-redis",
		load.total.Load(), allowed, during, busy.Round(time.Millisecond), float64(during)/busy.Seconds(), took, freezes(nodes),
		load.hops.tryAgain.Load(), load.hops.ask.Load(), load.hops.moved.Load(), load.hops.other.Load(), load.hops.others)
}

// One slot of twenty thousand keys moves, copied in passes while decisions
// keep changing its keys, exactly.
func TestClusterReshardOfABigSlotUnderLoadIsExact(t *testing.T) {
	nodes := startReshardCluster(t, 3)
	a, b := nodes[0], nodes[1]
	const perSlot = 20000
	keys := make([]string, perSlot) // one hash tag: found without a search
	for i := range keys {
		keys[i] = "{slot}:" + strconv.Itoa(i)
	}
	slots := []int{cluster.Slot([]byte("{slot}"))}
	require.Less(t, slots[0], cluster.Slots/3, "a slot of A")
	load := startThrottleLoad(t, addrsOf(nodes), keys, 8, 4000)
	requireKeys(t, a, slots, perSlot)
	load.waitFor(t, 2000)
	took := reshard(t, a, b, slots, perSlot, 1)
	load.waitFor(t, 2000)
	load.end()
	allowed := requireExact(t, load, nodes, a, b, slots, perSlot, 2)
	t.Logf("%d keys moved in %v (%.0f keys/s); slot frozen for %s; %d decisions in all, %d allowed; "+
		"the nodes answered TRYAGAIN %d times, ASK %d, MOVED %d, another error %d (%v), all followed by go-redis",
		perSlot, took[0], perSlot/took[0].Seconds(), freezes(nodes), load.total.Load(), allowed,
		load.hops.tryAgain.Load(), load.hops.ask.Load(), load.hops.moved.Load(), load.hops.other.Load(), load.hops.others)
}

// keysIn returns perSlot keys of each of slots, in slot order.
func keysIn(slots []int, perSlot int) []string {
	bySlot := keysOf(slots, perSlot)
	var keys []string
	for _, s := range slots {
		keys = append(keys, bySlot[s]...)
	}
	return keys
}

// requireKeys checks n holds want keys in each of slots.
func requireKeys(t *testing.T, n *reshardNode, slots []int, want int) {
	t.Helper()
	for _, s := range slots {
		got, err := n.rdb.Do(harness.Ctx(t), "CLUSTER", "COUNTKEYSINSLOT", s).Int64()
		require.NoError(t, err)
		require.Equal(t, int64(want), got, "slot %d on %s", s, n.Addr)
	}
}

func addrsOf(nodes []*reshardNode) []string {
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.Addr)
	}
	return addrs
}

// requireExact checks what a load saw against the cluster once slots have
// moved from old to now, at version: no error reached the application;
// every key's consumption on its new owner is the decisions the
// application saw allowed; the old owner answers MOVED and holds none of
// the keys; every node has the version. It returns the decisions allowed.
func requireExact(t *testing.T, load *throttleLoad, nodes []*reshardNode, old, now *reshardNode, slots []int, perSlot int, version int64) int64 {
	t.Helper()
	load.mu.Lock()
	errs := load.errs
	load.mu.Unlock()
	if len(errs) > 0 {
		for _, nd := range nodes {
			for _, line := range strings.Split(nd.Log(), "\n") {
				if strings.Contains(line, "cluster: slot") {
					t.Log(line)
				}
			}
		}
	}
	require.Empty(t, errs, "errors reached the application (of %d decisions)", load.total.Load())

	peeks, err := now.rdb.Pipelined(harness.Ctx(t), func(p redis.Pipeliner) error {
		for _, k := range load.keys {
			p.Do(harness.Ctx(t), "CL.THROTTLE", k, 1000, 1, 3600, 0)
		}
		return nil
	})
	require.NoError(t, err)
	var total int64
	for i, k := range load.keys {
		v, err := peeks[i].(*redis.Cmd).Int64Slice()
		require.NoError(t, err, "%s on the new owner", k)
		limit, remaining := v[1], v[2]
		require.Equal(t, load.allowed[i].Load(), limit-remaining, "%s: decisions allowed as the application saw them, and as the new owner holds them", k)
		total += limit - remaining
	}
	for _, k := range load.keys[:min(len(load.keys), 500)] {
		err := old.rdb.Do(harness.Ctx(t), "CL.THROTTLE", k, 1000, 1, 3600, 0).Err()
		require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", cluster.Slot([]byte(k)), now.Addr))
	}
	requireKeys(t, old, slots, 0)
	requireKeys(t, now, slots, perSlot)
	for _, nd := range nodes {
		v, err := nd.rdb.Do(harness.Ctx(t), "CLUSTERX", "VERSION").Int64()
		require.NoError(t, err)
		require.Equal(t, version, v)
	}
	return total
}

// freezes is the shortest and the longest freeze of a slot the nodes
// logged ("frozen=" of "cluster: slot migrated").
var frozenField = regexp.MustCompile(`cluster: slot migrated.*\bfrozen"?[=:]"?([0-9.]+[µmn]?s)`)

func freezes(nodes []*reshardNode) string {
	var ds []time.Duration
	for _, nd := range nodes {
		for _, m := range frozenField.FindAllStringSubmatch(nd.Log(), -1) {
			if d, err := time.ParseDuration(m[1]); err == nil {
				ds = append(ds, d)
			}
		}
	}
	if len(ds) == 0 {
		return "(none logged)"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%v to %v (%d freezes)", ds[0], ds[len(ds)-1], len(ds))
}

// The destination killed while a slot of 50,000 keys is being copied to
// it: the reshard stops, naming the node and the command; the slot stays
// served by its source, where every key's state is what the application's
// decisions made it, and the application saw no error.
func TestClusterReshardToADestinationKilledMidwayLeavesTheSlot(t *testing.T) {
	nodes := startReshardCluster(t, 3)
	a, b := nodes[0], nodes[1]
	const perSlot = 50000
	keys := make([]string, perSlot)
	for i := range keys {
		keys[i] = "{slot}:" + strconv.Itoa(i)
	}
	slot := cluster.Slot([]byte("{slot}"))
	load := startThrottleLoad(t, addrsOf(nodes), keys, 8, 4000)
	load.waitFor(t, 1000)

	cmd := testkit.Binary(t).Command(nil, "cluster", "reshard", "--from", a.Addr, "--to", b.Addr, "--slots", strconv.Itoa(slot))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	moving := "[" + strconv.Itoa(slot) + "->-" + b.id + "]"
	require.Eventually(t, func() bool {
		nodesText, err := a.rdb.Do(harness.Ctx(t), "CLUSTER", "NODES").Text()
		return err == nil && strings.Contains(nodesText, moving)
	}, 10*time.Second, 100*time.Microsecond, "the migration starts")
	_ = b.Stop(syscall.SIGKILL) // a kill's exit status
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "reshard: %s", stdout.String())
	require.Equal(t, 1, exit.ExitCode())
	require.Regexp(t, fmt.Sprintf(`^redcell cluster reshard: slot %d stays on %s: %s \(%s\): CLUSTERX MIGRATE %d %s SYNC: ERR slot %d to %s at %s: .+\n$`,
		slot, regexp.QuoteMeta(a.Addr), regexp.QuoteMeta(a.Addr), a.id, slot, b.id, slot, b.id, regexp.QuoteMeta(b.Addr)), stderr.String())
	load.waitFor(t, 1000)
	load.end()

	load.mu.Lock()
	errs := load.errs
	load.mu.Unlock()
	require.Empty(t, errs, "errors reached the application (of %d decisions)", load.total.Load())
	peeks, err := a.rdb.Pipelined(harness.Ctx(t), func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Do(harness.Ctx(t), "CL.THROTTLE", k, 1000, 1, 3600, 0)
		}
		return nil
	})
	require.NoError(t, err)
	for i, k := range keys {
		v, err := peeks[i].(*redis.Cmd).Int64Slice()
		require.NoError(t, err, "%s on A", k)
		require.Equal(t, load.allowed[i].Load(), v[1]-v[2], "%s: the decisions the application saw allowed", k)
	}
	requireKeys(t, a, []int{slot}, perSlot)
	nodesText, err := a.rdb.Do(harness.Ctx(t), "CLUSTER", "NODES").Text()
	require.NoError(t, err)
	require.NotContains(t, nodesText, moving, "the move is over")
	t.Logf("reshard: %s", stderr.String())
}
