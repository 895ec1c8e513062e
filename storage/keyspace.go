package storage

import (
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/top"
	"github.com/redcell/redcell/window"
)

// Keyspace is what commands read and change: the Store itself, each call
// under the locks it needs, or a Txn, whose calls run under the locks the
// transaction holds.
type Keyspace interface {
	// ThrottleSlot is a GCRA decision (Store.Throttle) given key's cluster
	// slot, already computed (or -1): a store sharded by slot need not
	// hash the key again.
	ThrottleSlot(key []byte, slot int, r gcra.Rate, now gcra.Instant) (gcra.Result, error)
	Preview(key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, bool, error)
	Reserve(key []byte, r gcra.Rate, now gcra.Instant, maxWait time.Duration, dry bool) (gcra.Reservation, bool, error)
	Window(key []byte, spec window.Spec, now gcra.Instant, dry bool) (window.Result, bool, error)
	Count(key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (window.Tally, bool, error)
	Acquire(key []byte, spec lease.Spec, token []byte, now gcra.Instant, dry bool) (lease.Result, bool, error)
	Release(key, token []byte, now gcra.Instant, dry bool) (bool, error)
	Renew(key, token []byte, d time.Duration, now gcra.Instant, dry bool) (bool, error)
	Leases(key []byte, now gcra.Instant, held []lease.Held) ([]lease.Held, error)
	Top(n int, now gcra.Instant) []top.Entry
	Get(key []byte, now gcra.Instant) (gcra.Instant, Kind, bool)
	Fingerprint(key []byte, now gcra.Instant) (uint64, bool)
	Delete(key []byte, now gcra.Instant) bool
	Clear()
	Len() int
	Scan(cursor uint64, count int, now gcra.Instant, fn func(key []byte, tat gcra.Instant)) uint64
	Each(now gcra.Instant, fn func(key []byte, tat gcra.Instant))
	PendingChanges() int
	MeasureMemory() int64
	MemoryUsage(key []byte, now gcra.Instant) (int64, bool)
}

var (
	_ Keyspace = (*Store)(nil)
	_ Keyspace = (*Txn)(nil)
)
