package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/metrics"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
)

// The memory limit, as Redis's maxmemory: when the memory in use passes it, a
// command that would create a key either fails (NoEviction, ErrOOM) or first
// evicts the key whose TAT is nearest (VolatileTTL: every key expires at its
// TAT, and one that would expire soonest holds the least of a limit, so
// evicting it only ever errs toward allowing). Keys that exist keep being
// decided either way.
//
// Used memory is measured off the command path: a watcher (RunMemoryWatch)
// adds up, every DefaultMemoryWatchInterval, what the Go runtime holds and
// what the keyspace's arrays outside the Go heap hold, and sets a flag the
// command path reads with one atomic load, only when it creates a key. So
// the limit is passed by at most what is created between two looks.

// EvictionPolicy says what happens when a key must be created past the
// memory limit.
type EvictionPolicy int

const (
	// NoEviction refuses the key: Redis's noeviction, the default.
	NoEviction EvictionPolicy = iota
	// VolatileTTL evicts the key nearest its expiry: Redis's volatile-ttl.
	VolatileTTL
)

// ParseEvictionPolicy reads a policy by Redis's name.
func ParseEvictionPolicy(name string) (EvictionPolicy, error) {
	switch name {
	case "noeviction":
		return NoEviction, nil
	case "volatile-ttl":
		return VolatileTTL, nil
	}
	return 0, fmt.Errorf("maxmemory policy %q: redcell serves noeviction and volatile-ttl", name)
}

func (p EvictionPolicy) String() string {
	if p == VolatileTTL {
		return "volatile-ttl"
	}
	return "noeviction"
}

// ErrOOM is returned for a key that cannot be created under the memory
// limit with NoEviction.
var ErrOOM = errors.New("storage: used memory is over the limit")

// DefaultMemoryWatchInterval is how often RunMemoryWatch measures.
const DefaultMemoryWatchInterval = 10 * time.Millisecond

// evictionSamples is how many keys an eviction compares, as Redis's
// maxmemory-samples.
const evictionSamples = 5

type memoryLimit struct {
	limit   int64 // bytes; 0: none
	policy  EvictionPolicy
	over    atomic.Bool
	evicted atomic.Int64
	// garbage is the arenas' garbage bytes at the last measure.
	garbage atomic.Int64
	// uncounted reports memory the limit does not count (SetUncounted).
	uncounted atomic.Pointer[func() int64]
}

// SetUncounted makes the bytes fn reports, measured with the rest, not
// count toward the limit: a master's replication buffers (the backlog, and
// the stream it keeps for a syncing replica), as Redis's
// mem_not_counted_for_evict, so that attaching a replica neither evicts
// limiter state nor refuses new keys. fn must be safe to call from any
// goroutine.
func (s *Store) SetUncounted(fn func() int64) { s.mem.uncounted.Store(&fn) }

// Uncounted is what SetUncounted's function reports now; 0 without one.
func (s *Store) Uncounted() int64 {
	if fn := s.mem.uncounted.Load(); fn != nil {
		return (*fn)()
	}
	return 0
}

// counted is used less what the limit does not count.
func (s *Store) counted(used int64) int64 { return used - s.Uncounted() }

// MemoryLimit returns the limit in bytes (0: none) and the policy.
func (s *Store) MemoryLimit() (int64, EvictionPolicy) { return s.mem.limit, s.mem.policy }

// RefusesNewKeys reports whether a key created now would be refused
// (ErrOOM): the memory is over the limit, as last measured, under
// NoEviction. The rate limit service asks it to refuse a request whole
// before deciding any of it.
func (s *Store) RefusesNewKeys() bool { return s.mem.over.Load() && s.mem.policy == NoEviction }

// Evicted counts the keys evicted under the memory limit.
func (s *Store) Evicted() int64 { return s.mem.evicted.Load() }

var goMemory = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}

// MeasureMemory measures the memory in use now, records it, and sets whether
// it is over the limit: what the Go runtime holds from the system (heap,
// stacks, its own structures; less what it has returned) and the
// keyspace's arrays outside the Go heap, by the parts of them in use.
// Pebble's caches in C memory are outside it.
func (s *Store) MeasureMemory() int64 { return s.measureMemory(nil) }

func (s *Store) measureMemory(tx *Txn) int64 {
	samples := make([]metrics.Sample, len(goMemory))
	copy(samples, goMemory)
	metrics.Read(samples)
	used := int64(samples[0].Value.Uint64() - samples[1].Value.Uint64())
	var garbage int64
	s.forShards(tx, func(sh *shard) {
		used += sh.t.mappedInUse()
		garbage += int64(sh.t.garbage + sh.t.valGarbage + sh.t.valSpare)
	})
	s.mem.garbage.Store(garbage)
	s.mem.over.Store(s.mem.limit > 0 && s.counted(used) > s.mem.limit)
	return used
}

