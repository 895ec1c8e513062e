package storage

import (
	"slices"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// Txn is a Store with some of its shards locked, for one transaction
// (MULTI/EXEC): no other goroutine's call touches those shards until Unlock,
// so the transaction's commands run with nothing of anyone else's between
// them. Its methods take no lock on a shard it holds. A Txn belongs to the
// goroutine that locked it and is not safe for concurrent use.
type Txn struct {
	s    *Store
	held []bool // by shard index
	all  bool
}

// Lock locks the shards of keys, or with all every shard, and returns the
// Txn that holds them. Shards are locked in ascending order, the one order
// every Lock uses, so two transactions never wait on each other in a cycle.
// A key whose shard the Txn does not hold may still be used: its shard is
// locked for the call alone, as by the Store; that is safe only for keys no
// other transaction holds (Lock every key a transaction names).
func (s *Store) Lock(keys [][]byte, all bool) *Txn {
	tx := &Txn{s: s, held: make([]bool, len(s.shards)), all: all}
	if all {
		for i := range tx.held {
			tx.held[i] = true
		}
	} else {
		for _, k := range keys {
			tx.held[s.shardIndex(k)] = true
		}
	}
	for i, h := range tx.held {
		if h {
			s.shards[i].mu.Lock()
		}
	}
	return tx
}

// Unlock releases every shard the Txn holds, in reverse order.
func (tx *Txn) Unlock() {
	for i := len(tx.held) - 1; i >= 0; i-- {
		if tx.held[i] {
			tx.s.shards[i].mu.Unlock()
			tx.held[i] = false
		}
	}
}

// holds reports whether tx holds shard i; a nil Txn holds none.
func (tx *Txn) holds(i int) bool { return tx != nil && tx.held[i] }

// withShard runs fn under key's shard lock: held by tx, or taken for it.
func (tx *Txn) withShard(key []byte, fn func(sh *shard)) {
	i := tx.s.shardIndex(key)
	sh := &tx.s.shards[i]
	if tx.held[i] {
		fn(sh)
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	fn(sh)
}

// Throttle is Store.Throttle inside the transaction.
func (tx *Txn) Throttle(key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, error) {
	return tx.ThrottleSlot(key, -1, r, now)
}

// ThrottleSlot is Store.ThrottleSlot inside the transaction, which finds
// the key's shard among those it holds.
func (tx *Txn) ThrottleSlot(key []byte, _ int, r gcra.Rate, now gcra.Instant) (res gcra.Result, err error) {
	tx.withShard(key, func(sh *shard) { res, err = tx.s.throttle(sh, key, r, now) })
	return res, err
}

func (tx *Txn) Preview(key []byte, r gcra.Rate, now gcra.Instant) (res gcra.Result, store bool, err error) {
	tx.withShard(key, func(sh *shard) { res, store, err = tx.s.preview(sh, key, r, now) })
	return res, store, err
}

func (tx *Txn) Reserve(key []byte, r gcra.Rate, now gcra.Instant, maxWait time.Duration, dry bool) (res gcra.Reservation, stored bool, err error) {
	tx.withShard(key, func(sh *shard) { res, stored, err = tx.s.reserve(sh, key, r, now, maxWait, dry) })
	return res, stored, err
}

func (tx *Txn) Window(key []byte, spec window.Spec, now gcra.Instant, dry bool) (res window.Result, stored bool, err error) {
	tx.withShard(key, func(sh *shard) { res, stored, err = tx.s.window(sh, key, spec, now, dry) })
	return res, stored, err
}

func (tx *Txn) Count(key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (t window.Tally, stored bool, err error) {
	tx.withShard(key, func(sh *shard) { t, stored, err = tx.s.count(sh, key, spec, now, dry) })
	return t, stored, err
}

func (tx *Txn) Get(key []byte, now gcra.Instant) (exp gcra.Instant, kind Kind, ok bool) {
	tx.withShard(key, func(sh *shard) { exp, kind, ok = tx.s.get(sh, key, now) })
	return exp, kind, ok
}

func (tx *Txn) Fingerprint(key []byte, now gcra.Instant) (fp uint64, ok bool) {
	tx.withShard(key, func(sh *shard) { fp, ok = tx.s.fingerprint(sh, key, now) })
	return fp, ok
}

func (tx *Txn) Delete(key []byte, now gcra.Instant) (ok bool) {
	tx.withShard(key, func(sh *shard) { ok = tx.s.delete(sh, key, now) })
	return ok
}

// The calls over every shard take the locks of the shards the Txn does not
// hold, one at a time as the Store does; a transaction that makes them
// should hold every shard (Lock with all), or they see the other shards as
// of their own moment.

func (tx *Txn) Len() int { return tx.s.length(tx) }

// Observe is Store.Observe from within the transaction: the shards it holds
// are set without locking them again.
func (tx *Txn) Observe(o Observer) {
	tx.s.setObserver(o)
	tx.s.forShards(tx, func(sh *shard) { sh.t.obs = o; sh.t.rehook() })
}

// Clear is Store.Clear within the transaction; the observer is told while
// the transaction still holds its shards.
func (tx *Txn) Clear() {
	tx.s.forShards(tx, func(sh *shard) { sh.t.clear() })
	tx.s.cleared()
}

func (tx *Txn) Scan(cursor uint64, count int, now gcra.Instant, fn func(key []byte, tat gcra.Instant)) uint64 {
	return tx.s.scan(tx, cursor, count, now, fn)
}

func (tx *Txn) Each(now gcra.Instant, fn func(key []byte, tat gcra.Instant)) { tx.s.each(tx, now, fn) }
func (tx *Txn) PendingChanges() int                                          { return tx.s.pendingChanges(tx) }
func (tx *Txn) MeasureMemory() int64                                         { return tx.s.measureMemory(tx) }

// SlotFrozen reports whether slot is frozen (Store.Freeze); the transaction
// must hold the slot's shard, as it does when it holds a key of the slot.
func (tx *Txn) SlotFrozen(slot int) bool {
	return tx.s.bySlot && tx.holds(slot&int(tx.s.mask)) && tx.s.frozen[slot]
}

// HeldShards lists the shards tx holds, for tests.
func (tx *Txn) HeldShards() []int {
	var out []int
	for i, h := range tx.held {
		if h {
			out = append(out, i)
		}
	}
	return slices.Clip(out)
}
