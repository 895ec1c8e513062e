package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redcell/redcell/internal/atomicfile"
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

// Move is a slot moving between this node and another: Out of this node (a
// migration it runs) or into it (an import).
type Move struct {
	Slot int
	Peer Node // the other node
	Out  bool
	// Phase says how far it went; Route reads it. Freeze and Thaw enter and
	// leave Frozen.
	Phase atomic.Int32

	mu     sync.Mutex
	thawed chan struct{} // closed as the Frozen phase ends
}

// Freeze enters the Frozen phase.
func (m *Move) Freeze() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.thawed = make(chan struct{})
	m.Phase.Store(Frozen)
}

// Thaw leaves the Frozen phase for phase, waking those that wait for it
// (Thawed).
func (m *Move) Thaw(phase int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Phase.Store(phase)
	if m.thawed != nil {
		close(m.thawed)
		m.thawed = nil
	}
}

// Thawed returns a channel closed once the move is not Frozen: at once
// when it is not.
func (m *Move) Thawed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.thawed == nil {
		return closed
	}
	return m.thawed
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Phases of a Move out of this node.
const (
	// Copying: the slot is served here while its keys are copied over.
	Copying = iota
	// Frozen: its last state is being copied; clients are told to retry.
	Frozen
	// Asking: the destination holds the slot's state and serves it to
	// clients that send ASKING; the topology that gives it the slot is
	// yet to come.
	Asking
)

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
	if s.path != "" {
		f, err := load(s.path)
		if err != nil {
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
	s.view.Store(v.derive())
	return s, nil
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
	if err := s.save(nv); err != nil {
		return err
	}
	s.view.Store(nv)
	return nil
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

// errSlotHeld is SetSlot's change already made: nothing to save.
var errSlotHeld = errors.New("cluster: the slot's change is held already")

// Route is where a command on slot must go.
type Route uint8

// Routes.
const (
	Local     Route = iota // run it here
	Moved                  // -MOVED slot ip:port (Node)
	Ask                    // -ASK slot ip:port (Node): the slot is moving there
	TryAgain               // -TRYAGAIN: the slot is frozen for a moment
	Unserved               // -CLUSTERDOWN: no node serves the slot
	NotMember              // -CLUSTERDOWN: this node is not in the topology
	Held                   // -CLUSTERDOWN: this node waits to hear its Sentinels
)

// Mine reports whether this node serves slot, with no move of any slot in
// progress: then Route would answer Local whatever the client. It is the
// hot path's whole check: two atomic loads and an index.
func (s *State) Mine(slot int) bool {
	v := s.view.Load()
	return v.top != nil && v.me >= 0 && int(v.top.owner[slot]) == v.me && !v.held && s.moves.Load() == nil
}

// Route says where a command on slot goes. asking: the client sent ASKING
// just before; readOnly: the client sent READONLY, and read: the command
// only reads (a replica may answer it for its master's slots).
func (s *State) Route(slot int, asking, readOnly, read bool) (Route, *Node) {
	v := s.view.Load()
	if v.top == nil || v.me < 0 {
		return NotMember, nil
	}
	owner := v.top.Owner(slot)
	if owner == nil {
		return Unserved, nil
	}
	me := &v.top.Nodes[v.me]
	if owner == me {
		if v.held {
			return Held, nil
		}
		if m := s.move(slot); m != nil && m.Out {
			switch m.Phase.Load() {
			case Frozen:
				if !read {
					return TryAgain, nil
				}
			case Asking:
				return Ask, &m.Peer
			}
		}
		return Local, nil
	}
	if asking {
		if m := s.move(slot); m != nil && !m.Out {
			return Local, nil
		}
	}
	if readOnly && read && me.MasterID == owner.ID {
		return Local, nil
	}
	return Moved, owner
}

func (s *State) move(slot int) *Move {
	if p := s.moves.Load(); p != nil {
		return (*p)[slot]
	}
	return nil
}

// Move returns the move of slot in progress, or nil.
func (s *State) Move(slot int) *Move { return s.move(slot) }

// StartMove records m; it fails if slot already moves.
func (s *State) StartMove(m *Move) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := map[int]*Move{}
	if p := s.moves.Load(); p != nil {
		for k, v := range *p {
			cur[k] = v
		}
	}
	if _, busy := cur[m.Slot]; busy {
		return fmt.Errorf("cluster: slot %d is already moving", m.Slot)
	}
	cur[m.Slot] = m
	s.moves.Store(&cur)
	return nil
}

// EndMove forgets the move of slot.
func (s *State) EndMove(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.moves.Load()
	if p == nil {
		return
	}
	cur := map[int]*Move{}
	for k, v := range *p {
		if k != slot {
			cur[k] = v
		}
	}
	if len(cur) == 0 {
		s.moves.Store(nil)
		return
	}
	s.moves.Store(&cur)
}

// Moves lists the moves in progress.
func (s *State) Moves() []*Move {
	p := s.moves.Load()
	if p == nil {
		return nil
	}
	out := make([]*Move, 0, len(*p))
	for _, m := range *p {
		out = append(out, m)
	}
	return out
}

// The file a State persists in: "myid <id>", "sentinels <host:port> ..."
// when there are Sentinels, "failover <shard's master> <master> <epoch>"
// for each shard Sentinel named a master of, "version <n>", then the
// topology's lines as pushed (Topology.Text), or no version and no lines
// before the first push. It is replaced whole (atomicfile).
func (s *State) save(v *view) error {
	if s.path == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("# redcell cluster state: this node's ID, its Sentinels, the failovers they reported and the topology pushed last (CLUSTERX SETNODES)\n")
	b.WriteString("myid " + v.myID + "\n")
	if len(v.sentinels) > 0 {
		b.WriteString("sentinels " + strings.Join(v.sentinels, " ") + "\n")
	}
	for _, shard := range slices.Sorted(maps.Keys(v.failovers)) {
		f := v.failovers[shard]
		if f.Pending {
			f.Master = f.Reported // Sentinel has not said it yet
		}
		fmt.Fprintf(&b, "failover %s %s %d\n", shard, f.Master, f.Epoch)
	}
	if v.base != nil && v.base.Version >= 0 {
		b.WriteString("version " + strconv.FormatInt(v.base.Version, 10) + "\n")
		b.WriteString(v.base.Text())
	}
	if err := atomicfile.Write(s.path, []byte(b.String())); err != nil {
		return fmt.Errorf("cluster: saving %s: %w", s.path, err)
	}
	return nil
}

// saved is what load reads back of a State's file.
type saved struct {
	id        string
	top       *Topology
	sentinels []string
	failovers map[string]Failover
}

func load(path string) (f saved, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	var version int64 = -1
	var nodes strings.Builder
	for n, line := range strings.Split(string(data), "\n") {
		fs := strings.Fields(line)
		bad := fmt.Errorf("%s:%d: %q is not a line redcell writes", path, n+1, line)
		switch {
		case len(fs) == 0 || strings.HasPrefix(fs[0], "#"):
		case fs[0] == "myid" && len(fs) == 2 && len(fs[1]) == IDLen && isHex(fs[1]):
			f.id = fs[1]
		case fs[0] == "sentinels" && len(fs) >= 2:
			f.sentinels = fs[1:]
		case fs[0] == "failover" && len(fs) == 4:
			epoch, err := strconv.ParseInt(fs[3], 10, 64)
			if err != nil || len(fs[1]) != IDLen || len(fs[2]) != IDLen {
				return f, bad
			}
			if f.failovers == nil {
				f.failovers = map[string]Failover{}
			}
			f.failovers[fs[1]] = Failover{Master: fs[2], Epoch: epoch}
		case fs[0] == "version" && len(fs) == 2:
			if version, err = strconv.ParseInt(fs[1], 10, 64); err != nil {
				return f, fmt.Errorf("%s:%d: %q", path, n+1, line)
			}
		case len(fs) >= 5:
			nodes.WriteString(line + "\n")
		default:
			return f, bad
		}
	}
	if f.id == "" {
		return f, fmt.Errorf("%s: no myid line", path)
	}
	if version < 0 {
		return f, nil
	}
	if f.top, err = Parse(nodes.String(), version); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
