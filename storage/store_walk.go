package storage

import "github.com/redcell/redcell/gcra"

// The Store's operations over every shard: counting, clearing, expiring,
// and walking the keys (SCAN, KEYS, a snapshot).

// Len returns the number of keys held, including expired keys not yet swept.
func (s *Store) Len() int { return s.length(nil) }

func (s *Store) length(tx *Txn) int {
	n := 0
	s.forShards(tx, func(sh *shard) { n += sh.t.len() })
	return n
}

// Expired returns how many keys have been removed because their TAT passed.
func (s *Store) Expired() int64 { return s.expired.Load() }

// Clear deletes every key, and then tells the observer (Observer.Cleared).
func (s *Store) Clear() {
	s.forShards(nil, func(sh *shard) { sh.t.clear() })
	s.cleared()
}

// ExpireSome examines at most perShard keys in every shard, resuming where
// the previous call stopped, deletes those whose TAT is <= now, and returns
// how many it deleted. Each shard's lock is held only for its own bounded
// batch, so a pass never stalls decisions for long.
func (s *Store) ExpireSome(now gcra.Instant, perShard int) int {
	total := 0
	for i := range s.shards {
		_, n := s.expireShard(i, now, perShard)
		total += n
	}
	return total
}

// expireShard examines at most n keys of shard i from where its last batch
// stopped, under its lock alone, deletes those expired at now, and returns
// how many it examined and deleted.
func (s *Store) expireShard(i int, now gcra.Instant, n int) (examined, expired int) {
	s.shards[i].with(func(sh *shard) {
		sh.cursor, examined, expired = sh.t.expire(sh.cursor, n, now)
	})
	s.expired.Add(int64(expired))
	return examined, expired
}

// Scan calls fn for live keys, about count of them examined, starting at
// cursor, and returns the cursor to pass next; 0 means the scan is complete.
// A key present for the whole scan is returned exactly once, however the
// shards grow, shrink or move their keys meanwhile: a shard is walked in the
// order of its keys' hashes (table.scan). fn runs under the key's shard lock
// and gets a view of the key's bytes, valid only during the call: it must
// copy what it keeps (nothing is copied for a key it passes over), be quick,
// and not call the Store.
func (s *Store) Scan(cursor uint64, count int, now gcra.Instant, fn func(key []byte, tat gcra.Instant)) uint64 {
	return s.scan(nil, cursor, count, now, fn)
}

func (s *Store) scan(tx *Txn, cursor uint64, count int, now gcra.Instant, fn func(key []byte, tat gcra.Instant)) uint64 {
	// The cursor is shard<<32 | the hash the shard's walk goes on from.
	si, from := int(cursor>>32), cursor&0xffffffff
	for si < len(s.shards) && count > 0 {
		sh := &s.shards[si]
		var covered int
		var next uint64
		var done bool
		walk := func(sh *shard) {
			covered, next, done = sh.t.scan(from, count, func(e *entry) {
				if e.exp > now {
					fn(sh.t.keyOf(e), e.exp)
				}
			})
		}
		if tx.holds(si) {
			walk(sh)
		} else {
			sh.with(walk)
		}
		count -= max(covered, 1)
		if done {
			si, from = si+1, 0
		} else {
			from = next
		}
	}
	if si >= len(s.shards) {
		return 0
	}
	return uint64(si)<<32 | from
}

// Each calls fn for every live key, one whole shard at a time under its
// lock, as Scan calls it: so a key present throughout is seen exactly once.
func (s *Store) Each(now gcra.Instant, fn func(key []byte, tat gcra.Instant)) { s.each(nil, now, fn) }

func (s *Store) each(tx *Txn, now gcra.Instant, fn func(key []byte, tat gcra.Instant)) {
	s.forShards(tx, func(sh *shard) {
		for p := range sh.t.slots {
			if e := &sh.t.slots[p]; e.used() && e.exp > now {
				fn(sh.t.keyOf(e), e.exp)
			}
		}
	})
}
