package clusternode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/resp"
)

// Following Redis Sentinel. With Sentinels set (CLUSTERX SETSENTINELS, which
// redcell cluster create sends), each shard's master is registered with them
// under a name of its own, and Sentinel alone decides failovers: it finds a
// master down by quorum, elects a leader, promotes a replica (REPLICAOF NO
// ONE, then REPLICAOF to the others) and publishes +switch-master. Every node
// runs a SentinelWatch, which asks every Sentinel for the masters it knows
// (SENTINEL MASTERS: address, config epoch, flags) each second and at once
// on +switch-master, and records each shard's master at the highest epoch
// heard (cluster.State.SetMaster). Every node derives the same topology from
// the same reports, whichever hears them first and however many do, and a
// failover's order is Sentinel's epoch: no election or failure detector of
// redcell's own.
//
// A node that starts with Sentinels serves no slot as master until a
// majority of them has answered (cluster.State.Held): an old master restarted
// after a failover learns it is one no longer before it decides anything,
// and follows the new master as a replica (Follower.Follow), as Sentinel
// then tells it to.

// Timing of the watch.
const (
	// sentinelPoll is how often every Sentinel is asked for its masters.
	sentinelPoll = time.Second
	// sentinelTimeout bounds one exchange with a Sentinel.
	sentinelTimeout = 500 * time.Millisecond
	// sentinelRetry is the pause before subscribing again to a Sentinel
	// whose link failed.
	sentinelRetry = time.Second
	// heldWarnEvery spaces the warnings of a node held for want of its
	// Sentinels.
	heldWarnEvery = 10 * time.Second
)

// SentinelWatch follows the Sentinels of cluster.State.Sentinels; see the
// package's notes above. It is safe for concurrent use.
type SentinelWatch struct {
	cfg      Config
	follower *Follower
	poke     chan struct{}
	reconf   chan struct{}
	every    time.Duration // sentinelPoll; tests lengthen it

	mu       sync.Mutex
	answered map[string]time.Time // each Sentinel's last answer
	warned   time.Time            // the last warning of a hold that lasts
	// checked is when the peers' topologies were last asked (catchUp);
	// zero before the first time.
	checked time.Time
}

// NewSentinelWatch returns the watch of cfg.State's Sentinels, which makes
// the node follow what they report through f.
func NewSentinelWatch(cfg Config, f *Follower) *SentinelWatch {
	return &SentinelWatch{cfg: cfg.withDefaults(), follower: f, poke: make(chan struct{}, 1),
		reconf: make(chan struct{}, 1), every: sentinelPoll, answered: map[string]time.Time{}}
}

// Reconfigure tells the watch that the Sentinels changed.
func (w *SentinelWatch) Reconfigure() {
	select {
	case w.reconf <- struct{}{}:
	default:
	}
}

// Poke asks the Sentinels at once, rather than at the next second.
func (w *SentinelWatch) Poke() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// Run follows the Sentinels until ctx ends.
func (w *SentinelWatch) Run(ctx context.Context) {
	var stop context.CancelFunc = func() {}
	defer func() { stop() }()
	subscribe := func() {
		stop()
		var sctx context.Context
		sctx, stop = context.WithCancel(ctx)
		for _, addr := range w.cfg.State.Sentinels() {
			go func() {
				// A panic ends this subscription alone; the next
				// topology or tick subscribes again.
				_ = contain.Run(w.cfg.Logger, "cluster", "sentinel subscription", func() error { w.subscribe(sctx, addr); return nil })
			}()
		}
	}
	subscribe()
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for {
		w.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.reconf:
			subscribe()
		case <-w.poke:
		case <-tick.C:
		}
	}
}

