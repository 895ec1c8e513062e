package clusteradmin

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReshardOptions are the settings of a reshard.
type ReshardOptions struct {
	From, To string // host:port of the source and destination masters
	Slots    []int  // the slots to move (ParseSlots)
	Password string // AUTH password of every node; "" for none
	User     string // the ACL user Password is for; "" for the default user
	// Timeout bounds each command sent to a node, a slot's whole
	// migration included. The default value is DefaultTimeout.
	Timeout time.Duration
	// RetryFor bounds how long a slot's move is tried again after a
	// migration gave up or a node stopped answering, the topology read
	// again before each try, so that a failover of the source's or the
	// destination's shard (Sentinel's down-after and some seconds) is
	// waited out and the move goes on between the masters then. The
	// default value is DefaultRetryFor.
	RetryFor time.Duration
	Out      io.Writer // progress, a line a slot

	// beforeMove, in tests, runs before each slot's move.
	beforeMove func(slot int)
}

// Defaults of ReshardOptions.
const (
	DefaultTimeout  = time.Minute
	DefaultRetryFor = time.Minute
)

// NodeError is a command a node refused or did not answer.
type NodeError struct {
	Node    string // address, and ID when known
	Command string
	Err     error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Command + ": " + e.Err.Error() }

func (e *NodeError) Unwrap() error { return e.Err }

// resharder is a reshard's connections, settings and progress.
type resharder struct {
	*session
	o ReshardOptions
	p *Plan
	// version is the topology's, as the last slot moved left it.
	version int64
	// fromShard and toShard are the IDs of the nodes of the source's and
	// the destination's shards: whichever of them is master is where a
	// slot moves from and to.
	fromShard, toShard []string
	// behind are the nodes that did not answer a push (by ID, with the
	// version they missed): skipped from then on, and given the whole
	// topology at the end if they answer then.
	behind map[string]int64
	// sentinels: Sentinels decide the cluster's failovers (CLUSTERX
	// SENTINELS), so a node that stops answering may be replaced by a
	// promoted replica, worth waiting for.
	sentinels bool
}

// Reshard moves o.Slots from the master at o.From to the master at o.To,
// one slot at a time: CLUSTERX MIGRATE slot to-id SYNC on the source,
// then CLUSTERX SETSLOT slot NODE to-id version+1 on every node of the
// topology (Plan.pushOrder). It reads the topology from o.From (CLUSTER
// NODES, CLUSTERX VERSION) and refuses to start unless every node answers
// the same version under the ID the topology gives it; a replica that
// missed versions (a node that was down) is given the topology first, and
// one that does not answer is left behind (it serves no slot).
//
// A slot whose migration gives up, or, when Sentinels decide the
// cluster's failovers, whose source or destination stops answering, is
// tried again (for o.RetryFor with Sentinels, migrateAttempts times
// without), the topology read again from any node that answers before each
// try: after a failover the slot moves between the masters Sentinel named
// (CLUSTER NODES shows them). A node
// that does not answer a push is left behind for the rest of the reshard,
// and given the whole topology (CLUSTERX SETNODES) at the end if it answers
// then; if it does not, Reshard says so in its error, the slots moved.
func Reshard(o ReshardOptions) error {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	r := &resharder{session: newSession(o.User, o.Password, o.Timeout), o: o, behind: map[string]int64{}}
	defer r.close()
	p, err := r.plan()
	if err != nil {
		return err
	}
	r.p, r.version = p, p.Version
	r.fromShard, r.toShard = shardIDs(p.Nodes, p.From.ID), shardIDs(p.Nodes, p.To.ID)
	fmt.Fprintf(o.Out, "topology version %d, %d nodes: moving %d slots from %s to %s\n",
		p.Version, len(p.Nodes), len(p.Moves), p.From, p.To)
	for _, slot := range p.Skipped {
		fmt.Fprintf(o.Out, "slot %d: served by %s already, skipped\n", slot, p.To.Addr)
	}
	start, keys := time.Now(), int64(0)
	for i, slot := range p.Moves {
		if o.beforeMove != nil {
			o.beforeMove(slot)
		}
		n, took, err := r.move(slot)
		if err != nil {
			return err
		}
		keys += n
		fmt.Fprintf(o.Out, "slot %d: %d keys moved in %v (%d/%d)\n", slot, n, took.Round(time.Microsecond), i+1, len(p.Moves))
	}
	fmt.Fprintf(o.Out, "moved %d slots, %d keys, in %v: topology version %d\n",
		len(p.Moves), keys, time.Since(start).Round(time.Millisecond), r.version)
	return r.catchUp()
}

