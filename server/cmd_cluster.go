package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/clusternode"
	"github.com/redcell/redcell/gcra"
)

// Redis Cluster, as kvrocks and Dragonfly serve it: no gossip; an operator
// pushes the whole topology to every node (CLUSTERX SETNODES, package
// cluster), and each node answers cluster clients from it: CLUSTER SLOTS,
// SHARDS, NODES, INFO, ..., MOVED and ASK for keys it does not serve here
// (route, run by dispatch before every keyed command), CROSSSLOT for keys of
// several slots in one command or transaction.

// clusterFamily is CLUSTER, CLUSTERX, READONLY, READWRITE and ASKING, for
// the command table (newCommandTable).
func clusterFamily() []*command {
	sub := func(name string, arity int, flags []string, summary string, run func(c *client, args [][]byte, now time.Time)) *command {
		return &command{name: name, arity: arity, flags: flags, acl: []string{"@slow"}, group: "cluster", since: "3.0.0",
			complexity: "O(N) where N is the total number of cluster nodes", summary: summary, run: run}
	}
	stale := []string{"loading", "stale"}
	admin := []string{"admin", "stale", "no_async_loading"}
	// CLUSTER REPLICAS and SLAVES are admin commands in Redis 7.
	adminStale := []string{"admin", "stale"}
	return []*command{
		{name: "cluster", arity: -2, flags: []string{}, acl: []string{"@slow"}, group: "cluster", since: "3.0.0",
			complexity: "Depends on subcommand.", summary: "A container for Redis Cluster commands.",
			subcommands: []*command{
				sub("cluster|countkeysinslot", 3, stale, "Returns the number of keys in a hash slot.", cmdClusterCountKeys),
				sub("cluster|failover", -2, admin, "Forces a replica to perform a manual failover of its master.", cmdClusterFailover),
				sub("cluster|getkeysinslot", 4, stale, "Returns the key names in a hash slot.", cmdClusterGetKeys),
				withGroup(helpSubcommand("cluster", "5.0.0", clusterHelp), "cluster"),
				sub("cluster|info", 2, stale, "Returns information about the state of a node.", cmdClusterInfo),
				sub("cluster|keyslot", 3, stale, "Returns the hash slot for a key.", cmdClusterKeySlot),
				sub("cluster|myid", 2, stale, "Returns the ID of a node.", cmdClusterMyID),
				sub("cluster|nodes", 2, stale, "Returns the cluster configuration for a node.", cmdClusterNodes),
				sub("cluster|replicas", 3, adminStale, "Lists the replica nodes of a master node.", cmdClusterReplicas),
				sub("cluster|shards", 2, stale, "Returns the mapping of cluster slots to shards.", cmdClusterShards),
				sub("cluster|slaves", 3, adminStale, "Lists the replica nodes of a master node.", cmdClusterReplicas),
				sub("cluster|slots", 2, stale, "Returns the mapping of cluster slots to nodes.", cmdClusterSlots),
			}},
		{name: "clusterx", arity: -2, flags: []string{"admin"}, acl: []string{"@admin", "@slow", "@dangerous"}, group: "cluster", since: "0.1.0",
			complexity: "Depends on subcommand.", summary: "kvrocks's commands for a topology pushed by an operator.",
			subcommands: []*command{
				sub("clusterx|import", -4, admin, "Receives a slot's keys from the node migrating it here.", cmdClusterxImport),
				sub("clusterx|migrate", -4, admin, "Moves a slot's keys, with their state, to another master.", cmdClusterxMigrate),
				sub("clusterx|setnodeid", 3, admin, "Sets this node's ID.", cmdClusterxSetNodeID),
				sub("clusterx|sentinels", 2, adminStale, "Returns the Sentinels that decide the cluster's failovers.", cmdClusterxSentinels),
				sub("clusterx|setnodes", -4, admin, "Sets the whole topology, at a version newer than the current one's.", cmdClusterxSetNodes),
				sub("clusterx|setsentinels", -2, admin, "Sets the Sentinels that decide the cluster's failovers.", cmdClusterxSetSentinels),
				sub("clusterx|setslot", 6, admin, "Gives one slot to a node, at the next version.", cmdClusterxSetSlot),
				sub("clusterx|topology", 2, adminStale, "Returns the topology as pushed, and its version.", cmdClusterxTopology),
				sub("clusterx|version", 2, adminStale, "Returns the topology's version.", cmdClusterxVersion),
			}},
		{name: "readonly", arity: 1, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast", "@connection"}, group: "cluster", since: "3.0.0",
			complexity: "O(1)", summary: "Enables read-only queries for a connection to a Redis Cluster replica node.", run: cmdReadOnly},
		{name: "readwrite", arity: 1, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast", "@connection"}, group: "cluster", since: "3.0.0",
			complexity: "O(1)", summary: "Enables read-write queries for a connection to a Reids Cluster replica node.", run: cmdReadWrite},
		{name: "asking", arity: 1, flags: []string{"fast"}, acl: []string{"@fast", "@connection"}, group: "cluster", since: "3.0.0",
			complexity: "O(1)", summary: "Signals that a cluster client is following an -ASK redirect.", run: cmdAsking},
	}
}

