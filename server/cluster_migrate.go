package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"redcell/cluster"
	"redcell/gcra"
	"redcell/internal/statecodec"
	"redcell/storage"
)

// Moving a slot to another node (CLUSTERX MIGRATE), with every key's exact
// state, while the slot keeps being served:
//
//  1. Copying: the source copies the slot's keys (storage.CopySlot, under
//     the slot's shard lock) and sends them to the destination, which holds
//     them without serving them; then again, sending only what changed,
//     until little does. Clients are served here meanwhile.
//  2. Frozen: the source freezes the slot and copies it a last time in the
//     same hold of its shard's lock, so nothing changes it after; writes
//     to it wait (awaitThaw) for the moment it takes to send that last
//     difference, then are routed: sent on with ASK, or run here if the
//     destination was given up on.
//  3. Asking: the destination has the slot's last state; clients are sent
//     -ASK there, and the destination serves them after ASKING.
//  4. A topology that gives the slot to the destination (CLUSTERX SETSLOT
//     or SETNODES, pushed to every node) ends it: the source answers MOVED
//     and drops its copy of the slot (followTopology).
//
// So no decision is lost or doubled: every decision on the slot ran either
// on the source before the last copy, or on the destination after it.
//
// The destination's side is CLUSTERX IMPORT slot START source-id | KEY key
// value | DONE | ABORT, which only a migrating node sends.

// Limits of a migration's passes.
const (
	migrateMaxPasses = 10 // copies before freezing, however much changes
	migrateSmallDiff = 64 // a difference this small is sent frozen
	migrateTimeout   = 10 * time.Second
	// migrateFrozenTimeout bounds the freeze, the last copy and DONE's
	// reply, unless the copy before it took longer (then twice that): a
	// destination slower than that is given up on and the slot thaws
	// here. The slot's commands wait for the freeze to end (awaitThaw),
	// and a freeze takes well under a millisecond on one host.
	migrateFrozenTimeout = 50 * time.Millisecond
	// migrateAbortTimeout bounds the ABORT sent to a destination given up
	// on: its slot is served here meanwhile.
	migrateAbortTimeout = time.Second
	// migrateFrozenWait bounds how long a command on a frozen slot waits
	// for it to thaw (awaitThaw) before it is answered TRYAGAIN.
	migrateFrozenWait = 100 * time.Millisecond
)

// awaitThaw waits, up to migrateFrozenWait, for slot's freeze to end, and
// reports whether it ended. A command on a frozen slot waits so (route)
// rather than being answered TRYAGAIN, as a command waits for a shard lock
// held: clients retry TRYAGAIN only a few times, each retry counted with
// the MOVED and ASK redirects that may precede it (go-redis's four
// attempts in all), and a freeze lasts well under a millisecond, or
// migrateFrozenTimeout at most, for which the client's event loop waits
// with it.
func (s *Server) awaitThaw(slot int) bool {
	m := s.cluster.Move(slot)
	if m == nil {
		return true
	}
	t := time.NewTimer(migrateFrozenWait)
	defer t.Stop()
	select {
	case <-m.Thawed():
		return true
	case <-t.C:
		return false
	}
}

// CLUSTERX MIGRATE slot destination-id [SYNC]
//
// Moves slot's keys to the master destination-id, as above, to step 3.
// With SYNC the reply comes once the destination serves the slot to ASKING
// clients (or with the error that stopped it); without, at once.
func cmdClusterxMigrate(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	slot, ok := c.parseSlot(args[2])
	if !ok {
		return
	}
	sync := len(args) == 5 && equalFold(args[4], "sync")
	if len(args) == 5 && !sync {
		c.writeError(errSyntax)
		return
	}
	top, me := c.srv.cluster.Topology()
	if me == nil || top.Owner(slot) != me {
		c.writeError(errNotMySlot(slot))
		return
	}
	dst := top.Node(string(args[3]))
	if dst == nil || dst.IsReplica() || dst == me {
		c.writeError(errUnknownNode(args[3]))
		return
	}
	m := &cluster.Move{Slot: slot, Peer: *dst, Out: true}
	if err := c.srv.cluster.StartMove(m); err != nil {
		c.writeError(clusterError(err))
		return
	}
	done := make(chan error, 1)
	go func() { done <- c.srv.migrate(m) }()
	if !sync {
		c.writeOK()
		return
	}
	if err := <-done; err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.writeOK()
}

