package storage

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/top"
)

// Config configures a Store. The zero Config is valid and uses the defaults.
type Config struct {
	// Shards is the number of lock stripes, rounded up to a power of two.
	// The default is DefaultShards().
	Shards int
	// TrackChanges makes the store remember which keys changed, for
	// TakeChanges. Leave it off when nothing persists the store, or the
	// record grows without bound.
	TrackChanges bool
	// MaxMemory is the memory limit in bytes, as Redis's maxmemory; 0, the
	// default, is none. It takes effect once RunMemoryWatch runs.
	MaxMemory int64
	// Eviction is what happens past MaxMemory. The default is NoEviction.
	Eviction EvictionPolicy
	// BySlot shards keys by their Redis Cluster hash slot instead of a
	// hash of their own: every key of a slot is in one shard, so that a
	// slot's keys are counted and found without a scan of the whole
	// keyspace (CountInSlot, KeysInSlot), and a slot can be frozen while
	// it moves (Freeze). Shards is then at most cluster.Slots.
	BySlot bool
}

// DefaultShards is 16 stripes per available CPU, so that two cores rarely
// contend for one lock.
func DefaultShards() int { return runtime.GOMAXPROCS(0) * 16 }

// EffectiveShards is the number of lock stripes a Store built from c has:
// Shards, or DefaultShards() for 0, rounded up to a power of two.
func (c Config) EffectiveShards() int {
	n := c.Shards
	if n == 0 {
		n = DefaultShards()
	}
	return 1 << bits.Len(uint(n-1))
}

// ErrInvalidShards is returned by Validate for a negative shard count or one
// above MaxShards.
var ErrInvalidShards = errors.New("storage: shards must be between 1 and 65536")

// ErrWrongType is returned for a decision on a key that holds another kind
// of state (a CL.WINDOW key for CL.THROTTLE, or the reverse).
var ErrWrongType = errors.New("storage: the key holds another kind of state")

// Errors of a key that cannot be stored. Nothing is stored, and the store
// keeps serving every other key.
var (
	// ErrFull: the key's shard holds the most keys a shard can (2^32-2).
	ErrFull = errors.New("storage: the key's shard is full")
	// ErrKeyTooLong: the key is 256 MiB or longer.
	ErrKeyTooLong = errors.New("storage: key too long")
)

// MaxShards bounds Config.Shards.
const MaxShards = 1 << 16

// Validate reports whether c can build a Store.
func (c Config) Validate() error {
	if c.Shards < 0 || c.Shards > MaxShards {
		return ErrInvalidShards
	}
	if c.BySlot && c.Shards > cluster.Slots {
		return fmt.Errorf("storage: with slots, at most %d shards", cluster.Slots)
	}
	if c.MaxMemory < 0 {
		return errors.New("storage: the memory limit must not be negative")
	}
	return nil
}

// Store is the sharded keyspace. It is safe for concurrent use.
type Store struct {
	shards []shard
	mask   uint64
	// indexBytes is the size of every table's index together (setSlots),
	// which says whether prefetching pays (Prefetching).
	indexBytes atomic.Int64
	expired    atomic.Int64 // keys removed because their TAT passed
	mem        memoryLimit
	// bySlot: Config.BySlot; slotKeys[slot] counts a slot's keys, each
	// slot's count kept under its shard's lock (Store.CountInSlot).
	bySlot   bool
	slotKeys []int32
	frozen   []bool // by slot, with slotKeys; each guarded by its slot's shard lock
	// observer is told of every change (Observe); each table holds a copy
	// (table.obs) read under its shard's lock, this one is for Clear.
	observer atomic.Pointer[observerBox]
}

type shard struct {
	mu     sync.Mutex
	t      table
	cursor int    // where the sweeper resumes
	rng    uint64 // eviction's random state (shard.random)
	// scratch is the buffer decisions on boxed states build the new state
	// in (Store.window), reused under the lock.
	scratch []byte
	// frozen counts this shard's frozen slots (Store.Freeze): a decision
	// looks at its slot only when it is not zero.
	frozen int
	// top is the shard's most limited keys (Store.Top), which its
	// decisions tell under the lock they hold (shard.note).
	top top.Sketch
	// Pad to a multiple of a cache line so neighbouring locks do not share one.
	_ [64]byte
}

// with runs fn with sh locked. The lock is released however fn ends, a
// panic included, as every shard lock is: a panic recovered above (the
// server contains one to the connection whose command panicked) must not
// leave the shard locked for every other key in it.
func (sh *shard) with(fn func(sh *shard)) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	fn(sh)
}

