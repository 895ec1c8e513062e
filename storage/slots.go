package storage

import (
	"errors"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
)

// A store sharded by slot (Config.BySlot) for Redis Cluster: a slot's keys
// all live in shard slot & mask, so counting them (CLUSTER COUNTKEYSINSLOT)
// reads one counter and finding them (GETKEYSINSLOT, a migration's copy)
// scans one shard, never the whole keyspace; and a slot can be frozen
// while it moves to another node.
//
// Freezing is what makes a move exact. The mover freezes the slot under its
// shard's lock and copies it then: from that moment a decision on one of
// its keys is ErrSlotFrozen (which the server answers TRYAGAIN, and clients
// retry, by then redirected), so nothing changes the slot after the last
// copy. The check costs a decision one load of its shard's frozen count.

// ErrSlotFrozen is a write to a key of a frozen slot: the slot is moving
// to another node.
var ErrSlotFrozen = errors.New("storage: the key's slot is moving")

// isFrozen reports whether key's slot is frozen; its shard is locked.
func (s *Store) isFrozen(key []byte) bool { return s.frozen[cluster.Slot(key)] }

// Freeze freezes (on) or thaws slot. It reports false, doing nothing, for
// a store not sharded by slot.
func (s *Store) Freeze(slot int, on bool) bool {
	if !s.bySlot {
		return false
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.setFrozen(sh, slot, on)
	return true
}

// setFrozen freezes or thaws slot, whose shard sh is locked, keeping the
// shard's count of frozen slots.
func (s *Store) setFrozen(sh *shard, slot int, on bool) {
	if s.frozen[slot] == on {
		return
	}
	s.frozen[slot] = on
	if on {
		sh.frozen++
	} else {
		sh.frozen--
	}
}

// Frozen reports whether slot is frozen.
func (s *Store) Frozen(slot int) bool {
	if !s.bySlot {
		return false
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.frozen[slot]
}

// CountInSlot returns how many keys (live or expired but not yet swept)
// slot holds; 0 for a store not sharded by slot.
func (s *Store) CountInSlot(slot int) int {
	if !s.bySlot {
		return 0
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return int(s.slotKeys[slot])
}

// CopySlot appends to buf every live key of slot with its state, as
// CopyShard does for a shard, copied under the shard's lock. With freeze,
// the slot is frozen in the same hold of the lock, so the copy is its last
// state until it thaws.
func (s *Store) CopySlot(slot int, now gcra.Instant, freeze bool, buf []Change) []Change {
	if !s.bySlot {
		return buf
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if freeze {
		s.setFrozen(sh, slot, true)
	}
	return sh.t.copyLive(now, func(key []byte) bool { return cluster.Slot(key) == slot }, buf)
}

// KeysInSlot calls fn with up to count live keys of slot, each a view valid
// during the call, under the shard's lock.
func (s *Store) KeysInSlot(slot, count int, now gcra.Instant, fn func(key []byte)) {
	if !s.bySlot || count <= 0 {
		return
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for j := 0; j < len(sh.t.slots) && count > 0; j++ {
		e := &sh.t.slots[j]
		if !e.used() {
			continue
		}
		if key := sh.t.keyOf(e); e.exp > now && cluster.Slot(key) == slot {
			fn(key)
			count--
		}
	}
}

// DeleteSlot deletes every key of slot, recording the deletions (so they
// are persisted and replicated), and thaws it: the last step of moving the
// slot away. It returns how many keys it deleted.
func (s *Store) DeleteSlot(slot int) int {
	if !s.bySlot {
		return 0
	}
	sh := &s.shards[slot&int(s.mask)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := 0
	// A deletion moves the next entries back, and may shrink the table,
	// moving every entry: pass again until a pass finds none of the slot's.
	for found := true; found; {
		found = false
		for j := 0; j < len(sh.t.slots); {
			if e := &sh.t.slots[j]; e.used() && cluster.Slot(sh.t.keyOf(e)) == slot {
				sh.t.removeAt(j) // the next entry may have moved to j: look at j again
				n++
				found = true
				continue
			}
			j++
		}
	}
	s.setFrozen(sh, slot, false)
	return n
}