// migrate runs m to its Asking step, or undoes it.
func (s *Server) migrate(m *cluster.Move) (err error) {
	start := time.Now()
	var frozen time.Duration
	p, err := dialPeer(m.Peer, s.cfg.RequirePass)
	if err == nil {
		defer p.close()
		frozen, err = s.migrateTo(p, m)
	}
	if err != nil {
		err = fmt.Errorf("cluster: slot %d to %s at %s: %w", m.Slot, m.Peer.ID, net.JoinHostPort(m.Peer.IP, strconv.Itoa(m.Peer.Port)), err)
		s.cfg.Logger.Warn("cluster: slot migration failed; the slot stays here", "slot", m.Slot, "to", m.Peer.ID, "err", err)
		// Served here again first, then the destination told, after what
		// it was sent before (on the same connection, so in order); the
		// move ends last, so that no second migration starts before.
		s.store.Freeze(m.Slot, false)
		m.Thaw(cluster.Copying)
		if p != nil {
			p.deadline = time.Now().Add(migrateAbortTimeout)
			p.send("CLUSTERX", "IMPORT", strconv.Itoa(m.Slot), "ABORT")
			_ = p.replies(p.pending)
		}
		s.cluster.EndMove(m.Slot)
		return err
	}
	s.cfg.Logger.Info("cluster: slot migrated; clients are sent ASK until a topology gives it to its destination",
		"slot", m.Slot, "to", m.Peer.ID, "took", time.Since(start), "frozen", frozen)
	return nil
}

// migrateTo runs m's passes over p, to its Asking step, and returns how
// long the slot was frozen.
func (s *Server) migrateTo(p *peer, m *cluster.Move) (time.Duration, error) {
	slot := strconv.Itoa(m.Slot)
	if err := p.call("CLUSTERX", "IMPORT", slot, "START", s.cluster.MyID()); err != nil {
		return 0, err
	}
	sent := map[string]storage.Change{}
	var buf []storage.Change
	var last time.Duration // the last pass's
	for pass := 0; ; pass++ {
		began := time.Now()
		buf = s.store.CopySlot(m.Slot, gcra.InstantOf(s.now()), false, buf[:0])
		n, err := s.sendDiff(p, slot, sent, buf)
		if err != nil {
			return 0, err
		}
		last = time.Since(began)
		if n <= migrateSmallDiff || pass+1 >= migrateMaxPasses {
			break
		}
	}
	// The last difference and DONE in one round trip, within a bound.
	m.Freeze()
	frozen := time.Now()
	p.deadline = frozen.Add(max(migrateFrozenTimeout, 2*last))
	buf = s.store.CopySlot(m.Slot, gcra.InstantOf(s.now()), true, buf[:0])
	n := s.queueDiff(p, slot, sent, buf)
	p.send("CLUSTERX", "IMPORT", slot, "DONE")
	if err := p.replies(n + 1); err != nil {
		return 0, fmt.Errorf("frozen for %v: %w", time.Since(frozen).Round(time.Microsecond), err)
	}
	m.Thaw(cluster.Asking)
	return time.Since(frozen), nil
}

// sendDiff sends what of now differs from sent (changed or new keys, and
// keys gone), pipelined, updates sent, and returns how many it sent.
func (s *Server) sendDiff(p *peer, slot string, sent map[string]storage.Change, now []storage.Change) (int, error) {
	n := s.queueDiff(p, slot, sent, now)
	return n, p.replies(n)
}

