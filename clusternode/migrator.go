// Package clusternode is what a node of a Redis Cluster does with its peers
// and with the topology pushed to it, beyond answering clients (package
// server) and beyond the cluster's pure logic (package cluster): the
// Migrator moves a slot's keys, with their exact state, to or from another
// node, and the Follower makes the node what the topology in force says.
// Both talk to other nodes or drive the store and replication, so they
// live here, as kvrocks's slot_migrate and Dragonfly's
// outgoing_slot_migration live with their cluster rather than with the
// commands: server's CLUSTERX commands parse their arguments and call them.
//
// Errors read "cluster: ...", as package cluster's do; server answers them
// as ERR and the rest, and turns the sentinels (ErrNotOwner,
// ErrUnknownNode, ErrNotImporting) into Redis's texts.
package clusternode

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/storage"
)

// Moving a slot to another node (Migrate), with every key's exact state,
// while the slot keeps being served:
//
//  1. Copying: the source copies the slot's keys (Store.CopySlot, under
//     the slot's shard lock) and sends them to the destination, which holds
//     them without serving them; then again, sending only what changed,
//     until little does. Clients are served here meanwhile.
//  2. Frozen: the source freezes the slot and copies it a last time in the
//     same hold of its shard's lock, so nothing changes it after; writes
//     to it wait (AwaitThaw) for the moment it takes to send that last
//     difference, then are routed: sent on with ASK, or run here if the
//     destination was given up on.
//  3. Asking: the destination has the slot's last state; clients are sent
//     -ASK there, and the destination serves them after ASKING. Both nodes
//     save the step (cluster.State.Hand), the destination before it
//     answers DONE, the source before its first ASK: either restarted
//     keeps to it.
//  4. A topology that gives the slot to the destination (CLUSTERX SETSLOT
//     or SETNODES, pushed to every node) ends it: the source answers MOVED
//     and drops its copy of the slot (Follower.Follow).
//
// So no decision is lost or doubled: every decision on the slot ran either
// on the source before the last copy, or on the destination after it.
//
// The destination's side is CLUSTERX IMPORT slot START source-id | KEY key
// value | DONE | ABORT, which only a migrating node sends, and which the
// destination's Migrator serves (StartImport, ImportKey, EndImport,
// AbortImport).

// Limits of a migration's passes.
const (
	migrateMaxPasses = 10 // copies before freezing, however much changes
	migrateSmallDiff = 64 // a difference this small is sent frozen
	// migrateFrozenTimeout bounds the freeze, the last copy and DONE's
	// reply, unless the copy before it took longer (then twice that): a
	// destination slower than that is given up on and the slot thaws
	// here. The slot's commands wait for the freeze to end (AwaitThaw),
	// and a freeze takes well under a millisecond on one host.
	migrateFrozenTimeout = 50 * time.Millisecond
	// migrateAbortTimeout bounds the ABORT sent to a destination given up
	// on: its slot is served here meanwhile.
	migrateAbortTimeout = time.Second
	// migrateFrozenWait bounds how long a command on a frozen slot waits
	// for it to thaw (AwaitThaw) before it is answered TRYAGAIN.
	migrateFrozenWait = 100 * time.Millisecond
)

// Refusals of a migration or an import.
var (
	// ErrNotOwner is a slot whose owner, in the topology in force, is not
	// the node that would move it: this node for Migrate, the named source
	// for StartImport.
	ErrNotOwner = errors.New("cluster: the slot is not served by the node moving it")
	// ErrUnknownNode is a destination that is not another master of the
	// topology in force.
	ErrUnknownNode = errors.New("cluster: no such master to move the slot to")
	// ErrNotImporting is an import's KEY or DONE for a slot this node is not
	// importing (or a key of another slot).
	ErrNotImporting = errors.New("cluster: the slot is not being imported here")
)

