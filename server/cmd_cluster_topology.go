package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/cluster"
)

// The topology as cluster clients read it: CLUSTER NODES, REPLICAS, SLOTS
// and SHARDS, in Redis 7's formats.

// CLUSTER NODES
//
// Redis's format, one line a node:
//
//	<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
//
// The cluster bus port is the port + 10000, as Redis's default, though no
// bus listens: nodes do not gossip. A slot moving out of this node is
// shown as [slot->-<destination id>], one moving in as [slot-<-<source id>].
func cmdClusterNodes(c *client, _ [][]byte, _ time.Time) {
	if !c.clusterOn() {
		return
	}
	top, me := c.srv.cluster.Topology()
	var b strings.Builder
	if top != nil {
		for k := range top.Nodes {
			n := &top.Nodes[k]
			flags := "master"
			if n.IsReplica() {
				flags = "slave"
			}
			if n == me {
				flags = "myself," + flags
			}
			b.WriteString(c.nodeLine(n, flags))
			for _, r := range n.Slots {
				b.WriteString(" " + r.String())
			}
			if n == me {
				for _, m := range c.srv.cluster.Moves() {
					if m.Out {
						b.WriteString(" [" + strconv.Itoa(m.Slot) + "->-" + m.Peer.ID + "]")
					} else {
						b.WriteString(" [" + strconv.Itoa(m.Slot) + "-<-" + m.Peer.ID + "]")
					}
				}
			}
			b.WriteString("\n")
		}
	}
	c.writeVerbatim(b.String())
}

// CLUSTER REPLICAS node-id
// CLUSTER SLAVES node-id
func cmdClusterReplicas(c *client, args [][]byte, _ time.Time) {
	if !c.clusterOn() {
		return
	}
	top, _ := c.srv.cluster.Topology()
	var m *cluster.Node
	if top != nil {
		m = top.Node(string(args[2]))
	}
	if m == nil {
		c.writeError(errUnknownNode(args[2]))
		return
	}
	if m.IsReplica() {
		c.writeError(errNotAMaster)
		return
	}
	reps := top.ReplicasOf(m.ID)
	c.writeArray(len(reps))
	for _, n := range reps {
		c.writeBulkString(c.nodeLine(n, "slave"))
	}
}

// nodeLine is a node's line of CLUSTER NODES (and REPLICAS), up to its
// slots: id, ip:port@cport, flags, master, ping-sent, pong-recv,
// config-epoch, link-state. A node Sentinel finds down is flagged as Redis
// Cluster flags one: fail? while a Sentinel does, fail once a quorum does,
// and its link disconnected.
func (c *client) nodeLine(n *cluster.Node, flags string) string {
	master := "-"
	if n.IsReplica() {
		master = n.MasterID
	}
	link := "connected"
	switch h := c.srv.cluster.Health(n.ID); {
	case h.Down:
		flags, link = flags+",fail", "disconnected"
	case h.Suspect:
		flags, link = flags+",fail?", "disconnected"
	}
	return n.ID + " " + n.IP + ":" + strconv.Itoa(n.Port) + "@" + strconv.Itoa(n.Port+10000) + " " +
		flags + " " + master + " 0 0 " + strconv.FormatInt(c.srv.configEpoch(n), 10) + " " + link
}

// topologyOrNone returns the topology in force, or answers for there being
// none (an error without cluster mode, an empty array before any push) and
// returns nil.
func (c *client) topologyOrNone() *cluster.Topology {
	if !c.clusterOn() {
		return nil
	}
	top, _ := c.srv.cluster.Topology()
	if top == nil {
		c.writeArray(0)
	}
	return top
}

// CLUSTER SLOTS
//
// Redis 7's reply: for each range of slots, its start, its end, its master
// and then its replicas, each as ip, port, id and a map of metadata (empty).
func cmdClusterSlots(c *client, _ [][]byte, _ time.Time) {
	top := c.topologyOrNone()
	if top == nil {
		return
	}
	type block struct {
		r cluster.Range
		m *cluster.Node
	}
	var blocks []block
	for k := range top.Nodes {
		for _, r := range top.Nodes[k].Slots {
			blocks = append(blocks, block{r, &top.Nodes[k]})
		}
	}
	sortBlocks(blocks, func(b block) int { return b.r.From })
	c.writeArray(len(blocks))
	for _, bl := range blocks {
		reps := top.ReplicasOf(bl.m.ID)
		c.writeArray(3 + len(reps))
		c.writeInt(int64(bl.r.From))
		c.writeInt(int64(bl.r.To))
		for _, n := range append([]*cluster.Node{bl.m}, reps...) {
			c.writeArray(4)
			c.writeBulkString(n.IP)
			c.writeInt(int64(n.Port))
			c.writeBulkString(n.ID)
			c.writeMap(0)
		}
	}
}

// CLUSTER SHARDS
//
// Redis 7's reply: one map a master with slots, its slot ranges as pairs of
// integers and its nodes (the master, then its replicas) each a map.
func cmdClusterShards(c *client, _ [][]byte, _ time.Time) {
	top := c.topologyOrNone()
	if top == nil {
		return
	}
	var masters []*cluster.Node
	for k := range top.Nodes {
		if n := &top.Nodes[k]; !n.IsReplica() {
			masters = append(masters, n)
		}
	}
	c.writeArray(len(masters))
	for _, m := range masters {
		c.writeMap(2)
		c.writeBulkString("slots")
		c.writeArray(2 * len(m.Slots))
		for _, r := range m.Slots {
			c.writeInt(int64(r.From))
			c.writeInt(int64(r.To))
		}
		c.writeBulkString("nodes")
		nodes := append([]*cluster.Node{m}, top.ReplicasOf(m.ID)...)
		c.writeArray(len(nodes))
		for _, n := range nodes {
			role := "master"
			if n.IsReplica() {
				role = "replica"
			}
			c.writeMap(7)
			c.writeBulkString("id")
			c.writeBulkString(n.ID)
			c.writeBulkString("port")
			c.writeInt(int64(n.Port))
			c.writeBulkString("ip")
			c.writeBulkString(n.IP)
			c.writeBulkString("endpoint")
			c.writeBulkString(n.IP)
			c.writeBulkString("role")
			c.writeBulkString(role)
			c.writeBulkString("replication-offset")
			c.writeInt(0)
			c.writeBulkString("health")
			c.writeBulkString("online")
		}
	}
}

// sortBlocks sorts by key, ascending (insertion sort: a topology has a
// handful of ranges).
func sortBlocks[T any](s []T, key func(T) int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && key(s[j]) < key(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
