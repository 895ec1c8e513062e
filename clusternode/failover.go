package clusternode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/resp"
)

// A planned switch of a shard's master (CLUSTER FAILOVER, on one of its
// replicas), as Redis Cluster's manual failover: by default the master's
// writes are paused until this replica has applied all of them, so that
// nothing acknowledged is lost, then the switch is made; FORCE switches
// without the master (it may be down); TAKEOVER too.
//
// Where Sentinel decides failovers, the switch is Sentinel's: this node asks
// a Sentinel for a failover of the shard (SENTINEL FAILOVER), which promotes
// the replica that has applied the most (this one, once caught up; with
// several replicas, replica-priority steers Sentinel's choice), and every
// node follows as after any failover. TAKEOVER, which would bypass the
// Sentinels, is refused. Where the operator decides, this node pushes the
// topology with itself as the shard's master, at the next version, to every
// node, as an operator would.

// FailoverMode is CLUSTER FAILOVER's option.
type FailoverMode int

// Modes of a planned switch.
const (
	FailoverDefault FailoverMode = iota
	FailoverForce
	FailoverTakeover
)

// Refusals of a planned switch.
var (
	// ErrNotReplica: the node is not a replica in the topology in force.
	ErrNotReplica = errors.New("cluster: You should send CLUSTER FAILOVER to a replica")
	// ErrTakeoverWithSentinel: TAKEOVER where Sentinel decides failovers.
	ErrTakeoverWithSentinel = errors.New("cluster: TAKEOVER would bypass the Sentinels that decide this cluster's failovers; use CLUSTER FAILOVER (or FORCE), which asks them")
)

// Timing of a planned switch.
const (
	// switchPause bounds the pause of the master's writes while this
	// replica catches up and the switch is made.
	switchPause = 10 * time.Second
	// switchCatchUp bounds the wait for this replica to apply the master's
	// whole stream.
	switchCatchUp = 5 * time.Second
)

// Failover starts a planned switch of this node's shard to this node, and
// returns at once: its outcome is logged, and CLUSTER NODES shows it. It
// refuses, starting nothing, a node that is not a replica in the topology
// in force, and TAKEOVER where Sentinel decides failovers.
func (f *Follower) Failover(mode FailoverMode) error {
	top, me := f.cfg.State.Topology()
	if me == nil || !me.IsReplica() {
		return ErrNotReplica
	}
	sentinels := f.cfg.State.Sentinels()
	if mode == FailoverTakeover && len(sentinels) > 0 {
		return ErrTakeoverWithSentinel
	}
	master := *top.Node(me.MasterID)
	go func() {
		start := time.Now()
		err := contain.Run(f.cfg.Logger, "cluster", "failover", func() error { return f.planned(mode, master, sentinels) })
		if err != nil {
			f.cfg.Logger.Warn("cluster: CLUSTER FAILOVER failed; the shard's master is as it was", "master", master.ID, "err", err)
			return
		}
		f.cfg.Logger.Info("cluster: CLUSTER FAILOVER done: this node is its shard's master", "old_master", master.ID, "took", time.Since(start))
	}()
	return nil
}

// planned runs a planned switch from master to this node.
func (f *Follower) planned(mode FailoverMode, master cluster.Node, sentinels []string) error {
	var m *peer
	if mode == FailoverDefault {
		var err error
		if m, err = dialPeer(master, f.cfg.User, f.cfg.Password); err != nil {
			return fmt.Errorf("the master at %s: %w", addrOf(master), err)
		}
		defer m.close()
		// Whatever happens next, the master's writes resume at the end:
		// it is then this node's replica, or still the master.
		defer func() { _ = m.call("CLIENT", "UNPAUSE") }()
		if err := f.catchUp(m); err != nil {
			return err
		}
	}
	if len(sentinels) > 0 {
		if err := f.askSentinel(master, sentinels); err != nil {
			return err
		}
		if m != nil {
			// The old master resumes writes only once it follows this
			// node: before, it would take writes for slots it no longer
			// serves, lost when it follows.
			return waitReplica(m)
		}
		return nil
	}
	return f.takeOver()
}