// Config configures a Migrator and a Follower.
type Config struct {
	// State is the node's view of the cluster, which records the moves in
	// progress. Required.
	State *cluster.State
	// Store is the keyspace, sharded by slot. Required.
	Store Store
	// User and Password are what this node authenticates to a peer with
	// before a migration's first command, a topology's push or a planned
	// failover's (AUTH user password; AUTH password for User ""): an
	// internal user the nodes of a cluster share, allowed what peers ask
	// of each other (CLUSTERX, CLIENT PAUSE and UNPAUSE, ROLE, INFO).
	// Password "" sends no AUTH.
	User, Password string
	// Now is the clock a slot's keys are copied at: a key expired by then
	// is not sent. The default is time.Now.
	Now func() time.Time
	// Logger receives each migration's and import's outcome and what
	// following a topology did. The default discards them.
	Logger *slog.Logger
	// Replication, when set, is the node's replication, which the
	// Follower makes a replica of the topology's master for this node, or
	// a master. Nil: the Follower follows the slots only.
	Replication Replication
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Migrator moves slots between this node and its peers: out (Migrate), and
// in (the Import methods); it owns a move's phases, which it records in
// Config.State for routing to read, and its connection to the peer. It is
// safe for concurrent use; a slot moves in one migration at a time.
type Migrator struct {
	cfg Config
}

// NewMigrator returns a Migrator over cfg.State and cfg.Store.
func NewMigrator(cfg Config) *Migrator { return &Migrator{cfg: cfg.withDefaults()} }

// now is the instant a copy or a deletion is made at.
func (m *Migrator) now() gcra.Instant { return gcra.InstantOf(m.cfg.Now()) }

// Migrate starts moving slot to the master id, as above, to step 3, and
// returns at once; the migration's outcome comes on the channel: nil once
// the destination serves the slot to ASKING clients, or the error that
// stopped it, the slot then served here again. It refuses, starting
// nothing, a slot this node does not serve (ErrNotOwner), a destination
// that is not another master (ErrUnknownNode) and a slot already moving.
func (m *Migrator) Migrate(slot int, id string) (<-chan error, error) {
	top, me := m.cfg.State.Topology()
	if me == nil || top.Owner(slot) != me {
		return nil, ErrNotOwner
	}
	dst := top.Node(id)
	if dst == nil || dst.IsReplica() || dst == me {
		return nil, ErrUnknownNode
	}
	mv := &cluster.Move{Slot: slot, Peer: *dst, Out: true}
	if err := m.cfg.State.StartMove(mv); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- m.migrate(mv) }()
	return done, nil
}

// migrate runs mv to its Asking step, or undoes it.
func (m *Migrator) migrate(mv *cluster.Move) error {
	start := time.Now()
	var frozen time.Duration
	p, err := dialPeer(mv.Peer, m.cfg.User, m.cfg.Password)
	if err == nil {
		defer p.close()
		// A panic in the passes fails the migration as an error does, so
		// that it is undone (abort): the slot is served here again.
		err = contain.Run(m.cfg.Logger, "cluster", "slot migration", func() (err error) {
			frozen, err = m.passes(p, mv)
			return err
		})
	}
	if err != nil {
		err = fmt.Errorf("cluster: slot %d to %s at %s: %w", mv.Slot, mv.Peer.ID, net.JoinHostPort(mv.Peer.IP, strconv.Itoa(mv.Peer.Port)), err)
		m.cfg.Logger.Warn("cluster: slot migration failed; the slot stays here", "slot", mv.Slot, "to", mv.Peer.ID, "err", err)
		m.abort(p, mv)
		return err
	}
	m.cfg.Logger.Info("cluster: slot migrated; clients are sent ASK until a topology gives it to its destination",
		"slot", mv.Slot, "to", mv.Peer.ID, "took", time.Since(start), "frozen", frozen)
	return nil
}

// abort undoes mv, which failed, over p (nil if it never connected): the
// slot is served here again first, then the destination told, after what
// it was sent before (on the same connection, so in order); the move ends
// last, so that no second migration of the slot starts before.
func (m *Migrator) abort(p *peer, mv *cluster.Move) {
	m.cfg.Store.Freeze(mv.Slot, false)
	mv.Thaw(cluster.Copying)
	if p != nil {
		p.deadline = time.Now().Add(migrateAbortTimeout)
		p.send("CLUSTERX", "IMPORT", strconv.Itoa(mv.Slot), "ABORT")
		_ = p.replies(p.pending)
	}
	m.cfg.State.EndMove(mv.Slot)
}

// passes runs mv's passes over p, to its Asking step, and returns how long
// the slot was frozen.
func (m *Migrator) passes(p *peer, mv *cluster.Move) (time.Duration, error) {
	slot := strconv.Itoa(mv.Slot)
	if err := p.call("CLUSTERX", "IMPORT", slot, "START", m.cfg.State.MyID()); err != nil {
		return 0, err
	}
	sent := map[string]storage.Change{}
	var buf []storage.Change
	var last time.Duration // the last pass's
	for pass := 0; ; pass++ {
		began := time.Now()
		buf = m.cfg.Store.CopySlot(mv.Slot, m.now(), false, buf[:0])
		n, err := sendDiff(p, slot, sent, buf)
		if err != nil {
			return 0, err
		}
		last = time.Since(began)
		if n <= migrateSmallDiff || pass+1 >= migrateMaxPasses {
			break
		}
	}
	// The last difference and DONE in one round trip, within a bound.
	mv.Freeze()
	frozen := time.Now()
	p.deadline = frozen.Add(max(migrateFrozenTimeout, 2*last))
	buf = m.cfg.Store.CopySlot(mv.Slot, m.now(), true, buf[:0])
	n := queueDiff(p, slot, sent, buf)
	p.send("CLUSTERX", "IMPORT", slot, "DONE")
	if err := p.replies(n + 1); err != nil {
		return 0, fmt.Errorf("frozen for %v: %w", time.Since(frozen).Round(time.Microsecond), err)
	}
	// Saved before the first ASK (State.Hand): a restart of this node
	// keeps sending the slot's clients there.
	if err := m.cfg.State.Hand(mv); err != nil {
		return 0, err
	}
	return time.Since(frozen), nil
}

