package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Slots moving out of or into this node (clusternode.Migrator drives them):
// each a Move in its phase, which State.Route reads on every command of
// the slot.

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

// errSlotHeld is SetSlot's change already made: nothing to save.
var errSlotHeld = errors.New("cluster: the slot's change is held already")

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

// Hand puts m, a move recorded (StartMove) whose destination now holds the
// slot's last state, in its Asking phase, which it saves first with the
// rest of the state (nodes.conf): the source sends the slot's clients to
// the destination with ASK from then on, and the destination serves them
// after ASKING, until a topology ends the move, across restarts of either.
// A source restarted without it would serve its copy of the slot as of the
// handover beside the destination's, the slot's decisions split between
// two states; a destination, refuse the clients sent to it and drop what
// it imported as keys of a slot it does not serve. A move not yet handed
// is not saved: a restart in its middle fails it, and the slot stays with
// the source. If the save fails, m is left as it was.
func (s *State) Hand(m *Move) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.move(m.Slot) != m {
		return fmt.Errorf("cluster: slot %d's move is not in progress", m.Slot)
	}
	if err := s.save(s.view.Load(), m); err != nil {
		return err
	}
	m.Thaw(Asking)
	return nil
}

// EndMove forgets the move of slot. A handed one is saved gone. That save
// is the only one whose failure is not reported: the line it leaves names
// a move the topology saved ended (the next Follow after a restart ends it
// again: clusternode's settle), or an import aborted, whose slot's source
// sends no client with ASK and which the next import of the slot replaces.
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
	} else {
		s.moves.Store(&cur)
	}
	if m := (*p)[slot]; m != nil && m.Phase.Load() == Asking {
		_ = s.save(s.view.Load(), nil)
	}
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