// New returns an empty Store. It panics if cfg is invalid; call Validate first.
func New(cfg Config) *Store {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	n := cfg.EffectiveShards()
	s := &Store{shards: make([]shard, n), mask: uint64(n - 1), bySlot: cfg.BySlot}
	if cfg.BySlot {
		s.slotKeys, s.frozen = make([]int32, cluster.Slots), make([]bool, cluster.Slots)
	}
	s.mem.limit, s.mem.policy = cfg.MaxMemory, cfg.Eviction
	for i := range s.shards {
		s.shards[i].t = newTable(cfg.TrackChanges)
		s.shards[i].t.rungBase = staggeredBase(i, n)
		s.shards[i].t.slotKeys = s.slotKeys
		s.shards[i].t.indexBytes = &s.indexBytes
	}
	return s
}

// Shards returns the number of lock stripes.
func (s *Store) Shards() int { return len(s.shards) }

func (s *Store) shardOf(key []byte) *shard { return &s.shards[s.shardIndex(key)] }

// shardIndex is key's shard: by its slot in a store sharded by slot, else
// by the low bits of its hash, as locate picks it.
func (s *Store) shardIndex(key []byte) int {
	if s.bySlot {
		return cluster.Slot(key) & int(s.mask)
	}
	return int(keyHash(key) & s.mask)
}

// locate returns key's shard and its table hash (hashKey) from one hash of
// the key, given key's cluster slot, already computed, or -1.
func (s *Store) locate(key []byte, slot int) (*shard, uint32) {
	sh, kh := s.locateHash(key, slot)
	return sh, uint32(kh >> 32)
}

// locateHash is locate with the whole hash of the key (keyHash), whose top
// half is the table's.
func (s *Store) locateHash(key []byte, slot int) (*shard, uint64) {
	kh := keyHash(key)
	if !s.bySlot {
		return &s.shards[kh&s.mask], kh
	}
	if slot < 0 {
		slot = cluster.Slot(key)
	}
	return &s.shards[slot&int(s.mask)], kh
}

// Throttle runs one GCRA decision for key at now, under the key's shard lock
// and no other, and stores the new TAT when the decision says to. It does not
// allocate unless it creates the key. A key that cannot be created
// (ErrFull, ErrKeyTooLong, ErrOOM) is an error and nothing is stored.
//
// Its body is throttle's, written out rather than called, and it hashes and
// finds the key once for the read and the write: the hot path costs one
// call and one lookup less.
func (s *Store) Throttle(key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, error) {
	return s.ThrottleSlot(key, -1, r, now)
}

// ThrottleSlot is Throttle given key's cluster slot (cluster.Slot), which a
// store sharded by slot (Config.BySlot) takes the shard from instead of
// hashing the key again; -1, or any store not sharded by slot, hashes it.
// It is the hot path in either mode.
func (s *Store) ThrottleSlot(key []byte, slot int, r gcra.Rate, now gcra.Instant) (gcra.Result, error) {
	sh, kh := s.locateHash(key, slot)
	h := uint32(kh >> 32)
	sh.mu.Lock()
	// Deferred, as every shard lock's release is, so that a panic under
	// the lock leaves the shard usable; an open-coded defer costs the
	// decision a few instructions.
	defer sh.mu.Unlock()
	if sh.frozen != 0 && s.isFrozen(key) {
		return gcra.Result{}, ErrSlotFrozen
	}
	var tat gcra.Instant // an expired TAT is <= now: Decide treats it as absent
	i := sh.t.lookupHashed(key, h)
	if i >= 0 {
		e := &sh.t.slots[i]
		tat = e.exp
		if e.boxed() {
			if s.otherKind(sh, key, tat, now) {
				return gcra.Result{}, ErrWrongType
			}
			i, tat = -1, 0 // expired and removed
		}
	}
	res, newTAT, store, err := gcra.Decide(r, tat, now)
	// shard.note, with the hash at hand: top.Sketch.Quick, inlined, counts
	// all but a few decisions in place.
	if !sh.top.Quick(kh, res.Limited, now) {
		sh.top.Note(key, kh, res.Limited, now)
	}
	switch {
	case !store:
	case i >= 0:
		// The entry found above: stored in place, not looked up again.
		sh.t.setTAT(i, newTAT)
	default:
		if err = s.roomFor(sh); err == nil {
			err = sh.t.add(key, h, newTAT, KindTAT, nil)
		}
	}
	return res, err
}

// throttle is Throttle with sh, key's shard, locked by the caller.
func (s *Store) throttle(sh *shard, key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, error) {
	if sh.frozen != 0 && s.isFrozen(key) {
		return gcra.Result{}, ErrSlotFrozen
	}
	tat, err := s.tatOf(sh, key, now)
	if err != nil {
		return gcra.Result{}, err
	}
	res, newTAT, store, err := gcra.Decide(r, tat, now)
	sh.note(key, res.Limited, now)
	if store {
		err = s.store(sh, key, newTAT, tat != 0)
	}
	return res, err
}

