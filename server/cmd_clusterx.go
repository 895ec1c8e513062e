package server

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/cluster"
)

// CLUSTERX, kvrocks's commands by which an operator (or redcell cluster
// reshard) pushes the topology to each node and moves slots between nodes
// (clusterFamily has CLUSTER and the family's table). Each parses its
// arguments and calls package cluster (the topology) or clusternode (moving
// slots, following the topology).

// CLUSTERX SETNODEID id
func cmdClusterxSetNodeID(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	if err := c.srv.cluster.SetNodeID(string(args[2])); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.follower.Follow()
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
	c.srv.cfg.Logger.Info("cluster topology set", "version", version, "nodes", len(top.Nodes), "client", c.ident.addr)
	c.srv.follower.Follow()
	c.writeOK()
}

// CLUSTERX SETSLOT slot NODE id version
//
// Gives slot to the master id, at version, which must be the topology's
// next: how a migration's end is pushed to every node. A node that holds
// that version already, with slot given to id (it caught up from a peer
// before the push reached it), answers OK too.
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
	if err := c.srv.cluster.SetSlot(slot, string(args[4]), version); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.follower.Follow()
	c.writeOK()
}

// CLUSTERX SETSENTINELS [host:port ...]
//
// The Redis Sentinels that decide this cluster's failovers (one Sentinel
// master name per shard), persisted; none leaves failovers to the operator.
// The node follows what they report (clusternode.SentinelWatch), and after a
// restart serves no slot as master until it has heard them.
func cmdClusterxSetSentinels(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	addrs := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		host, port, err := net.SplitHostPort(string(a))
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			c.writeError(errInvalidSentinelAddr(a))
			return
		}
		addrs = append(addrs, string(a))
	}
	if err := c.srv.cluster.SetSentinels(addrs); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.cfg.Logger.Info("cluster Sentinels set", "sentinels", strings.Join(addrs, ","), "client", c.ident.addr)
	if c.srv.sentinels != nil {
		c.srv.sentinels.Reconfigure()
	}
	c.writeOK()
}

// CLUSTERX SENTINELS
func cmdClusterxSentinels(c *client, _ [][]byte, _ time.Time) {
	if !c.clusterOn() {
		return
	}
	addrs := c.srv.cluster.Sentinels()
	c.writeArray(len(addrs))
	for _, a := range addrs {
		c.writeBulkString(a)
	}
}

// CLUSTERX TOPOLOGY
//
// The topology as the operator pushed it (without the failovers Sentinel
// reported, which CLUSTER NODES shows) in CLUSTERX SETNODES's format, and its
// version: [version, text], [-1, ""] before any push. A node restarted asks
// its peers for it to catch up with pushes it missed.
func cmdClusterxTopology(c *client, _ [][]byte, _ time.Time) {
	if !c.clusterOn() {
		return
	}
	c.writeArray(2)
	top := c.srv.cluster.Pushed()
	if top == nil || top.Version < 0 {
		c.writeInt(-1)
		c.writeBulkString("")
		return
	}
	c.writeInt(top.Version)
	c.writeBulkString(top.Text())
}

// CLUSTERX VERSION
func cmdClusterxVersion(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.writeInt(c.srv.cluster.Version())
	}
}

// FollowTopology makes the node what the persisted topology says it is, at
// start (clusternode.Follower.Follow).
func (s *Server) FollowTopology() {
	if s.cluster != nil {
		s.follower.Follow()
	}
}

// CLUSTERX MIGRATE slot destination-id [SYNC]
//
// Moves slot's keys, with their state, to the master destination-id
// (clusternode.Migrator.Migrate). With SYNC the reply comes once the
// destination serves the slot to ASKING clients (or with the error that
// stopped it); without, at once.
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
	done, err := c.srv.migrator.Migrate(slot, string(args[3]))
	if err == nil && sync {
		err = <-done
	}
	if err != nil {
		c.writeError(migrationError(err, slot, args[3]))
		return
	}
	c.writeOK()
}

// CLUSTERX IMPORT slot START source-id | KEY key value | DONE | ABORT
//
// The destination's side of a migration, which only a migrating node sends
// (clusternode.Migrator.StartImport, ImportKey, EndImport, AbortImport):
// START clears what the node holds of the slot, KEY stores a key's state
// (an empty value deletes it), DONE makes the slot served to ASKING
// clients, ABORT forgets it all.
func cmdClusterxImport(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	slot, ok := c.parseSlot(args[2])
	if !ok {
		return
	}
	m := c.srv.migrator
	op := args[3]
	var err error
	switch {
	case equalFold(op, "start") && len(args) == 5:
		err = m.StartImport(slot, string(args[4]))
	case equalFold(op, "key") && len(args) == 6:
		if err = m.ImportKey(slot, args[4], args[5]); err == nil {
			c.changed(args[4])
		}
	case equalFold(op, "done") && len(args) == 4:
		err = m.EndImport(slot)
	case equalFold(op, "abort") && len(args) == 4:
		m.AbortImport(slot)
	default:
		c.writeError(errSyntax)
		return
	}
	if err != nil {
		c.writeError(migrationError(err, slot, nil))
		return
	}
	c.writeOK()
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