// queueDiff is sendDiff without the flush and the replies. It costs one
// lookup a key of now: the last pass runs frozen, and its cost is the
// freeze's. Keys gone, which are rare (a key expired, or deleted), are
// looked for only when some are.
func (s *Server) queueDiff(p *peer, slot string, sent map[string]storage.Change, now []storage.Change) int {
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

// CLUSTERX IMPORT slot START source-id | KEY key value | DONE | ABORT
//
// The destination's side of a migration (cmd_cluster.go's CLUSTERX
// MIGRATE): START clears what the node holds of the slot, KEY stores a
// key's state (an empty value deletes it), DONE makes the slot served to
// ASKING clients, ABORT forgets it all.
func cmdClusterxImport(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	slot, ok := c.parseSlot(args[2])
	if !ok {
		return
	}
	s := c.srv
	top, me := s.cluster.Topology()
	op := args[3]
	switch {
	case equalFold(op, "start") && len(args) == 5:
		src := top.Node(string(args[4]))
		if me == nil || src == nil || top.Owner(slot) != src {
			c.writeError(errNotMySlot(slot))
			return
		}
		if m := s.cluster.Move(slot); m != nil && !m.Out {
			s.cluster.EndMove(slot) // a retry after a failed attempt
		}
		s.store.DeleteSlot(slot)
		if err := s.cluster.StartMove(&cluster.Move{Slot: slot, Peer: *src}); err != nil {
			c.writeError(clusterError(err))
			return
		}
		c.writeOK()
	case equalFold(op, "key") && len(args) == 6:
		m := s.cluster.Move(slot)
		if m == nil || m.Out || cluster.Slot(args[4]) != slot {
			c.writeError(errNotImporting(slot))
			return
		}
		if len(args[5]) == 0 {
			s.store.Delete(args[4], gcra.InstantOf(s.now()))
			c.changed()
			c.writeOK()
			return
		}
		kind, exp, state, err := statecodec.Decode(args[5])
		if err == nil {
			err = s.store.Apply(args[4], kind, exp, state)
		}
		if err != nil {
			c.writeError(clusterError(err))
			return
		}
		c.changed()
		c.writeOK()
	case equalFold(op, "done") && len(args) == 4:
		if m := s.cluster.Move(slot); m == nil || m.Out {
			c.writeError(errNotImporting(slot))
			return
		}
		s.cfg.Logger.Info("cluster: slot imported; served to ASKING clients until a topology gives it here", "slot", slot)
		c.writeOK()
	case equalFold(op, "abort") && len(args) == 4:
		if m := s.cluster.Move(slot); m != nil && !m.Out {
			s.cluster.EndMove(slot)
			s.store.DeleteSlot(slot)
		}
		c.writeOK()
	default:
		c.writeError(errSyntax)
	}
}

// peer is a connection to another node, for a migration.
type peer struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	pending int // commands sent whose replies are yet to be read
	// deadline bounds the replies read from now on; zero: each read of
	// replies has migrateTimeout.
	deadline time.Time
}

func dialPeer(n cluster.Node, pass string) (*peer, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, strconv.Itoa(n.Port)), 5*time.Second)
	if err != nil {
		return nil, err
	}
	p := &peer{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}
	if pass != "" {
		if err := p.call("AUTH", pass); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

func (p *peer) close() { _ = p.conn.Close() }

// send queues a command.
func (p *peer) send(args ...string) {
	fmt.Fprintf(p.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(p.w, "$%d\r\n%s\r\n", len(a), a)
	}
	p.pending++
}

// replies flushes the queued commands and reads n replies, each +OK; the
// first error reply is returned.
func (p *peer) replies(n int) error {
	d := p.deadline
	if d.IsZero() {
		d = time.Now().Add(migrateTimeout)
	}
	_ = p.conn.SetDeadline(d)
	if err := p.w.Flush(); err != nil {
		return err
	}
	var first error
	for ; n > 0; n-- {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return err
		}
		p.pending--
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "-") && first == nil {
			first = errors.New(strings.TrimPrefix(line, "-"))
		}
	}
	return first
}

// call sends one command and reads its reply.
func (p *peer) call(args ...string) error {
	p.send(args...)
	return p.replies(1)
}
