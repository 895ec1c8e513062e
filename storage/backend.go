package storage

import "github.com/redcell/redcell/gcra"

// Backend is where the Flusher writes changes. PebbleBackend is the real one;
// memoryBackend, a map, stands in for it in this package's tests.
type Backend interface {
	// Apply writes changes atomically, in the order given (a later change
	// to a key wins), with saved, the wall-clock instant of this save
	// (none when zero); sync makes it, and every Apply before it, durable
	// before returning.
	Apply(changes []Change, saved gcra.Instant, sync bool) error
	// Sync makes every Apply so far durable.
	Sync() error
	// DeleteStale deletes every stored key whose TAT is at or before now, a
	// wall-clock instant, and returns how many it deleted.
	DeleteStale(now gcra.Instant) (int, error)
	// DiskSize is the bytes the backend uses on disk.
	DiskSize() int64
	// DiskState is the disk's condition: ok, full, stalled or failed.
	DiskState() string
	Close() error
}

// LoggingBackend is a Backend that keeps durable mode's commit log too, as
// PebbleBackend does: what a Flusher with FlusherOptions.Log writes to, and
// what a wrapper that watches both its writes (the daemon's flush metrics)
// wraps.
type LoggingBackend interface {
	Backend
	CommitLog
}

var _ LoggingBackend = (*PebbleBackend)(nil)