// tatOf returns key's TAT, zero when absent (or of another kind that has
// expired), or ErrWrongType.
func (s *Store) tatOf(sh *shard, key []byte, now gcra.Instant) (gcra.Instant, error) {
	tat, kind, found := sh.t.get(key)
	if found && kind != KindTAT {
		if s.otherKind(sh, key, tat, now) {
			return 0, ErrWrongType
		}
		return 0, nil
	}
	return tat, nil
}

// store stores a decision's TAT for key in sh, locked, making room first
// for a key that is not there while the memory is over the limit.
func (s *Store) store(sh *shard, key []byte, tat gcra.Instant, found bool) error {
	if !found {
		if err := s.roomFor(sh); err != nil {
			return err
		}
	}
	return sh.t.put(key, tat)
}

// Preview decides as Throttle would and stores nothing; store reports
// whether Throttle would have stored (a change durable mode cannot make
// while the disk fails).
func (s *Store) Preview(key []byte, r gcra.Rate, now gcra.Instant) (res gcra.Result, store bool, err error) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.preview(sh, key, r, now)
}

func (s *Store) preview(sh *shard, key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, bool, error) {
	tat, err := s.tatOf(sh, key, now)
	if err != nil {
		return gcra.Result{}, false, err
	}
	res, _, store, err := gcra.Decide(r, tat, now)
	return res, store, err
}

// Get returns, if key is live at now, when it expires (a TAT key's TAT) and
// its kind. An expired key found here is deleted.
func (s *Store) Get(key []byte, now gcra.Instant) (gcra.Instant, Kind, bool) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.get(sh, key, now)
}

func (s *Store) get(sh *shard, key []byte, now gcra.Instant) (gcra.Instant, Kind, bool) {
	exp, kind, ok := sh.t.get(key)
	if ok && exp <= now {
		sh.t.remove(key)
		s.expired.Add(1)
		return 0, 0, false
	}
	return exp, kind, ok
}

// Delete removes key and reports whether it was live at now.
func (s *Store) Delete(key []byte, now gcra.Instant) bool {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.delete(sh, key, now)
}

func (s *Store) delete(sh *shard, key []byte, now gcra.Instant) bool {
	if sh.frozen != 0 && s.isFrozen(key) {
		return false // its slot moves (Freeze): the server routed the command elsewhere
	}
	exp, _, ok := sh.t.get(key)
	if !ok {
		return false
	}
	sh.t.remove(key)
	if exp <= now {
		s.expired.Add(1)
		return false
	}
	return true
}

// Restore sets key's state as loaded from disk, without recording a change:
// the value came from the backend, so writing it back would be wasted work.
// A KindTAT key's state is its TAT (exp); another kind's is value.
func (s *Store) Restore(key []byte, kind Kind, exp gcra.Instant, value []byte) error {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	log, feed := sh.t.log.on, sh.t.feed.on
	sh.t.log.on, sh.t.feed.on = false, false
	defer func() { sh.t.log.on, sh.t.feed.on = log, feed; sh.t.rehook() }()
	sh.t.rehook()
	return sh.t.set(key, kind, exp, value)
}

// betweenTakeSteps, when set (by tests), runs between a take's steps,
// the shard unlocked.
var betweenTakeSteps func()

// Reserve runs one CL.RESERVE decision (gcra.Reserve) for key at now under
// its shard lock and stores the new TAT when the reservation is made. With
// dry nothing is stored, and stored reports whether it would have been.
func (s *Store) Reserve(key []byte, r gcra.Rate, now gcra.Instant, maxWait time.Duration, dry bool) (res gcra.Reservation, stored bool, err error) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.reserve(sh, key, r, now, maxWait, dry)
}

func (s *Store) reserve(sh *shard, key []byte, r gcra.Rate, now gcra.Instant, maxWait time.Duration, dry bool) (gcra.Reservation, bool, error) {
	if sh.frozen != 0 && !dry && s.isFrozen(key) {
		return gcra.Reservation{}, false, ErrSlotFrozen
	}
	tat, err := s.tatOf(sh, key, now)
	if err != nil {
		return gcra.Reservation{}, false, err
	}
	res, newTAT, store, err := gcra.Reserve(r, tat, now, maxWait)
	if err == nil && !dry {
		sh.note(key, res.Limited, now)
	}
	if !store || err != nil || dry {
		return res, store && err == nil, err
	}
	return res, true, s.store(sh, key, newTAT, tat != 0)
}