// subscribe listens to one Sentinel's +switch-master until ctx ends, and
// asks every Sentinel at once when it hears one.
func (w *SentinelWatch) subscribe(ctx context.Context, addr string) {
	for ctx.Err() == nil {
		err := w.listen(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		w.cfg.Logger.Debug("cluster: Sentinel's events lost; subscribing again", "sentinel", addr, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(sentinelRetry):
		}
	}
}

func (w *SentinelWatch) listen(ctx context.Context, addr string) error {
	conn, err := net.DialTimeout("tcp", addr, sentinelTimeout)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	defer conn.Close()
	if _, err := conn.Write(resp.AppendCommand(nil, "SUBSCRIBE", "+switch-master")); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	for {
		msg, err := resp.ReadReply(r)
		if err != nil {
			return err
		}
		if m, ok := msg.([]any); ok && len(m) == 3 && m[0] == "message" {
			w.cfg.Logger.Info("cluster: Sentinel switched a master", "sentinel", addr, "event", m[2])
			w.Poke()
		}
	}
}

// sentinelMaster is one master as a Sentinel reports it.
type sentinelMaster struct {
	name, addr string
	epoch      int64
	// down: the quorum finds it down (o_down); suspect: this Sentinel
	// does (s_down); failing: a failover of it is in progress, so its
	// address is not yet the outcome.
	down, suspect, failing bool
	replicas               []sentinelReplica
}

type sentinelReplica struct {
	addr    string
	suspect bool
}

// poll catches up with the peers' topology when it is time (catchUp: first
// of all, so before a held node is released), asks every Sentinel for its
// masters, records each shard's master at the highest epoch reported, and
// releases a held node once a majority of the Sentinels answered.
func (w *SentinelWatch) poll(ctx context.Context) {
	if time.Since(w.checked) >= topologyCheckEvery {
		w.checked = time.Now()
		if w.catchUp(ctx) && !w.cfg.State.Held() {
			w.follower.Follow()
		}
	}
	addrs := w.cfg.State.Sentinels()
	if len(addrs) == 0 {
		return
	}
	reports := make([][]sentinelMaster, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() { reports[i], errs[i] = askSentinel(ctx, addr) })
	}
	wg.Wait()
	answered := 0
	for i, err := range errs {
		if err == nil {
			answered++
			w.mu.Lock()
			w.answered[addrs[i]] = time.Now()
			w.mu.Unlock()
		} else {
			w.cfg.Logger.Debug("cluster: a Sentinel did not answer", "sentinel", addrs[i], "err", err)
		}
	}
	changed := w.apply(reports)
	majority := answered > len(addrs)/2
	if !majority && w.cfg.State.Held() && time.Since(w.warned) >= heldWarnEvery {
		w.warned = time.Now()
		w.cfg.Logger.Warn("cluster: waiting to hear a majority of the Sentinels before serving any slot as master",
			"answered", answered, "of", len(addrs), "err", errors.Join(errs...))
	}
	if majority && w.cfg.State.Held() {
		w.cfg.State.Release()
		w.cfg.Logger.Info("cluster: Sentinels heard; serving the slots the topology gives this node", "sentinels", answered, "of", len(addrs))
		changed = true
	}
	if changed && !w.cfg.State.Held() {
		w.follower.Follow()
	}
}