// sendDiff sends what of now differs from sent (changed or new keys, and
// keys gone), pipelined, updates sent, and returns how many it sent.
func sendDiff(p *peer, slot string, sent map[string]storage.Change, now []storage.Change) (int, error) {
	n := queueDiff(p, slot, sent, now)
	return n, p.replies(n)
}

// queueDiff is sendDiff without the flush and the replies. It costs one
// lookup a key of now: the last pass runs frozen, and its cost is the
// freeze's. Keys gone, which are rare (a key expired, or deleted), are
// looked for only when some are.
func queueDiff(p *peer, slot string, sent map[string]storage.Change, now []storage.Change) int {
	n, before, kept := 0, len(sent), 0
	for _, ch := range now {
		old, ok := sent[ch.Key]
		if ok {
			kept++
			if old == ch {
				continue
			}
		}
		p.send("CLUSTERX", "IMPORT", slot, "KEY", ch.Key, string(statecodec.Encode(ch)))
		sent[ch.Key] = ch
		n++
	}
	if kept == before {
		return n
	}
	seen := make(map[string]bool, len(now))
	for _, ch := range now {
		seen[ch.Key] = true
	}
	for k := range sent {
		if !seen[k] {
			p.send("CLUSTERX", "IMPORT", slot, "KEY", k, "")
			delete(sent, k)
			n++
		}
	}
	return n
}

// AwaitThaw waits, up to migrateFrozenWait, for slot's freeze to end, and
// reports whether it ended. A command on a frozen slot waits so (server's
// routing) rather than being answered TRYAGAIN, as a command waits for a
// shard lock held: clients retry TRYAGAIN only a few times, each retry
// counted with the MOVED and ASK redirects that may precede it (go-redis's
// four attempts in all), and a freeze lasts well under a millisecond, or
// migrateFrozenTimeout at most, for which the client's event loop waits
// with it.
func (m *Migrator) AwaitThaw(slot int) bool {
	mv := m.cfg.State.Move(slot)
	if mv == nil {
		return true
	}
	t := time.NewTimer(migrateFrozenWait)
	defer t.Stop()
	select {
	case <-mv.Thawed():
		return true
	case <-t.C:
		return false
	}
}

// settle ends the moves that top, the topology in force, concludes (step
// 4): a slot moved out that top gives to its destination is dropped here,
// its state living there now; a slot moved in that top gives to this node
// is served as any other.
//
// A failover ends a move too, so that a slot stays whole on one node, to be
// moved again to the shard's new master: an import whose source no longer
// serves the slot is dropped (AbortImport); a slot that reached its
// destination (Asking) whose shard then failed over, or whose own shard
// did, is no longer sent there. A move still copying needs nothing here:
// its peer is gone, and the migration gives up and aborts on its own.
func (m *Migrator) settle(top *cluster.Topology) {
	st := m.cfg.State
	myID := st.MyID()
	for _, mv := range st.Moves() {
		owner := top.Owner(mv.Slot)
		switch {
		case mv.Out && owner != nil && owner.ID == mv.Peer.ID:
			n := m.cfg.Store.DeleteSlot(mv.Slot)
			st.EndMove(mv.Slot)
			m.cfg.Logger.Info("cluster: slot moved away", "slot", mv.Slot, "to", mv.Peer.ID, "keys_dropped", n)
		case !mv.Out && owner != nil && owner.ID == myID:
			st.EndMove(mv.Slot)
			m.cfg.Logger.Info("cluster: slot imported", "slot", mv.Slot, "from", mv.Peer.ID)
		case !mv.Out && (owner == nil || owner.ID != mv.Peer.ID):
			m.AbortImport(mv.Slot)
			m.cfg.Logger.Warn("cluster: import abandoned: its source no longer serves the slot (a failover)", "slot", mv.Slot, "from", mv.Peer.ID)
		case mv.Out && mv.Phase.Load() == cluster.Asking && (!isMaster(top, mv.Peer.ID) || owner == nil || owner.ID != myID):
			st.EndMove(mv.Slot)
			m.cfg.Logger.Warn("cluster: migration ended by a failover; the slot is served by its shard's master, to be moved again",
				"slot", mv.Slot, "to", mv.Peer.ID)
		}
	}
}

// isMaster reports whether id is a master of top.
func isMaster(top *cluster.Topology, id string) bool {
	n := top.Node(id)
	return n != nil && !n.IsReplica()
}

// dropStrays deletes the keys this node holds of slots it does not serve
// and is not importing: a replica promoted by a failover may hold the part
// of a slot its old master was importing when it failed, which no one
// serves, or will.
func (m *Migrator) dropStrays(top *cluster.Topology, me *cluster.Node) {
	for slot := range cluster.Slots {
		if owner := top.Owner(slot); owner == me || m.cfg.State.Move(slot) != nil || m.cfg.Store.CountInSlot(slot) == 0 {
			continue
		}
		n := m.cfg.Store.DeleteSlot(slot)
		m.cfg.Logger.Info("cluster: dropped the keys of a slot this node does not serve", "slot", slot, "keys", n)
	}
}
