package server

import (
	"net"
	"strconv"
	"time"

	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/storage"
)

// Replication's commands, as a Redis master and replica answer them:
// REPLICAOF (and SLAVEOF), ROLE, WAIT, and what a replica sends its master
// (REPLCONF, PSYNC, SYNC). The protocol itself is package replication's;
// this file hands it the connections and reports its state.

// replicationFamily is the replication commands, for the command table
// (newCommandTable).
func replicationFamily() []*command {
	replicaof := func(name, since string) *command {
		return &command{name: name, arity: 3, flags: []string{"admin", "noscript", "stale", "no_async_loading"},
			acl: []string{"@admin", "@slow", "@dangerous"}, group: "server", since: since, complexity: "O(1)",
			summary: "Configures a server as replica of another, or promotes it to a master.", run: cmdReplicaOf}
	}
	return []*command{
		replicaof("replicaof", "5.0.0"),
		replicaof("slaveof", "1.0.0"),
		{name: "role", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, acl: []string{"@admin", "@fast", "@dangerous"},
			group: "server", since: "2.8.12", complexity: "O(1)", summary: "Returns the replication role.", run: cmdRole},
		{name: "wait", arity: 3, flags: []string{"noscript"}, acl: []string{"@slow", "@connection"}, offLoop: true,
			tips:  []string{"request_policy:all_shards", "response_policy:agg_min"},
			group: "generic", since: "3.0.0", complexity: "O(1)",
			summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", run: cmdWait},
		{name: "replconf", arity: -1, flags: []string{"admin", "noscript", "loading", "stale", "allow_busy"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "3.0.0", complexity: "O(1)", summary: "An internal command for configuring the replication stream.", run: cmdReplconf},
		{name: "failover", arity: -1, maxArgs: 7, flags: []string{"admin", "noscript", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "6.2.0", complexity: "O(1)", summary: "Starts a coordinated failover from a server to one of its replicas.", run: cmdFailover},
		{name: "psync", arity: -3, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "2.8.0", complexity: "O(1)", summary: "An internal command used in replication.", run: cmdPsync},
		{name: "sync", arity: 1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "An internal command used in replication.", run: cmdPsync},
	}
}

// REPLICAOF host port | NO ONE
// SLAVEOF host port | NO ONE
//
// As in Redis, the reply comes at once and the link connects in the
// background; pointing a replica at its own master again is "+OK Already
// connected to specified master".
func cmdReplicaOf(c *client, args [][]byte, _ time.Time) {
	if c.srv.cluster != nil {
		c.replicaOfInCluster(args)
		return
	}
	n := c.srv.repl
	if n == nil {
		c.writeError(errNoReplication)
		return
	}
	if equalFold(args[1], "no") && equalFold(args[2], "one") {
		if _, err := n.ReplicaOf("", 0); err != nil {
			c.writeError(errReplication(err))
			return
		}
		c.srv.cfg.Logger.Info("REPLICAOF NO ONE: this node is a master", "client", c.ident.addr)
		c.writeOK()
		return
	}
	port, ok := parseInt(args[2])
	if !ok || port < 0 || port > 65535 {
		c.writeError(errInvalidMasterPort)
		return
	}
	host := string(args[1])
	already, err := n.ReplicaOf(host, int(port))
	if err != nil {
		c.writeError(errReplication(err))
		return
	}
	if already {
		c.writeSimple("OK Already connected to specified master")
		return
	}
	c.srv.cfg.Logger.Info("REPLICAOF: this node is a replica", "master", net.JoinHostPort(host, strconv.Itoa(int(port))), "client", c.ident.addr)
	c.writeOK()
}

// replicaOfInCluster is REPLICAOF in cluster mode. The topology decides a
// node's role, so as Redis does it is refused, unless Sentinels decide the
// cluster's failovers: then it is how Sentinel promotes a replica and points
// the shard's other nodes at it, and it is taken as a failover of this
// node's shard (clusternode.Follower.Promote) that Sentinel's reports then
// confirm: the node serves, or stops serving, the shard's slots at once.
func (c *client) replicaOfInCluster(args [][]byte) {
	st := c.srv.cluster
	if len(st.Sentinels()) == 0 {
		c.writeError(errReplicaOfInCluster)
		return
	}
	top, me := st.Topology()
	if me == nil {
		c.writeError(errNotInCluster)
		return
	}
	master := me.ID
	if !(equalFold(args[1], "no") && equalFold(args[2], "one")) {
		port, ok := parseInt(args[2])
		if !ok || port < 0 || port > 65535 {
			c.writeError(errInvalidMasterPort)
			return
		}
		n := top.NodeAt(string(args[1]), int(port))
		if n == nil || top.ShardOf(n.ID) != top.ShardOf(me.ID) {
			c.writeError(errReplicaOfNotInShard(args[1], args[2]))
			return
		}
		master = n.ID
	}
	if err := c.srv.follower.Promote(master); err != nil {
		c.writeError(clusterError(err))
		return
	}
	c.srv.cfg.Logger.Info("REPLICAOF in cluster mode: following the shard's master Sentinel chose", "master", master, "client", c.ident.addr)
	c.writeOK()
}

// ROLE
//
// A master: master, its offset, and each replica's ip, port and
// acknowledged offset. A replica: slave, its master's host and port, the
// link's state and the offset it has applied.
func cmdRole(c *client, _ [][]byte, _ time.Time) {
	if c.srv.repl == nil {
		c.writeArray(3)
		c.writeBulkString("master")
		c.writeInt(0)
		c.writeArray(0)
		return
	}
	st := c.srv.repl.Status()
	if st.Replica {
		c.writeArray(5)
		c.writeBulkString("slave")
		c.writeBulkString(st.MasterHost)
		c.writeInt(int64(st.MasterPort))
		c.writeBulkString(st.State)
		// As Redis: the offset of the stream it follows, -1 until the
		// link is up (while it connects or loads a snapshot).
		off := st.Offset
		if !st.LinkUp {
			off = -1
		}
		c.writeInt(off)
		return
	}
	c.writeArray(3)
	c.writeBulkString("master")
	c.writeInt(st.Offset)
	c.writeArray(len(st.Replicas))
	for _, r := range st.Replicas {
		c.writeArray(3)
		c.writeBulkString(r.IP)
		c.writeBulkString(strconv.Itoa(r.Port))
		c.writeBulkString(strconv.FormatInt(r.Offset, 10))
	}
}

// WAIT numreplicas timeout
//
// Blocks until numreplicas replicas have acknowledged every change made
// before it, or timeout milliseconds (0: no limit) pass, and answers how many
// have. It waits off the event loops (offLoop).
func cmdWait(c *client, args [][]byte, _ time.Time) {
	num, ok := parseInt(args[1])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.writeError(errTimeoutInteger)
		return
	}
	if ms < 0 {
		c.writeError(errTimeoutNegative)
		return
	}
	n := c.srv.repl
	if n == nil {
		c.writeInt(0)
		return
	}
	if n.IsReplica() {
		c.writeError(errWaitOnReplica)
		return
	}
	if c.inExec() {
		c.writeInt(int64(n.Wait(int(num), time.Nanosecond, c.conn.Done())))
		return
	}
	c.writeInt(int64(n.Wait(int(num), time.Duration(ms)*time.Millisecond, c.conn.Done())))
}

// REPLCONF option value [option value ...]
//
// What a replica tells its master: listening-port (where Sentinel finds
// it), ip-address, capa, and once it streams, ACK offset, which has no
// reply. GETACK is a master's to send.
func cmdReplconf(c *client, args [][]byte, _ time.Time) {
	if len(args)%2 == 0 {
		c.writeError(errSyntax)
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := args[i], args[i+1]
		switch {
		case equalFold(opt, "ack"):
			off, ok := parseInt(val)
			if c.repl.link != nil && ok {
				c.repl.link.Ack(off)
			}
			return // no reply, as from Redis
		case equalFold(opt, "listening-port"):
			port, ok := parseInt(val)
			if !ok || port < 0 || port > 65535 {
				c.writeError(errInvalidPort)
				return
			}
			c.repl.port = int(port)
		case equalFold(opt, "ip-address"):
			c.repl.ip = string(val)
		case equalFold(opt, "capa"):
			c.repl.eof = c.repl.eof || equalFold(val, "eof")
		case equalFold(opt, "rdb-only"), equalFold(opt, "rdb-filter-only"),
			equalFold(opt, "getack"), equalFold(opt, "rdb-channel"):
		default:
			c.writeError(errUnrecognizedReplconf(opt))
			return
		}
	}
	c.writeOK()
}

// PSYNC replid offset
// SYNC
//
// Hands the connection to the replication master: it answers +FULLRESYNC
// with a snapshot, or +CONTINUE, then streams; the connection keeps reading
// the replica's REPLCONF ACKs, and nothing else is ever written to it but
// the stream.
func cmdPsync(c *client, args [][]byte, _ time.Time) {
	n := c.srv.repl
	switch {
	case n == nil:
		c.writeError(errNoReplication)
		return
	case c.repl.link != nil:
		return // a second PSYNC on a replica's link: ignored, as by Redis
	case c.conn.NetConn() == nil:
		c.writeError(errReplicaNoConn)
		return
	}
	id, off := "", int64(-1) // SYNC
	if len(args) >= 3 {
		id = string(args[1])
		var ok bool
		if off, ok = parseInt(args[2]); !ok {
			off = -1
		}
	}
	if len(args) >= 4 && equalFold(args[3], "failover") {
		// Our master, in FAILOVER, asks us to take over.
		if err := n.TakeOver(id); err != nil {
			c.writeError(errReplication(err))
			return
		}
		c.srv.cfg.Logger.Info("FAILOVER: this node took over as master", "old_master", c.ident.addr)
	}
	if err := c.conn.Flush(); err != nil { // the handshake's replies go first
		return
	}
	ip := c.repl.ip
	if ip == "" {
		ip, _, _ = net.SplitHostPort(c.ident.addr)
	}
	port := c.repl.port
	link, err := n.PSync(c.conn.NetConn(), replication.Replica{IP: ip, Port: port, EOF: c.repl.eof}, id, off)
	if err != nil {
		c.writeError(errReplication(err))
		return
	}
	c.repl.link = link
	c.repl.linked.Store(true)
	c.conn.Mute()
}

// infoReplication is INFO's Replication section with every field Sentinel
// and redis_exporter read, in Redis 7's order.
func (s *Server) infoReplication(_ storage.Keyspace, now time.Time) [][2]string {
	if s.repl == nil {
		return [][2]string{{"role", "master"}, {"connected_slaves", "0"}}
	}
	st := s.repl.Status()
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	var out [][2]string
	if st.Replica {
		linkUp := "down"
		if st.LinkUp {
			linkUp = "up"
		}
		lastIO := int64(-1)
		if !st.LastIO.IsZero() {
			lastIO = int64(now.Sub(st.LastIO) / time.Second)
		}
		sync := "0"
		if st.SyncInProgress {
			sync = "1"
		}
		out = append(out,
			[2]string{"role", "slave"},
			[2]string{"master_host", st.MasterHost},
			[2]string{"master_port", strconv.Itoa(st.MasterPort)},
			[2]string{"master_link_status", linkUp},
			[2]string{"master_last_io_seconds_ago", i(lastIO)},
			[2]string{"master_sync_in_progress", sync},
			[2]string{"slave_read_repl_offset", i(st.Offset)},
			[2]string{"slave_repl_offset", i(st.Offset)})
		if !st.LinkUp {
			out = append(out, [2]string{"master_link_down_since_seconds", i(int64(now.Sub(st.LinkDownSince) / time.Second))})
		}
		out = append(out,
			[2]string{"slave_priority", i(st.Priority)},
			[2]string{"slave_read_only", "1"},
			[2]string{"replica_announced", "1"})
	} else {
		out = append(out, [2]string{"role", "master"})
	}
	out = append(out, [2]string{"connected_slaves", strconv.Itoa(len(st.Replicas))})
	if n, lag := s.repl.MinReplicas(); n > 0 && lag > 0 {
		out = append(out, [2]string{"min_slaves_good_slaves", strconv.Itoa(s.repl.GoodReplicas())})
	}
	for k, r := range st.Replicas {
		out = append(out, [2]string{"slave" + strconv.Itoa(k), "ip=" + r.IP + ",port=" + strconv.Itoa(r.Port) +
			",state=" + r.State + ",offset=" + i(r.Offset) + ",lag=" + i(int64(r.Lag/time.Second))})
	}
	active := "0"
	if st.BacklogActive {
		active = "1"
	}
	return append(out,
		[2]string{"master_failover_state", s.failoverStateName()},
		[2]string{"master_replid", st.ReplID},
		[2]string{"master_replid2", st.ReplID2},
		[2]string{"master_repl_offset", i(st.Offset)},
		[2]string{"second_repl_offset", i(st.Offset2)},
		[2]string{"repl_backlog_active", active},
		[2]string{"repl_backlog_size", strconv.Itoa(st.BacklogSize)},
		[2]string{"repl_backlog_first_byte_offset", i(st.BacklogFirst)},
		[2]string{"repl_backlog_histlen", i(st.BacklogLen)})
}

// replicaStatus is the node's replication status, or a master's without
// replicas when replication is not configured.
func (s *Server) replicaStatus() replication.Status {
	if s.repl == nil {
		return replication.Status{Priority: replication.DefaultReplicaPriority, BacklogSize: replication.DefaultBacklogSize,
			ReplID: zeroReplID, ReplID2: zeroReplID, Offset2: -1}
	}
	return s.repl.Status()
}

// zeroReplID is a stream id of no stream, as Redis shows master_replid2
// without a previous master.
const zeroReplID = "0000000000000000000000000000000000000000"

// replicaOfParam is CONFIG GET replicaof: "host port", or empty for a
// master.
func (s *Server) replicaOfParam() string {
	if st := s.replicaStatus(); st.Replica {
		return st.MasterHost + " " + strconv.Itoa(st.MasterPort)
	}
	return ""
}
