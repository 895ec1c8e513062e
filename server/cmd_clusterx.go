package server

import (
	"errors"
	"redcell/cluster"
	"time"
)

// CLUSTERX, kvrocks's commands by which an operator (or redcell cluster
// reshard) pushes the topology to each node, and how a node follows
// topology changes (cmd_cluster.go has CLUSTER and the family's table).

// CLUSTERX SETNODEID id
func cmdClusterxSetNodeID(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	if err := c.srv.cluster.SetNodeID(string(args[2])); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.followTopology()
	c.writeOK()
}

// CLUSTERX SETNODES "<id> <ip> <port> master|slave <master id|-> <slots>\n..." version [FORCE]
//
// The whole topology, as kvrocks takes it: refused unless version is newer
// than the topology's (or FORCE), persisted before it is answered.
func cmdClusterxSetNodes(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	if len(args) > 5 || (len(args) == 5 && !equalFold(args[4], "force")) {
		c.writeError(errSyntax)
		return
	}
	version, ok := c.parseVersion(args[3])
	if !ok {
		return
	}
	top, err := cluster.Parse(string(args[2]), version)
	if err == nil {
		err = c.srv.cluster.SetTopology(top, len(args) == 5)
	}
	if err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.cfg.Logger.Info("cluster topology set", "version", version, "nodes", len(top.Nodes), "client", c.addr)
	c.srv.followTopology()
	c.writeOK()
}

// CLUSTERX SETSLOT slot NODE id version
//
// Gives slot to the master id, at version, which must be the topology's
// next: how a migration's end is pushed to every node.
func cmdClusterxSetSlot(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	slot, ok := c.parseSlot(args[2])
	if !ok {
		return
	}
	if !equalFold(args[3], "node") {
		c.writeError(errSyntax)
		return
	}
	version, ok := c.parseVersion(args[5])
	if !ok {
		return
	}
	if err := c.srv.setSlot(slot, string(args[4]), version); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.writeOK()
}

// setSlot gives slot to the master id at version: the topology in force
// with that one slot changed.
func (s *Server) setSlot(slot int, id string, version int64) error {
	top, _ := s.cluster.Topology()
	if top == nil {
		return errors.New("cluster: no topology yet")
	}
	if version != top.Version+1 {
		return cluster.ErrStaleVersion
	}
	next, err := top.WithSlot(slot, id, version)
	if err != nil {
		return err
	}
	if err := s.cluster.SetTopology(next, false); err != nil {
		return err
	}
	s.followTopology()
	return nil
}

// CLUSTERX VERSION
func cmdClusterxVersion(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.writeInt(c.srv.cluster.Version())
	}
}

// FollowTopology makes the node what the persisted topology says it is, at
// start (followTopology).
func (s *Server) FollowTopology() {
	if s.cluster != nil {
		s.followTopology()
	}
}

// followTopology makes the node what the topology in force says: a replica
// of its master, or a master; and drops the keys of slots that moved away
// from it (their state lives on the new owner now).
func (s *Server) followTopology() {
	top, me := s.cluster.Topology()
	if top == nil || me == nil {
		return
	}
	if s.repl != nil {
		if me.IsReplica() {
			if m := top.Node(me.MasterID); m != nil {
				if _, err := s.repl.ReplicaOf(m.IP, m.Port); err != nil {
					s.logError("cluster: following the topology's master", err)
				}
			}
		} else if s.repl.IsReplica() {
			if _, err := s.repl.ReplicaOf("", 0); err != nil {
				s.logError("cluster: becoming the topology's master", err)
			}
		}
	}
	for _, m := range s.cluster.Moves() {
		if owner := top.Owner(m.Slot); m.Out && owner != nil && owner.ID == m.Peer.ID {
			n := s.store.DeleteSlot(m.Slot)
			s.cluster.EndMove(m.Slot)
			s.cfg.Logger.Info("cluster: slot moved away", "slot", m.Slot, "to", m.Peer.ID, "keys_dropped", n)
		} else if !m.Out && owner != nil && owner.ID == s.cluster.MyID() {
			s.cluster.EndMove(m.Slot)
			s.cfg.Logger.Info("cluster: slot imported", "slot", m.Slot, "from", m.Peer.ID)
		}
	}
}

// parseVersion parses a topology version, answering Redis's error if it is
// not one.
func (c *client) parseVersion(b []byte) (int64, bool) {
	version, ok := parseInt(b)
	if !ok || version < 0 {
		c.writeError(errInvalidVersion)
		return 0, false
	}
	return version, true
}