var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"The topology is set with CLUSTERX SETNODES (docs/cluster.md).",
}

// clusterOn answers the error of a server without cluster mode and reports
// false.
func (c *client) clusterOn() bool {
	if c.srv.cluster == nil {
		c.writeError(errClusterDisabled)
		return false
	}
	return true
}

// slotsOn is clusterOn for a subcommand that reads or moves a slot's keys
// itself, under their shards' locks: not inside EXEC, whose transaction may
// hold them already.
func (c *client) slotsOn() bool {
	if !c.clusterOn() {
		return false
	}
	if c.inExec() {
		c.writeError(errSlotsInExec)
		return false
	}
	return true
}

func withGroup(cmd *command, group string) *command {
	cmd.group = group
	return cmd
}

// READONLY
func cmdReadOnly(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.cluster.readOnly = true
		c.writeOK()
	}
}

// READWRITE
func cmdReadWrite(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.cluster.readOnly = false
		c.writeOK()
	}
}

// ASKING
func cmdAsking(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.cluster.asking = true
		c.writeOK()
	}
}

// CLUSTER KEYSLOT key
func cmdClusterKeySlot(c *client, args [][]byte, _ time.Time) {
	c.writeInt(int64(cluster.Slot(args[2])))
}

// CLUSTER MYID
// CLUSTER FAILOVER [FORCE|TAKEOVER]
//
// A planned switch of this replica's shard to it (clusternode.Follower.
// Failover): answered at once, as Redis answers it, the switch following.
func cmdClusterFailover(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	mode := clusternode.FailoverDefault
	switch {
	case len(args) == 2:
	case len(args) == 3 && equalFold(args[2], "force"):
		mode = clusternode.FailoverForce
	case len(args) == 3 && equalFold(args[2], "takeover"):
		mode = clusternode.FailoverTakeover
	default:
		c.writeError(errSyntax)
		return
	}
	if err := c.srv.follower.Failover(mode); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.cfg.Logger.Info("CLUSTER FAILOVER: switching this replica's shard to it", "mode", string(args[len(args)-1]), "client", c.ident.addr)
	c.writeOK()
}

func cmdClusterMyID(c *client, _ [][]byte, _ time.Time) {
	if c.clusterOn() {
		c.writeBulkString(c.srv.cluster.MyID())
	}
}

// parseSlot parses a slot argument, answering Redis's error if it is not
// one.
func (c *client) parseSlot(b []byte) (int, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 || n >= cluster.Slots {
		c.writeError(errInvalidSlot)
		return 0, false
	}
	return int(n), true
}

// CLUSTER COUNTKEYSINSLOT slot
func cmdClusterCountKeys(c *client, args [][]byte, _ time.Time) {
	if !c.slotsOn() {
		return
	}
	if slot, ok := c.parseSlot(args[2]); ok {
		c.writeInt(int64(c.srv.store.CountInSlot(slot)))
	}
}

// CLUSTER GETKEYSINSLOT slot count
func cmdClusterGetKeys(c *client, args [][]byte, now time.Time) {
	if !c.slotsOn() {
		return
	}
	slot, ok := c.parseSlot(args[2])
	if !ok {
		return
	}
	count, ok := parseInt(args[3])
	if !ok || count < 0 {
		c.writeError(errInvalidKeyCount)
		return
	}
	mark := c.conn.DeferArray()
	n := 0
	c.srv.store.KeysInSlot(slot, int(min(count, 1<<20)), gcra.InstantOf(now), func(k []byte) {
		c.writeBulk(k)
		n++
	})
	c.conn.SetDeferredArray(mark, n)
}

