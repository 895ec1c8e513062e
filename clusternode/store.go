package clusternode

import (
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// Store is the keyspace slots move out of and into: a store sharded by
// slot (storage.Config.BySlot), so that a slot's keys are found, frozen and
// dropped under one shard's lock. *storage.Store is the one the server
// runs on; the tests have an in-memory twin (memStore).
type Store interface {
	// CopySlot appends every live key of slot, with its state, to buf,
	// under the slot's shard lock. With freeze, the slot is frozen in the
	// same hold of the lock: nothing changes it after this copy until it
	// thaws, so the copy is its last state.
	CopySlot(slot int, now gcra.Instant, freeze bool, buf []storage.Change) []storage.Change
	// Freeze freezes (on) or thaws slot.
	Freeze(slot int, on bool) bool
	// DeleteSlot deletes every key of slot, the deletions recorded (so
	// they are persisted and replicated), and thaws it. It returns how many
	// keys it deleted.
	DeleteSlot(slot int) int
	// Apply stores a key's state: its kind, its expiry (a TAT key's TAT)
	// and a boxed kind's state.
	Apply(key []byte, kind storage.Kind, exp gcra.Instant, value []byte) error
	// Delete deletes key.
	Delete(key []byte, now gcra.Instant) bool
	// CountInSlot counts the keys of slot, expired or not.
	CountInSlot(slot int) int
}

var _ Store = (*storage.Store)(nil)
