// Package replication makes redcell nodes masters and replicas of each other
// on Redis's own replication protocol (PSYNC, an RDB snapshot, then a stream
// of commands, REPLCONF ACK), so that a real redis-server can be a replica
// of redcell and real Redis Sentinel can drive failover.
//
// What replicates is state, not commands (appendChange): a decision's stored TAT
// as SET key <tat> PXAT <ms>, whatever the replica's clock says. A Node is
// one process's replication: the master side (the feed taken from the store
// into the backlog, the links to its replicas: Node.PSync) and, while it is a
// replica, its link to its master (upstream), whose stream it forwards to
// its own replicas.
package replication

import (
	"time"
)

// What the node reports of itself: ROLE, INFO replication, Sentinel's view.

// Status is what INFO replication and ROLE report.
type Status struct {
	Replica bool
	ReplID  string
	ReplID2 string
	// Offset is master_repl_offset: the stream's end. Offset2 is
	// second_repl_offset, -1 without a previous master.
	Offset, Offset2 int64
	BacklogActive   bool
	BacklogSize     int
	BacklogFirst    int64 // repl_backlog_first_byte_offset
	BacklogLen      int64 // repl_backlog_histlen
	Replicas        []ReplicaStatus
	Priority        int64
	// SyncFull, SyncPartialOK and SyncPartialErr count the PSYNCs this
	// node served as a master, as Redis's INFO stats: answered with a full
	// resynchronization, continued, or asked to continue and refused.
	SyncFull, SyncPartialOK, SyncPartialErr int64

	// While a replica:
	MasterHost string
	MasterPort int
	// LinkUp is master_link_status:up; LinkDownSince when it went down (or
	// the node became a replica); LastIO the last byte from the master.
	LinkUp         bool
	LinkDownSince  time.Time
	LastIO         time.Time
	SyncInProgress bool
	// State is ROLE's: connect, connecting, sync or connected.
	State string
}

// ReplicaStatus is one connected replica, as INFO's slaveN line.
type ReplicaStatus struct {
	IP     string
	Port   int
	State  string // wait_bgsave, send_bulk or online
	Offset int64  // the offset it last acknowledged
	Lag    time.Duration
}

// Offset is the end of the stream this node holds: what it has applied as a
// replica, master_repl_offset as a master.
func (n *Node) Offset() int64 {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	_, end := n.backlog.offsets()
	return end
}

// Status returns the node's replication status at now.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.streamMu.Lock()
	first, end := n.backlog.offsets()
	st := Status{Replica: n.upstream != nil, ReplID: n.replID, ReplID2: n.replID2, Offset: end,
		Offset2: n.offset2, BacklogSize: n.cfg.BacklogSize, BacklogFirst: first + 1,
		BacklogLen: end - first, Priority: n.priority.Load(),
		SyncFull: n.syncFull.Load(), SyncPartialOK: n.syncPartialOK.Load(), SyncPartialErr: n.syncPartialErr.Load()}
	n.streamMu.Unlock()
	st.BacklogActive = n.backlog.active()
	if st.ReplID2 == "" {
		st.ReplID2 = "0000000000000000000000000000000000000000"
	}
	if !st.BacklogActive {
		st.BacklogFirst, st.BacklogLen = 0, 0
	}
	now := n.cfg.Now()
	for l := range n.links {
		st.Replicas = append(st.Replicas, l.status(now))
	}
	sortReplicas(st.Replicas)
	if u := n.upstream; u != nil {
		u.fill(&st)
	}
	return st
}
