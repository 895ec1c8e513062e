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
	"context"
	"time"
)

// min-replicas-to-write: a master that counts its good replicas, and refuses
// writes (RefuseFewReplicas) while too few acknowledge within the lag.

// SetMinReplicas sets min-replicas-to-write and min-replicas-max-lag
// (CONFIG SET), and at once whether writes are refused by them.
func (n *Node) SetMinReplicas(count int, maxLag time.Duration) {
	n.minReplicas.Store(int64(count))
	n.minLag.Store(int64(maxLag))
	n.RefreshGoodReplicas()
}

// MinReplicas returns min-replicas-to-write and min-replicas-max-lag.
func (n *Node) MinReplicas() (count int, maxLag time.Duration) {
	return int(n.minReplicas.Load()), time.Duration(n.minLag.Load())
}

// GoodReplicas is how many replicas were good at the last
// RefreshGoodReplicas: INFO's min_slaves_good_slaves.
func (n *Node) GoodReplicas() int { return int(n.goodReplicas.Load()) }

// RefreshGoodReplicas counts the replicas online whose last
// acknowledgement is at most min-replicas-max-lag old, now, and sets
// RefuseFewReplicas from the count, as Redis's refreshGoodSlavesCount; it
// runs on every change of the settings, of the role and of the links, on
// every acknowledgement, and every WatchReplicasInterval
// (WatchGoodReplicas), so that a replica gone silent counts as gone within
// the lag and that interval.
func (n *Node) RefreshGoodReplicas() {
	want, lag := n.minReplicas.Load(), time.Duration(n.minLag.Load())
	if want <= 0 || lag <= 0 {
		n.goodReplicas.Store(0)
		n.refusing.And(^RefuseFewReplicas)
		return
	}
	now := n.cfg.Now().UnixNano()
	n.mu.Lock()
	good := int64(0)
	for l := range n.links {
		if l.state.Load() == "online" && time.Duration(now-l.ackedAt.Load()) <= lag {
			good++
		}
	}
	replica := n.upstream != nil
	n.mu.Unlock()
	n.goodReplicas.Store(good)
	if !replica && good < want {
		n.refusing.Or(RefuseFewReplicas)
	} else {
		n.refusing.And(^RefuseFewReplicas)
	}
}

// WatchGoodReplicas runs RefreshGoodReplicas every WatchReplicasInterval
// until ctx ends.
func (n *Node) WatchGoodReplicas(ctx context.Context) {
	t := time.NewTicker(WatchReplicasInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.RefreshGoodReplicas()
		}
	}
}