// shardIDs lists the IDs of the nodes of id's shard: its master and the
// master's replicas.
func shardIDs(nodes []Node, id string) []string {
	master := id
	for _, n := range nodes {
		if n.ID == id && n.IsReplica() {
			master = n.MasterID
		}
	}
	var out []string
	for _, n := range nodes {
		if n.ID == master || n.MasterID == master {
			out = append(out, n.ID)
		}
	}
	return out
}

// plan reads the topology from o.From and checks every node agrees on it.
// A replica of an older version is given the topology; one that does not
// answer is left behind.
func (r *resharder) plan() (*Plan, error) {
	o := r.o
	fromID, err := r.callString(o.From, o.From, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	toID, err := r.callString(o.To, o.To, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	text, err := r.callString(o.From, o.From, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	version, err := r.callInt(o.From, o.From, "CLUSTERX", "VERSION")
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.From, err)
	}
	sentinels, err := r.call(o.From, o.From, "CLUSTERX", "SENTINELS")
	if err != nil {
		return nil, err
	}
	list, _ := sentinels.([]any)
	r.sentinels = len(list) > 0
	p, err := plan(nodes, version, fromID, toID, o.Slots)
	if err != nil {
		return nil, err
	}
	// The topology's addresses, not the ones given, from here on: they are
	// the ones its nodes and clients use.
	r.conns[p.From.Addr], r.conns[p.To.Addr] = r.conns[o.From], r.conns[o.To]
	var disagree []string
	var lagging []*Node
	for i := range p.Nodes {
		n := &p.Nodes[i]
		id, err := r.callString(n.Addr, n.String(), "CLUSTER", "MYID")
		if err == nil && id != n.ID {
			return nil, fmt.Errorf("%s answers CLUSTER MYID %s, not the ID the topology of %s gives it", n, id, o.From)
		}
		var v int64
		if err == nil {
			v, err = r.callInt(n.Addr, n.String(), "CLUSTERX", "VERSION")
		}
		switch {
		case err != nil && n.IsReplica() && !isReply(err):
			fmt.Fprintf(o.Out, "%s does not answer (%v): a replica, left behind\n", n, errors.Unwrap(err))
			r.behind[n.ID] = version
		case err != nil:
			return nil, err
		case v < version && n.IsReplica():
			lagging = append(lagging, n)
		case v != version:
			disagree = append(disagree, n.String()+" has version "+strconv.FormatInt(v, 10))
		}
	}
	if disagree != nil {
		return nil, fmt.Errorf("the nodes disagree on the topology: %s has version %d, but %s; push one topology to every node (CLUSTERX SETNODES) first",
			p.From, version, strings.Join(disagree, ", "))
	}
	for _, n := range lagging {
		v, _ := r.callInt(n.Addr, n.String(), "CLUSTERX", "VERSION")
		if _, err := r.call(n.Addr, n.String(), "CLUSTERX", "SETNODES", setNodesText(p.Nodes), strconv.FormatInt(version, 10)); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "%s, a replica, had version %d: given the topology at version %d\n", n, v, version)
	}
	return p, nil
}

// move migrates one slot and pushes its new owner at the next version. It
// returns how many keys the slot held before, and how long the move took.
// A try that fails on the way (retryable) is tried again, for o.RetryFor,
// the topology read again before each (refresh).
func (r *resharder) move(slot int) (int64, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(r.o.RetryFor)
	// migrated: the source and destination between which the migration
	// was done; only the push is left while they are the masters.
	var migrated [2]string
	var keys int64
	var said string
	for attempt := 1; ; attempt++ {
		var err error
		p := r.p
		if migrated != [2]string{p.From.ID, p.To.ID} {
			if keys, err = r.callInt(p.From.Addr, p.From.String(), "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); err == nil {
				err = r.migrate(slot)
			}
			if err == nil {
				migrated = [2]string{p.From.ID, p.To.ID}
			}
		}
		if err == nil {
			if err = r.push(slot); err == nil {
				return keys, time.Since(start), nil
			}
		}
		if !r.mayRetry(err, slot, attempt, deadline) {
			return 0, 0, err
		}
		// The same failure again (a master down, until Sentinel promotes
		// a replica) is said once.
		if msg := err.Error(); msg != said {
			fmt.Fprintf(r.o.Out, "slot %d: %v; trying again with the topology read again (%d)\n", slot, err, attempt+1)
			said = msg
		}
		time.Sleep(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second))
		if err := r.refresh(); err != nil {
			fmt.Fprintf(r.o.Out, "slot %d: %v\n", slot, err)
		}
	}
}

