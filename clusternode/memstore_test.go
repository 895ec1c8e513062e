package clusternode

import (
	"strconv"
	"sync"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// memStore is Store's in-memory twin: each key's state in a map and the
// frozen slots in a set, under one lock, as storage.Store keeps a slot's
// keys under its shard's lock. It records the calls that copy, freeze or
// drop a slot (calls), so tests see in what order a migration made them.
type memStore struct {
	mu     sync.Mutex
	keys   map[string]storage.Change
	frozen map[int]bool
	calls  []string
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{keys: map[string]storage.Change{}, frozen: map[int]bool{}}
}

func (s *memStore) CopySlot(slot int, now gcra.Instant, freeze bool, buf []storage.Change) []storage.Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	if freeze {
		s.calls = append(s.calls, "copy and freeze "+strconv.Itoa(slot))
		s.frozen[slot] = true
	} else {
		s.calls = append(s.calls, "copy "+strconv.Itoa(slot))
	}
	for k, ch := range s.keys {
		if cluster.Slot([]byte(k)) == slot && ch.TAT > now {
			buf = append(buf, ch)
		}
	}
	return buf
}

func (s *memStore) Freeze(slot int, on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "freeze "+strconv.Itoa(slot)+" "+strconv.FormatBool(on))
	s.frozen[slot] = on
	return true
}

func (s *memStore) DeleteSlot(slot int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "delete "+strconv.Itoa(slot))
	n := 0
	for k := range s.keys {
		if cluster.Slot([]byte(k)) == slot {
			delete(s.keys, k)
			n++
		}
	}
	delete(s.frozen, slot)
	return n
}

func (s *memStore) Apply(key []byte, kind storage.Kind, exp gcra.Instant, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[string(key)] = storage.Change{Key: string(key), TAT: exp, Kind: kind, Value: string(value)}
	return nil
}

// Delete refuses a key of a frozen slot, as storage.Store does.
func (s *memStore) Delete(key []byte, now gcra.Instant) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.keys[string(key)]
	if !ok || s.frozen[cluster.Slot(key)] {
		return false
	}
	delete(s.keys, string(key))
	return ch.TAT > now
}

func (s *memStore) CountInSlot(slot int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.keys {
		if cluster.Slot([]byte(k)) == slot {
			n++
		}
	}
	return n
}

// decide stands for a decision on key: it sets its TAT, unless its slot is
// frozen (storage.ErrSlotFrozen).
func (s *memStore) decide(key string, tat gcra.Instant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen[cluster.Slot([]byte(key))] {
		return storage.ErrSlotFrozen
	}
	s.keys[key] = storage.Change{Key: key, TAT: tat}
	return nil
}

// get returns key's state, if it holds one.
func (s *memStore) get(key string) (storage.Change, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.keys[key]
	return ch, ok
}

func (s *memStore) isFrozen(slot int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen[slot]
}

// takeCalls returns the calls recorded since the last takeCalls.
func (s *memStore) takeCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}