// ArenaGarbage is the bytes of the tables' arenas, counted in the memory in
// use, that no key needs: those of keys moved or gone, and the room of
// states that shrank (table.valSpare). A compaction drops them (Tidy). It
// is as of the last measure (MeasureMemory).
func (s *Store) ArenaGarbage() int64 { return s.mem.garbage.Load() }

// RunMemoryWatch measures the memory every interval until ctx is done and,
// while it is over the limit, compacts the arenas' garbage and under
// VolatileTTL evicts keys (watchMemory). Without a limit it returns at once.
func (s *Store) RunMemoryWatch(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	if s.mem.limit <= 0 {
		return
	}
	every(ctx, interval, func() {
		// A panic in a tick is recorded and logged (contain.Run) and the
		// next tick runs: the watch outlives a bug in one eviction.
		_ = contain.Run(logger, "memory", "memory watch", func() error {
			s.watchMemory()
			return nil
		})
	})
}

// watchMemory is one tick of RunMemoryWatch: it measures; past the limit
// it compacts the arenas' garbage (Store.tidy, pressed), then under
// volatile-ttl evicts about enough keys to come back under.
func (s *Store) watchMemory() {
	used := s.counted(s.MeasureMemory())
	if used > s.mem.limit && s.ArenaGarbage() > 0 && s.tidy(true) > 0 {
		// The arenas' garbage counts toward the limit (it is memory in
		// use): dropped first, before a key is refused or evicted for
		// room that compacting gives. Redis's used_memory, an
		// allocator's count, does not hold such bytes either.
		used = s.counted(s.MeasureMemory())
	}
	if used <= s.mem.limit || s.mem.policy != VolatileTTL {
		return
	}
	// About the keys to free the excess, at ~50 bytes a key, spread
	// over the shards; each shard's lock held for its own share only.
	perShard := min(int((used-s.mem.limit)/50)/len(s.shards)+1, 1000)
	for i := range s.shards {
		s.shards[i].with(func(sh *shard) {
			for j := 0; j < perShard && sh.evictOne(); j++ {
				s.mem.evicted.Add(1)
			}
		})
	}
	s.MeasureMemory()
}

// roomFor makes room in sh, locked, for a new key while the memory is over
// the limit (makeRoom).
func (s *Store) roomFor(sh *shard) error {
	if s.mem.over.Load() {
		return s.makeRoom(sh)
	}
	return nil
}

// makeRoom is called with sh locked before a key is created in it while the
// memory is over the limit: it evicts one key of sh (VolatileTTL) or refuses
// (NoEviction).
func (s *Store) makeRoom(sh *shard) error {
	if s.mem.policy != VolatileTTL {
		return ErrOOM
	}
	if sh.evictOne() {
		s.mem.evicted.Add(1)
	}
	return nil
}

// evictOne removes, of evictionSamples keys of the shard picked at random
// (all of them in a shard that holds no more), the one with the nearest TAT,
// and reports whether there was one.
func (sh *shard) evictOne() bool {
	t := &sh.t
	if t.count == 0 {
		return false
	}
	best := -1
	var bestTAT gcra.Instant
	consider := func(p int) {
		if tat := t.slots[p].exp; best < 0 || tat < bestTAT {
			best, bestTAT = p, tat
		}
	}
	if t.count <= evictionSamples {
		for p := range t.slots {
			if t.slots[p].used() {
				consider(p)
			}
		}
	} else {
		// A random slot, or the first key after it: the table is at
		// least a fifth full, so the walk is short.
		for range evictionSamples {
			p := int(sh.random() % uint64(len(t.slots)))
			for !t.slots[p].used() {
				p = t.next(p)
			}
			consider(p)
		}
	}
	t.removeAt(best)
	return true
}

// random is a xorshift generator per shard, under its lock: evictions need
// no better.
func (sh *shard) random() uint64 {
	if sh.rng == 0 {
		sh.rng = uint64(uintptr(unsafe.Pointer(sh))) | 1
	}
	sh.rng ^= sh.rng << 13
	sh.rng ^= sh.rng >> 7
	sh.rng ^= sh.rng << 17
	return sh.rng
}

// mappedInUse is the part of the table's mapped regions in use: the whole
// table of slots (hashing touches all of it), the arenas up to their end.
// Regions in the Go heap are counted with the heap.
func (t *table) mappedInUse() int64 {
	var n int64
	if t.mem.slots.mapped {
		n += int64(len(t.slots)) * entrySize
	}
	if t.mem.arena.mapped {
		n += int64(len(t.arena))
	}
	if t.mem.vals.mapped {
		n += int64(len(t.vals))
	}
	return n
}
