package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// State is one node's view of the cluster: its ID, the topology pushed
// last, each shard's master as Redis Sentinel last said (a failover), and
// the slots moving to or from it. Route, on every keyed command, costs two
// atomic loads and a slot lookup. It is safe for concurrent use.
//
// With Sentinels (SetSentinels), Sentinel decides each shard's master: the
// topology in force is the one pushed with each shard's master replaced by
// the one Sentinel names at the highest epoch heard (SetMaster), every node
// deriving the same from the same reports. A node that starts with
// Sentinels is held (Held) until it has heard them (Release): it serves no
// slot as master before it knows it still owns it.
type State struct {
	mu   sync.Mutex // serializes changes; readers load the pointers
	path string     // where the state persists; "" for none

	view atomic.Pointer[view]
	// moves holds the slots moving out of or into this node; nil when
	// none does, which Route checks first.
	moves atomic.Pointer[map[int]*Move]
	// health is each node's condition as Sentinel reports it, for CLUSTER
	// NODES and INFO; nil before any report.
	health atomic.Pointer[map[string]Health]
}

// view is a topology as this node sees it: immutable.
type view struct {
	myID string
	// base is the topology as pushed (CLUSTERX SETNODES, SETSLOT); top is
	// the one in force: base with failovers applied.
	base, top *Topology
	me        int // index of this node in top.Nodes, -1 when it is not in it
	// held: Sentinels are set and not heard since the start; this node
	// serves no slot as master meanwhile.
	held      bool
	sentinels []string
	// failovers are the shards' masters as Sentinel named them, by the
	// base master of the shard.
	failovers map[string]Failover
}

// Failover is a shard's master as Sentinel named it: Master at Epoch,
// Sentinel's config epoch for the shard. Pending is a promotion this node
// was told of directly (REPLICAOF, which Sentinel sends) and Sentinel has
// yet to report: it stands against reports of the epoch it was made at,
// and Reported is the master Sentinel last reported at that epoch (what is
// persisted, since the promotion is not Sentinel's word yet).
type Failover struct {
	Master   string
	Epoch    int64
	Pending  bool
	Reported string
}

// Health is a node's condition as Sentinel reports it: Suspect when one
// Sentinel finds it down (s_down), Down when a quorum does (o_down).
type Health struct{ Suspect, Down bool }

// derive returns v with top computed from base and the failovers that
// apply to it (a failover whose master is no longer in the base is
// dropped).
func (v view) derive() *view {
	v.top = v.base
	if v.base != nil && len(v.failovers) > 0 {
		fs := make(map[string]Failover, len(v.failovers))
		for _, f := range v.failovers {
			shard := v.base.ShardOf(f.Master)
			if shard == nil {
				continue
			}
			if prev, ok := fs[shard.ID]; ok && prev.Epoch > f.Epoch {
				continue
			}
			fs[shard.ID] = f
			if t, err := v.top.WithMaster(f.Master); err == nil {
				v.top = t
			}
		}
		v.failovers = fs
	}
	v.me = indexOf(v.top, v.myID)
	return &v
}

// Persistence errors and refusals of a push.
var (
	ErrStaleVersion = errors.New("cluster: the version is not newer than the topology's")
	ErrNoNodeID     = errors.New("cluster: this node has no ID yet")
	ErrNoTopology   = errors.New("cluster: no topology yet")
)

// NewState returns the state persisted in dir (nodes.conf), or a fresh one
// with a random ID and no topology when there is none; dir "" persists
// nothing. With emulated, a node that has no topology serves every slot at
// ip:port as if alone in a cluster.
func NewState(dir string, emulated bool, ip string, port int) (*State, error) {
	s := &State{}
	if dir != "" {
		s.path = filepath.Join(dir, "nodes.conf")
	}
	v := view{me: -1}
	var f saved
	if s.path != "" {
		var err error
		if f, err = load(s.path); err != nil {
			return nil, err
		}
		v.myID, v.base, v.sentinels, v.failovers = f.id, f.top, f.sentinels, f.failovers
	}
	if v.myID == "" {
		v.myID = randomID()
	}
	if v.base == nil && emulated {
		v.base = Emulated(v.myID, ip, port)
	}
	v.held = len(v.sentinels) > 0
	nv := v.derive()
	s.view.Store(nv)
	s.restoreMoves(nv, f.moves)
	return s, nil
}