// waitReplica waits until the node over m reports itself a replica (ROLE),
// within switchPause.
func waitReplica(m *peer) error {
	deadline := time.Now().Add(switchPause)
	for time.Now().Before(deadline) {
		v, err := m.value("ROLE")
		if err != nil {
			return err
		}
		if role, ok := v.([]any); ok && len(role) > 0 && role[0] == "slave" {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("the old master did not follow this node within %v", switchPause)
}

// catchUp pauses the master's writes (over m) and waits until this node
// has applied the master's whole stream.
func (f *Follower) catchUp(m *peer) error {
	if err := m.call("CLIENT", "PAUSE", strconv.FormatInt(switchPause.Milliseconds(), 10), "WRITE"); err != nil {
		return fmt.Errorf("pausing the master's writes: %w", err)
	}
	want, err := masterOffset(m)
	if err != nil {
		return err
	}
	r := f.cfg.Replication
	if r == nil {
		return errors.New("no replication to catch up with")
	}
	deadline := time.Now().Add(switchCatchUp)
	for r.Offset() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("this replica applied the master's stream to %d of %d within %v", r.Offset(), want, switchCatchUp)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// masterOffset reads master_repl_offset from the master's INFO replication.
func masterOffset(m *peer) (int64, error) {
	v, err := m.value("INFO", "replication")
	if err != nil {
		return 0, err
	}
	text, _ := v.(string)
	for _, line := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == "master_repl_offset" {
			return strconv.ParseInt(val, 10, 64)
		}
	}
	return 0, fmt.Errorf("%w: INFO replication without master_repl_offset", resp.ErrMalformedReply)
}

// askSentinel asks the Sentinels, in turn until one agrees, for a failover
// of the shard master serves, and waits until they report this node its
// master (the SentinelWatch records it).
func (f *Follower) askSentinel(master cluster.Node, sentinels []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	asked := false
	for _, addr := range sentinels {
		name, err := shardName(ctx, addr, addrOf(master))
		if err == nil {
			err = sentinelCall(ctx, addr, "SENTINEL", "FAILOVER", name)
		}
		if err == nil {
			asked = true
			f.cfg.Logger.Info("cluster: asked Sentinel for a failover of the shard", "sentinel", addr, "name", name)
			break
		}
		errs = append(errs, fmt.Errorf("Sentinel %s: %w", addr, err))
	}
	if !asked {
		return errors.Join(errs...)
	}
	me := f.cfg.State.MyID()
	for ctx.Err() == nil {
		if top, _ := f.cfg.State.Topology(); top != nil && top.ShardOf(me).ID == me {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("Sentinel did not make this node the shard's master within 30 s")
}

// shardName is the name under which the Sentinel at addr monitors the master
// at master (host:port).
func shardName(ctx context.Context, addr, master string) (string, error) {
	masters, err := askSentinel(ctx, addr)
	if err != nil {
		return "", err
	}
	for _, m := range masters {
		if m.addr == master {
			return m.name, nil
		}
	}
	return "", fmt.Errorf("it does not monitor %s", master)
}

// sentinelCall runs one command on the Sentinel at addr; an error reply is
// the error.
func sentinelCall(ctx context.Context, addr string, args ...string) error {
	d := net.Dialer{Timeout: sentinelTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	p := newPeer(conn)
	defer p.close()
	return p.call(args...)
}

// takeOver makes this node its shard's master where the operator decides
// failovers: a master of replication, then the topology with it as the
// shard's master pushed to every node at the next version (this one first).
// A node that cannot be reached is named in the error; it gets the topology
// from the operator's next push.
func (f *Follower) takeOver() error {
	base := f.cfg.State.Pushed()
	me := f.cfg.State.MyID()
	next, err := base.WithMaster(me)
	if err != nil {
		return err
	}
	version := strconv.FormatInt(base.Version+1, 10)
	text := next.Text()
	push := func(n cluster.Node) error {
		p, err := dialPeer(n, f.cfg.User, f.cfg.Password)
		if err != nil {
			return err
		}
		defer p.close()
		return p.call("CLUSTERX", "SETNODES", text, version)
	}
	if err := push(*next.Node(me)); err != nil {
		return fmt.Errorf("pushing the topology to this node: %w", err)
	}
	var errs []error
	for _, n := range next.Nodes {
		if n.ID == me {
			continue
		}
		if err := push(n); err != nil {
			errs = append(errs, fmt.Errorf("node %s at %s: %w", n.ID, addrOf(n), err))
		}
	}
	if len(errs) > 0 {
		f.cfg.Logger.Warn("cluster: CLUSTER FAILOVER could not push the topology to every node", "version", version, "err", errors.Join(errs...))
	}
	return nil
}

// addrOf is n's host:port.
func addrOf(n cluster.Node) string { return net.JoinHostPort(n.IP, strconv.Itoa(n.Port)) }
