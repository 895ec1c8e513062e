package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"redcell/internal/atomicfile"
)

// State is one node's view of the cluster: its ID, the topology pushed
// last, and the slots moving to or from it. Route, on every keyed command,
// costs two atomic loads and a slot lookup. It is safe for concurrent use.
type State struct {
	mu   sync.Mutex // serializes changes; readers load the pointers
	path string     // where the state persists; "" for none

	view atomic.Pointer[view]
	// moves holds the slots moving out of or into this node; nil when
	// none does, which Route checks first.
	moves atomic.Pointer[map[int]*Move]
}

// view is a topology as this node sees it: immutable.
type view struct {
	myID string
	top  *Topology
	me   int // index of this node in top.Nodes, -1 when it is not in it
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
	v := &view{me: -1}
	if s.path != "" {
		id, top, err := load(s.path)
		if err != nil {
			return nil, err
		}
		v.myID, v.top = id, top
	}
	if v.myID == "" {
		v.myID = randomID()
	}
	if v.top == nil && emulated {
		v.top = Emulated(v.myID, ip, port)
	}
	v.me = indexOf(v.top, v.myID)
	s.view.Store(v)
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

// Topology returns the topology in force, nil before the first push (and
// outside emulated mode), and this node's place in it (nil if it is not in
// it).
func (s *State) Topology() (*Topology, *Node) {
	v := s.view.Load()
	if v.top == nil || v.me < 0 {
		return v.top, nil
	}
	return v.top, &v.top.Nodes[v.me]
}

// Version is the topology's version, -1 before any push.
func (s *State) Version() int64 {
	if t := s.view.Load().top; t != nil {
		return t.Version
	}
	return -1
}

// SetNodeID sets this node's ID (CLUSTERX SETNODEID).
func (s *State) SetNodeID(id string) error {
	if len(id) != IDLen || !isHex(id) {
		return ErrNodeID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	v := &view{myID: id, top: old.top, me: indexOf(old.top, id)}
	if err := s.save(v); err != nil {
		return err
	}
	s.view.Store(v)
	return nil
}

// SetTopology makes t the topology in force, unless its version is not
// newer than the current one's and force is false (CLUSTERX SETNODES). It
// is persisted first: a node restarted serves the same slots.
func (s *State) SetTopology(t *Topology, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	if !force && old.top != nil && t.Version <= old.top.Version {
		return fmt.Errorf("%w: %d <= %d", ErrStaleVersion, t.Version, old.top.Version)
	}
	v := &view{myID: old.myID, top: t, me: indexOf(t, old.myID)}
	if err := s.save(v); err != nil {
		return err
	}
	s.view.Store(v)
	return nil
}

// SetSlot gives slot to the master id at version, which must be the
// topology's next (CLUSTERX SETSLOT, how a migration's end is pushed to
// every node): the topology in force with that one slot changed, persisted
// as SetTopology's is.
func (s *State) SetSlot(slot int, id string, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	if old.top == nil {
		return ErrNoTopology
	}
	if version != old.top.Version+1 {
		return ErrStaleVersion
	}
	t, err := old.top.WithSlot(slot, id, version)
	if err != nil {
		return err
	}
	v := &view{myID: old.myID, top: t, me: indexOf(t, old.myID)}
	if err := s.save(v); err != nil {
		return err
	}
	s.view.Store(v)
	return nil
}

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
)

// Mine reports whether this node serves slot, with no move of any slot in
// progress: then Route would answer Local whatever the client. It is the
// hot path's whole check: two atomic loads and an index.
func (s *State) Mine(slot int) bool {
	v := s.view.Load()
	return v.top != nil && v.me >= 0 && int(v.top.owner[slot]) == v.me && s.moves.Load() == nil
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

// The file a State persists in: "myid <id>", "version <n>", then the
// topology's lines (Topology.Text), or no version and no lines before the
// first push. It is replaced whole (atomicfile).
func (s *State) save(v *view) error {
	if s.path == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("# redcell cluster state: this node's ID and the topology pushed last (CLUSTERX SETNODES)\n")
	b.WriteString("myid " + v.myID + "\n")
	if v.top != nil && v.top.Version >= 0 {
		b.WriteString("version " + strconv.FormatInt(v.top.Version, 10) + "\n")
		b.WriteString(v.top.Text())
	}
	if err := atomicfile.Write(s.path, []byte(b.String())); err != nil {
		return fmt.Errorf("cluster: saving %s: %w", s.path, err)
	}
	return nil
}

func load(path string) (id string, top *Topology, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	var version int64 = -1
	var nodes strings.Builder
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "myid" && len(f) == 2 && len(f[1]) == IDLen && isHex(f[1]):
			id = f[1]
		case f[0] == "version" && len(f) == 2:
			if version, err = strconv.ParseInt(f[1], 10, 64); err != nil {
				return "", nil, fmt.Errorf("%s:%d: %q", path, n+1, line)
			}
		case len(f) >= 5:
			nodes.WriteString(line + "\n")
		default:
			return "", nil, fmt.Errorf("%s:%d: %q is not a line redcell writes", path, n+1, line)
		}
	}
	if id == "" {
		return "", nil, fmt.Errorf("%s: no myid line", path)
	}
	if version < 0 {
		return id, nil, nil
	}
	if top, err = Parse(nodes.String(), version); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return id, top, nil
}