// apply records what the Sentinels reported: each shard's master at the
// highest epoch any reported (a master whose failover is under way is
// skipped: its address is not the outcome yet), and each node's health.
// It reports whether the topology in force changed.
func (w *SentinelWatch) apply(reports [][]sentinelMaster) bool {
	top := w.cfg.State.Pushed()
	if top == nil {
		return false
	}
	byAddr := map[string]string{}
	for _, n := range top.Nodes {
		byAddr[net.JoinHostPort(n.IP, strconv.Itoa(n.Port))] = n.ID
	}
	type best struct {
		id    string
		epoch int64
	}
	shards := map[string]best{}
	health := map[string]cluster.Health{}
	for _, masters := range reports {
		for _, m := range masters {
			id, ok := byAddr[m.addr]
			if !ok {
				continue // another cluster's, or one this node does not know
			}
			h := health[id]
			h.Down = h.Down || m.down
			h.Suspect = h.Suspect || m.suspect || m.down
			health[id] = h
			for _, r := range m.replicas {
				if rid, ok := byAddr[r.addr]; ok && r.suspect {
					health[rid] = cluster.Health{Suspect: true}
				}
			}
			if m.failing {
				continue
			}
			shard := top.ShardOf(id)
			if b, seen := shards[shard.ID]; !seen || m.epoch > b.epoch {
				shards[shard.ID] = best{id, m.epoch}
			}
		}
	}
	w.cfg.State.SetHealth(health)
	changed := false
	for _, b := range shards {
		c, err := w.cfg.State.SetMaster(b.id, b.epoch)
		if err != nil {
			w.cfg.Logger.Warn("cluster: Sentinel's report not applied", "master", b.id, "epoch", b.epoch, "err", err)
			continue
		}
		if c {
			n := top.Node(b.id)
			w.cfg.Logger.Info("cluster: Sentinel named a shard's new master", "master", b.id,
				"addr", net.JoinHostPort(n.IP, strconv.Itoa(n.Port)), "epoch", b.epoch)
			changed = true
		}
	}
	return changed
}

// Sentinels returns each Sentinel and whether it answered within the last
// few polls, for INFO.
func (w *SentinelWatch) Sentinels() (addrs []string, up []bool) {
	addrs = w.cfg.State.Sentinels()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range addrs {
		up = append(up, time.Since(w.answered[a]) < 3*sentinelPoll)
	}
	return addrs, up
}

// askSentinel asks the Sentinel at addr for the masters it monitors and
// their replicas.
func askSentinel(ctx context.Context, addr string) ([]sentinelMaster, error) {
	d := net.Dialer{Timeout: sentinelTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(sentinelTimeout))
	r := bufio.NewReader(conn)
	call := func(args ...string) ([]any, error) {
		if _, err := conn.Write(resp.AppendCommand(nil, args...)); err != nil {
			return nil, err
		}
		v, err := resp.ReadReply(r)
		if err != nil {
			return nil, err
		}
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s %s answered %v", resp.ErrMalformedReply, args[0], args[1], v)
		}
		return a, nil
	}
	list, err := call("SENTINEL", "MASTERS")
	if err != nil {
		return nil, err
	}
	var out []sentinelMaster
	for _, e := range list {
		f, err := fields(e)
		if err != nil {
			return nil, err
		}
		flags := strings.Split(f["flags"], ",")
		m := sentinelMaster{name: f["name"], addr: net.JoinHostPort(f["ip"], f["port"])}
		m.epoch, _ = strconv.ParseInt(f["config-epoch"], 10, 64)
		for _, fl := range flags {
			switch fl {
			case "o_down":
				m.down = true
			case "s_down":
				m.suspect = true
			case "failover_in_progress", "promoted":
				m.failing = true
			}
		}
		replicas, err := call("SENTINEL", "REPLICAS", m.name)
		if err != nil {
			return nil, err
		}
		for _, e := range replicas {
			f, err := fields(e)
			if err != nil {
				return nil, err
			}
			m.replicas = append(m.replicas, sentinelReplica{addr: net.JoinHostPort(f["ip"], f["port"]),
				suspect: strings.Contains(f["flags"], "s_down") || strings.Contains(f["flags"], "disconnected")})
		}
		out = append(out, m)
	}
	return out, nil
}

// fields reads one of SENTINEL MASTERS's or REPLICAS's entries: a flat list
// of names and values.
func fields(e any) (map[string]string, error) {
	a, ok := e.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("%w: a Sentinel's entry %v", resp.ErrMalformedReply, e)
	}
	f := make(map[string]string, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, _ := a[i].(string)
		v, _ := a[i+1].(string)
		f[k] = v
	}
	return f, nil
}