// migrate moves slot's keys from the source to the destination: CLUSTERX
// MIGRATE slot to-id SYNC.
func (r *resharder) migrate(slot int) error {
	p := r.p
	_, err := r.call(p.From.Addr, p.From.String(), "CLUSTERX", "MIGRATE", strconv.Itoa(slot), p.To.ID, "SYNC")
	if err != nil {
		return fmt.Errorf("slot %d stays on %s: %w", slot, p.From.Addr, err)
	}
	return nil
}

// push gives slot to the destination at the next version on every node
// (Plan.pushOrder) but those left behind. A node other than the
// destination that does not answer is left behind.
func (r *resharder) push(slot int) error {
	p := r.p
	sl, v := strconv.Itoa(slot), strconv.FormatInt(r.version+1, 10)
	var failed []string
	for k, n := range p.pushOrder() {
		if _, skip := r.behind[n.ID]; skip {
			continue
		}
		_, err := r.call(n.Addr, n.String(), "CLUSTERX", "SETSLOT", sl, "NODE", p.To.ID, v)
		switch {
		case err == nil:
			continue
		case k == 0:
			// The source keeps sending clients to the destination with
			// ASK, which serves them: pushing to the others would leave
			// the slot served by none.
			return fmt.Errorf("slot %d migrated, but the destination did not take it, so no other node was told: %w; "+
				"the source sends clients there with ASK until every node has version %s", slot, err, v)
		case !isReply(err):
			fmt.Fprintf(r.o.Out, "%s does not answer (%v): left behind from version %s\n", n, errors.Unwrap(err), v)
			r.behind[n.ID] = r.version + 1
		default:
			failed = append(failed, err.Error())
		}
	}
	r.version++
	if failed != nil {
		return permanent{fmt.Errorf("slot %d moved to %s, but these nodes did not take version %s; push it to them: %s",
			slot, p.To.Addr, v, strings.Join(failed, "; "))}
	}
	return nil
}

// refresh reads the topology again from the first node that answers
// (the destination, the source, then the others), and makes the masters of
// the source's and the destination's shards the ones the slots move from
// and to.
func (r *resharder) refresh() error {
	p := r.p
	var last error
	for _, n := range p.pushOrder() {
		text, err := r.callString(n.Addr, n.String(), "CLUSTER", "NODES")
		if err != nil {
			last = err
			continue
		}
		nodes, err := parseNodes(text)
		if err != nil {
			last = fmt.Errorf("%s: %w", n, err)
			continue
		}
		from, to := masterOf(nodes, r.fromShard), masterOf(nodes, r.toShard)
		if from == nil || to == nil {
			return fmt.Errorf("%s's topology has no master for the source's or the destination's shard", n)
		}
		if from.ID != p.From.ID || to.ID != p.To.ID {
			fmt.Fprintf(r.o.Out, "the masters now: %s from, %s to\n", from, to)
		}
		r.p = &Plan{From: from, To: to, Nodes: nodes, Version: p.Version, Moves: p.Moves, Skipped: p.Skipped}
		return nil
	}
	return fmt.Errorf("no node answers to read the topology from: %w", last)
}

// masterOf returns the master among nodes of the shard whose nodes are
// ids, or nil.
func masterOf(nodes []Node, ids []string) *Node {
	for i := range nodes {
		if n := &nodes[i]; !n.IsReplica() && slices.Contains(ids, n.ID) {
			return n
		}
	}
	return nil
}

// catchUp gives the nodes left behind the whole topology at the version
// reached, if they answer now, and otherwise says which did not.
func (r *resharder) catchUp() error {
	if len(r.behind) == 0 {
		return nil
	}
	// The topology as the moves left it, from the destination first.
	if err := r.refresh(); err != nil {
		return fmt.Errorf("the slots moved, but %w: the nodes left behind were not given the topology", err)
	}
	text := setNodesText(r.p.Nodes)
	v := strconv.FormatInt(r.version, 10)
	var missing []string
	for _, n := range r.p.Nodes {
		since, ok := r.behind[n.ID]
		if !ok {
			continue
		}
		if _, err := r.call(n.Addr, n.String(), "CLUSTERX", "SETNODES", text, v); err != nil {
			missing = append(missing, fmt.Sprintf("%s (from version %d: %v)", n.String(), since, errors.Unwrap(err)))
			continue
		}
		fmt.Fprintf(r.o.Out, "%s, left behind from version %d, given the topology at version %s\n", n.String(), since, v)
	}
	if missing != nil {
		return fmt.Errorf("the slots moved, but these nodes did not answer and hold an older topology: %s; "+
			"once they are back, run this reshard again (each slot is skipped, and a replica behind is given the topology)",
			strings.Join(missing, ", "))
	}
	return nil
}