// restoreMoves records the moves saved handed (State.Hand) in their Asking
// phase, each with its peer as the topology in force has it. One whose
// peer the topology no longer has, or whose slot moves twice, is dropped:
// a push that removed the peer ended the move.
func (s *State) restoreMoves(v *view, saved []savedMove) {
	if v.top == nil {
		return
	}
	for _, sm := range saved {
		peer := v.top.Node(sm.peer)
		if peer == nil {
			continue
		}
		m := &Move{Slot: sm.slot, Peer: *peer, Out: sm.out}
		m.Phase.Store(Asking)
		_ = s.StartMove(m) // a slot named twice: the first stands
	}
}

func randomID() string {
	var b [IDLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func indexOf(t *Topology, id string) int {
	if t == nil {
		return -1
	}
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return i
		}
	}
	return -1
}

// MyID is this node's ID.
func (s *State) MyID() string { return s.view.Load().myID }

// Topology returns the topology in force (the one pushed, with the
// failovers Sentinel reported), nil before the first push (and outside
// emulated mode), and this node's place in it (nil if it is not in it).
func (s *State) Topology() (*Topology, *Node) {
	v := s.view.Load()
	if v.top == nil || v.me < 0 {
		return v.top, nil
	}
	return v.top, &v.top.Nodes[v.me]
}

// Pushed returns the topology as pushed, without the failovers.
func (s *State) Pushed() *Topology { return s.view.Load().base }

// Version is the topology's version, -1 before any push. A failover does
// not change it: the pushes are the operator's, ordered by their versions,
// and failovers Sentinel's, ordered by their epochs (Epoch).
func (s *State) Version() int64 {
	if t := s.view.Load().base; t != nil {
		return t.Version
	}
	return -1
}

// Epoch is the config epoch of the shard of node id as Sentinel reported
// it: 0 when none was (the shard never failed over since Sentinel began
// watching it).
func (s *State) Epoch(id string) int64 {
	v := s.view.Load()
	if v.base == nil {
		return 0
	}
	if shard := v.base.ShardOf(id); shard != nil {
		return v.failovers[shard.ID].Epoch
	}
	return 0
}

// CurrentEpoch is the highest epoch of any shard.
func (s *State) CurrentEpoch() int64 {
	var e int64
	for _, f := range s.view.Load().failovers {
		e = max(e, f.Epoch)
	}
	return e
}

// Failovers returns the shards' masters as Sentinel named them, by the
// pushed master of each shard. The map is the State's: read it only.
func (s *State) Failovers() map[string]Failover { return s.view.Load().failovers }

// errUnchanged ends a change that changes nothing: nothing is saved.
var errUnchanged = errors.New("unchanged")

// change applies fn to a copy of the view under the lock, derives the
// topology in force, persists it and makes it the view.
func (s *State) change(fn func(v *view) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := *s.view.Load()
	if err := fn(&v); err != nil {
		return err
	}
	nv := v.derive()
	if err := s.save(nv, nil); err != nil {
		return err
	}
	s.view.Store(nv)
	return nil
}

// SetNodeID sets this node's ID (CLUSTERX SETNODEID).
func (s *State) SetNodeID(id string) error {
	if len(id) != IDLen || !isHex(id) {
		return ErrNodeID
	}
	return s.change(func(v *view) error {
		v.myID = id
		return nil
	})
}

// SetTopology makes t the topology pushed, unless its version is not newer
// than the current one's and force is false (CLUSTERX SETNODES). It is
// persisted first: a node restarted serves the same slots. The failovers
// Sentinel reported still apply to the shards whose masters t lists.
func (s *State) SetTopology(t *Topology, force bool) error {
	return s.change(func(v *view) error {
		if !force && v.base != nil && t.Version <= v.base.Version {
			return fmt.Errorf("%w: %d <= %d", ErrStaleVersion, t.Version, v.base.Version)
		}
		v.base = t
		return nil
	})
}

// SetSlot gives slot to the shard of node id at version, which must be the
// topology's next (CLUSTERX SETSLOT, how a migration's end is pushed to
// every node): the topology pushed with that one slot changed, persisted as
// SetTopology's is. id may be the shard's master by a failover.
func (s *State) SetSlot(slot int, id string, version int64) error {
	err := s.change(func(v *view) error {
		if v.base == nil {
			return ErrNoTopology
		}
		if shard := v.base.ShardOf(id); shard != nil && v.failovers[shard.ID].Master == id {
			id = shard.ID
		}
		if version == v.base.Version {
			// The node may hold this version already, from a peer
			// (catch-up) before the push reached it: the same change
			// is taken, a different one is not.
			if o := v.base.Owner(slot); o != nil && o.ID == id {
				return errSlotHeld
			}
		}
		if version != v.base.Version+1 {
			return ErrStaleVersion
		}
		t, err := v.base.WithSlot(slot, id, version)
		if err != nil {
			return err
		}
		v.base = t
		return nil
	})
	if err == errSlotHeld {
		return nil
	}
	return err
}
