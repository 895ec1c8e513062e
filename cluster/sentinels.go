package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// With Sentinels (State.SetSentinels), Sentinel decides each shard's master:
// the topology in force is the one pushed with each shard's master replaced
// by the one Sentinel names at the highest epoch heard (State.SetMaster).
// Here are the Sentinels, the hold of a node restarted until it hears them,
// and the failovers and health they report.

// Sentinels returns the Sentinels that decide this cluster's failovers
// (host:port), none when the operator decides. The slice is the State's:
// read it only.
func (s *State) Sentinels() []string { return s.view.Load().sentinels }

// SetSentinels sets the Sentinels that decide this cluster's failovers
// (CLUSTERX SETSENTINELS), none to leave failovers to the operator. It is
// persisted: a node restarted with Sentinels is held until it hears them.
func (s *State) SetSentinels(addrs []string) error {
	return s.change(func(v *view) error {
		v.sentinels = slices.Clone(addrs)
		if len(addrs) == 0 {
			v.held = false // no one to wait for: the operator decides now
		}
		return nil
	})
}

// Held reports whether this node waits to hear its Sentinels before
// serving any slot as master.
func (s *State) Held() bool { return s.view.Load().held }

// Release ends the hold: the Sentinels have been heard, and the topology in
// force has every failover they reported.
func (s *State) Release() {
	_ = s.change(func(v *view) error {
		v.held = false
		return nil
	})
}

// SetMaster records Sentinel's report that master is its shard's master at
// epoch, and reports whether the topology in force changed. A report older
// than the one recorded for the shard changes nothing, nor does one of the
// same epoch naming another master: Sentinel makes one failover an epoch, so
// such a report is the old master's, heard from a Sentinel that has not
// learnt of the failover yet (or while a promotion this node was told of
// awaits Sentinel's word).
func (s *State) SetMaster(master string, epoch int64) (changed bool, err error) {
	err = s.change(func(v *view) error {
		if v.base == nil {
			return ErrNoTopology
		}
		shard := v.base.ShardOf(master)
		if shard == nil {
			return fmt.Errorf("cluster: Sentinel's master %s is not in the topology", master)
		}
		cur, ok := v.failovers[shard.ID]
		switch {
		case !ok && master == shard.ID && epoch == 0:
			return errUnchanged
		case ok && epoch < cur.Epoch:
			return errUnchanged
		case ok && epoch == cur.Epoch && (master != cur.Master || !cur.Pending):
			// One failover an epoch: the master first recorded at it
			// stands (a promotion told of stands against the old master).
			return errUnchanged
		}
		changed = !ok && master != shard.ID || ok && master != cur.Master
		v.failovers = maps.Clone(v.failovers)
		if v.failovers == nil {
			v.failovers = map[string]Failover{}
		}
		v.failovers[shard.ID] = Failover{Master: master, Epoch: epoch}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return changed, err
}

// Promote records that this node was made its shard's master, or that its
// shard's master is now master (REPLICAOF, as Sentinel sends it during a
// failover), before Sentinel reports it: a pending failover at the shard's
// epoch, which Sentinel's next report of a later epoch confirms or replaces.
// It reports whether the topology in force changed.
func (s *State) Promote(master string) (changed bool, err error) {
	err = s.change(func(v *view) error {
		if v.base == nil {
			return ErrNoTopology
		}
		shard := v.base.ShardOf(master)
		if shard == nil {
			return fmt.Errorf("cluster: %s is not in the topology", master)
		}
		cur := v.failovers[shard.ID]
		if cur.Master == "" {
			cur.Master = shard.ID
		}
		if cur.Master == master {
			return errUnchanged
		}
		changed = true
		v.failovers = maps.Clone(v.failovers)
		if v.failovers == nil {
			v.failovers = map[string]Failover{}
		}
		reported := cur.Master
		if cur.Pending {
			reported = cur.Reported
		}
		v.failovers[shard.ID] = Failover{Master: master, Epoch: cur.Epoch, Pending: true, Reported: reported}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return changed, err
}

// SetHealth records each node's condition as Sentinel reports it.
func (s *State) SetHealth(h map[string]Health) { s.health.Store(&h) }

// Health returns node id's condition as Sentinel last reported it.
func (s *State) Health(id string) Health {
	if p := s.health.Load(); p != nil {
		return (*p)[id]
	}
	return Health{}
}
