package storage

import (
	"hash/maphash"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// Keys of the boxed kinds (windows), and the primitive every kind but the
// TAT is decided through: update, which runs a decision on a key's state
// under its shard lock and stores what the decision returns.

// putBoxed stores a boxed kind's state for key, creating it if needed (the
// key must be absent or of that kind).
func (t *table) putBoxed(key []byte, kind Kind, exp gcra.Instant, value []byte) error {
	h := hashKey(key)
	p := t.lookupHashed(key, h)
	if p < 0 {
		return t.add(key, h, exp, kind, value)
	}
	t.slots[p].exp = exp
	t.setValue(p, value)
	return nil
}

// decision is one decision on a boxed state: given the key's state (nil for
// an absent key) it returns the new state (a view the store copies; empty:
// the key is deleted), when it expires, and whether to store it.
type decision func(state []byte) (next []byte, exp gcra.Instant, store bool)

// update runs decide on key's state of kind, sh locked: an absent key, or
// one of another kind that has expired, has a nil state; one of another kind
// that is live is ErrWrongType. With dry, nothing is stored, and update
// reports whether it would have.
func (s *Store) update(sh *shard, key []byte, kind Kind, now gcra.Instant, dry bool, decide decision) (stored bool, err error) {
	if sh.frozen != 0 && !dry && s.isFrozen(key) {
		return false, ErrSlotFrozen
	}
	t := &sh.t
	h := hashKey(key)
	i := t.lookupHashed(key, h) // the key's slot, found once
	var state []byte
	if i >= 0 {
		switch e := &t.slots[i]; {
		case e.kind() != kind && e.exp > now:
			return false, ErrWrongType
		case e.exp <= now:
			t.removeAt(i)
			s.expired.Add(1)
			i = -1
		default:
			state = t.value(e)
		}
	}
	next, newExp, store := decide(state)
	if !store || dry {
		return store, nil
	}
	if len(next) == 0 { // a state that holds nothing: the key goes
		if i < 0 {
			return false, nil
		}
		t.removeAt(i)
		return true, nil
	}
	if i >= 0 {
		t.slots[i].exp = newExp
		t.setValue(i, next)
		return true, nil
	}
	if err := s.roomFor(sh); err != nil {
		return false, err
	}
	return true, t.add(key, h, newExp, kind, next)
}

// Window runs one CL.WINDOW decision for key at now under its shard lock and
// stores the new state when the decision says to. With dry nothing is
// stored, and stored reports whether it would have been (durable mode while
// the disk fails). A key holding a TAT is ErrWrongType.
func (s *Store) Window(key []byte, spec window.Spec, now gcra.Instant, dry bool) (res window.Result, stored bool, err error) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.window(sh, key, spec, now, dry)
}

func (s *Store) window(sh *shard, key []byte, spec window.Spec, now gcra.Instant, dry bool) (res window.Result, stored bool, err error) {
	stored, err = s.update(sh, key, KindWindow, now, dry, func(state []byte) ([]byte, gcra.Instant, bool) {
		var next []byte
		var exp gcra.Instant
		var store bool
		res, next, exp, store = window.Decide(spec, state, now, sh.scratch[:0])
		if cap(next) <= maxScratch {
			sh.scratch = next // reused by the next decision on this shard
		}
		return next, exp, store
	})
	if err == nil && !dry {
		sh.note(key, res.Limited, now)
	}
	return res, stored, err
}

// Count runs one count (window.Count: a fixed window that counts every hit,
// envoyproxy/ratelimit's) for key at now under its shard lock; its state is
// a window's, so the key is of KindWindow. With dry nothing is stored, and
// stored reports whether it would have been. A key holding a TAT is
// ErrWrongType.
func (s *Store) Count(key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (t window.Tally, stored bool, err error) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.count(sh, key, spec, now, dry)
}

func (s *Store) count(sh *shard, key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (t window.Tally, stored bool, err error) {
	stored, err = s.update(sh, key, KindWindow, now, dry, func(state []byte) ([]byte, gcra.Instant, bool) {
		var next []byte
		var exp gcra.Instant
		var store bool
		t, next, exp, store = window.Count(spec, state, now, sh.scratch[:0])
		if cap(next) <= maxScratch {
			sh.scratch = next
		}
		return next, exp, store
	})
	if err == nil && !dry && spec.Limit > 0 {
		sh.note(key, t.Count > spec.Limit, now)
	}
	return t, stored, err
}

// maxScratch bounds the decision buffer a shard keeps between decisions.
const maxScratch = 64 << 10

// Fingerprint identifies key's state at now, for WATCH: it changes whenever
// the state does (a TAT only grows while its key lives; a boxed state is
// hashed), and ok is false when the key is absent.
func (s *Store) Fingerprint(key []byte, now gcra.Instant) (fp uint64, ok bool) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.fingerprint(sh, key, now)
}

var fingerprintSeed = maphash.MakeSeed()

func (s *Store) fingerprint(sh *shard, key []byte, now gcra.Instant) (uint64, bool) {
	exp, kind, ok := s.get(sh, key, now)
	if !ok {
		return 0, false
	}
	if kind == KindTAT {
		return uint64(exp), true
	}
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	h.WriteByte(byte(kind))
	_, _ = h.Write(sh.t.value(&sh.t.slots[sh.t.lookup(key)]))
	return h.Sum64() ^ uint64(exp), true
}

// Value returns a copy of key's boxed state and its kind, if the key is live
// at now: for MEMORY USAGE, OBJECT and the tests.
func (s *Store) Value(key []byte, now gcra.Instant) (Kind, []byte, bool) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, kind, ok := s.get(sh, key, now)
	if !ok || kind == KindTAT {
		return kind, nil, ok
	}
	return kind, append([]byte(nil), sh.t.value(&sh.t.slots[sh.t.lookup(key)])...), true
}

// otherKind handles a key of another kind than a decision wants: if it has
// expired it is deleted and reported absent (false), else it is there and
// the decision answers ErrWrongType (true).
func (s *Store) otherKind(sh *shard, key []byte, exp, now gcra.Instant) bool {
	if exp > now {
		return true
	}
	sh.t.remove(key)
	s.expired.Add(1)
	return false
}
