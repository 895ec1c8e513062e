package clusternode

// Replication is the node's replication, as following a topology drives
// it: *replication.Node (server asserts it, as it wires the two).
type Replication interface {
	// ReplicaOf makes the node a replica of host:port, or a master for
	// host "".
	ReplicaOf(host string, port int) (already bool, err error)
	// IsReplica reports whether the node is a replica now.
	IsReplica() bool
	// Offset is the end of the replication stream the node holds: what it
	// has applied, as a replica.
	Offset() int64
}

// Follower makes the node what the topology in force (Config.State) says
// it is, each time a topology is set and at start: a replica of its
// master, or a master; and it ends the moves the topology concludes
// (dropping a slot given away). It is safe for concurrent use.
type Follower struct {
	cfg      Config
	migrator *Migrator
}

// NewFollower returns a Follower of cfg.State, whose moves m runs.
func NewFollower(cfg Config, m *Migrator) *Follower {
	return &Follower{cfg: cfg.withDefaults(), migrator: m}
}

// Follow makes the node what the topology in force says: a replica of its
// master, or a master; and drops the keys of slots that moved away from it
// (their state lives on the new owner now). It does nothing before the
// node has a topology it is in.
func (f *Follower) Follow() {
	top, me := f.cfg.State.Topology()
	if top == nil || me == nil {
		return
	}
	if r := f.cfg.Replication; r != nil {
		if me.IsReplica() {
			if m := top.Node(me.MasterID); m != nil {
				if _, err := r.ReplicaOf(m.IP, m.Port); err != nil {
					f.cfg.Logger.Error("cluster: following the topology's master", "err", err)
				}
			}
		} else if r.IsReplica() {
			if _, err := r.ReplicaOf("", 0); err != nil {
				f.cfg.Logger.Error("cluster: becoming the topology's master", "err", err)
			}
		}
	}
	f.migrator.settle(top)
	if !me.IsReplica() && !f.cfg.State.Held() {
		f.migrator.dropStrays(top, me)
	}
}

// Promote records that master, a node of this node's shard, is the shard's
// master now (itself for REPLICAOF NO ONE), as Sentinel's REPLICAOF says
// during a failover before Sentinel reports it (cluster.State.Promote), and
// makes the node follow it: a replica of it, or the master.
func (f *Follower) Promote(master string) error {
	if _, err := f.cfg.State.Promote(master); err != nil {
		return err
	}
	f.Follow()
	return nil
}