// CLUSTER INFO
//
// Redis's fields, where the failovers Sentinel decides tell the truth about
// a master that does not answer: its slots are pfail while a Sentinel finds
// it down and fail once a quorum does, and the state is fail while a slot is
// unserved or failed, or while this node waits to hear its Sentinels. The
// epochs are Sentinel's (config-epoch in CLUSTER NODES); without Sentinels,
// the topology's version, as before. redcell adds where the topology comes
// from (clusterFacts).
func cmdClusterInfo(c *client, _ [][]byte, _ time.Time) {
	if !c.clusterOn() {
		return
	}
	f := c.srv.clusterFacts()
	i, i64 := strconv.Itoa, func(n int64) string { return strconv.FormatInt(n, 10) }
	var b strings.Builder
	for _, kv := range append([][2]string{
		{"cluster_state", f.state},
		{"cluster_slots_assigned", i(f.assigned)},
		{"cluster_slots_ok", i(f.assigned - f.pfail - f.fail)},
		{"cluster_slots_pfail", i(f.pfail)},
		{"cluster_slots_fail", i(f.fail)},
		{"cluster_known_nodes", i(f.known)},
		{"cluster_size", i(f.size)},
		{"cluster_current_epoch", i64(f.currentEpoch)},
		{"cluster_my_epoch", i64(f.myEpoch)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	}, f.redcell()...) {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	c.writeVerbatim(b.String())
}

// clusterFacts is what CLUSTER INFO, INFO's Cluster section and the metrics
// say of the cluster, as this node sees it.
type clusterFacts struct {
	state                              string
	assigned, pfail, fail, known, size int
	currentEpoch, myEpoch, version     int64
	sentinels, reachable               int
	held                               bool
}

func (s *Server) clusterFacts() clusterFacts {
	st := s.cluster
	top, me := st.Topology()
	f := clusterFacts{state: "fail", version: st.Version(), held: st.Held()}
	if top != nil {
		f.assigned, f.known = top.Assigned(), len(top.Nodes)
		for k := range top.Nodes {
			n := &top.Nodes[k]
			f.currentEpoch = max(f.currentEpoch, s.configEpoch(n))
			if len(n.Slots) == 0 {
				continue
			}
			f.size++
			slots := 0
			for _, r := range n.Slots {
				slots += r.To - r.From + 1
			}
			switch h := st.Health(n.ID); {
			case h.Down:
				f.fail += slots
			case h.Suspect:
				f.pfail += slots
			}
		}
		if me != nil {
			f.myEpoch = s.configEpoch(me)
		}
		if me != nil && f.assigned == cluster.Slots && f.fail == 0 && !f.held {
			f.state = "ok"
		}
	}
	addrs, up := s.sentinels.Sentinels()
	f.sentinels = len(addrs)
	for _, u := range up {
		if u {
			f.reachable++
		}
	}
	return f
}

// redcell is the fields redcell adds to CLUSTER INFO and INFO's Cluster
// section: the topology's version (the operator's pushes), who decides
// failovers (operator or sentinel), the Sentinels and how many answer, and
// whether this node still waits to hear them.
func (f clusterFacts) redcell() [][2]string {
	decides := "operator"
	if f.sentinels > 0 {
		decides = "sentinel"
	}
	return [][2]string{
		{"cluster_topology_version", strconv.FormatInt(f.version, 10)},
		{"cluster_failovers_decided_by", decides},
		{"cluster_sentinels", strconv.Itoa(f.sentinels)},
		{"cluster_sentinels_reachable", strconv.Itoa(f.reachable)},
		{"cluster_waiting_for_sentinels", boolInt(f.held)},
	}
}

// configEpoch is node n's config epoch for CLUSTER NODES and INFO: its
// shard's epoch as Sentinel reported it when Sentinels decide failovers,
// else the topology's version (every push orders the whole topology).
func (s *Server) configEpoch(n *cluster.Node) int64 {
	st := s.cluster
	if len(st.Sentinels()) > 0 {
		return st.Epoch(n.ID)
	}
	return max(st.Version(), 0)
}

func boolInt(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// clusterEnabledParam is CONFIG GET cluster-enabled.
func (s *Server) clusterEnabledParam() string {
	if s.cluster != nil {
		return "yes"
	}
	return "no"
}
