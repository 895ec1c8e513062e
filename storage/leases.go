package storage

import (
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
)

// Keys of KindLeases: CL.ACQUIRE, CL.RELEASE, CL.RENEW and CL.LEASES, each
// one decision of package lease on the key's state under its shard lock
// (update), which is what keeps a key's leases at most its limit whatever
// the connections. A key of another kind that is live is ErrWrongType.

// Acquire runs one CL.ACQUIRE for token on key at now. With dry nothing is
// stored, and stored reports whether it would have been.
func (s *Store) Acquire(key []byte, spec lease.Spec, token []byte, now gcra.Instant, dry bool) (res lease.Result, stored bool, err error) {
	s.shardOf(key).with(func(sh *shard) { res, stored, err = s.acquire(sh, key, spec, token, now, dry) })
	return res, stored, err
}

func (s *Store) acquire(sh *shard, key []byte, spec lease.Spec, token []byte, now gcra.Instant, dry bool) (res lease.Result, stored bool, err error) {
	stored, err = s.update(sh, key, KindLeases, now, dry, func(state []byte) ([]byte, gcra.Instant, bool) {
		var next []byte
		var exp gcra.Instant
		var store bool
		res, next, exp, store = lease.Acquire(spec, state, token, now, sh.scratch[:0])
		sh.keepScratch(next)
		return next, exp, store
	})
	if err == nil && !dry {
		sh.note(key, res.Limited, now)
	}
	return res, stored, err
}

// Release runs one CL.RELEASE of token on key at now: held reports whether
// the lease was held. With dry nothing is stored.
func (s *Store) Release(key, token []byte, now gcra.Instant, dry bool) (held bool, err error) {
	s.shardOf(key).with(func(sh *shard) { held, err = s.release(sh, key, token, now, dry) })
	return held, err
}

func (s *Store) release(sh *shard, key, token []byte, now gcra.Instant, dry bool) (held bool, err error) {
	held, err = s.update(sh, key, KindLeases, now, dry, func(state []byte) ([]byte, gcra.Instant, bool) {
		found, next, exp := lease.Release(state, token, now, sh.scratch[:0])
		sh.keepScratch(next)
		return next, exp, found
	})
	return held, err
}

// Renew runs one CL.RENEW of token on key at now, for d from now: renewed
// reports whether the lease was held. With dry nothing is stored.
func (s *Store) Renew(key, token []byte, d time.Duration, now gcra.Instant, dry bool) (renewed bool, err error) {
	s.shardOf(key).with(func(sh *shard) { renewed, err = s.renew(sh, key, token, d, now, dry) })
	return renewed, err
}

func (s *Store) renew(sh *shard, key, token []byte, d time.Duration, now gcra.Instant, dry bool) (renewed bool, err error) {
	renewed, err = s.update(sh, key, KindLeases, now, dry, func(state []byte) ([]byte, gcra.Instant, bool) {
		found, next, exp := lease.Renew(state, token, d, now, sh.scratch[:0])
		sh.keepScratch(next)
		return next, exp, found
	})
	return renewed, err
}

// Leases appends the leases held on key at now to held, soonest expiry
// first; an absent key holds none.
func (s *Store) Leases(key []byte, now gcra.Instant, held []lease.Held) (out []lease.Held, err error) {
	s.shardOf(key).with(func(sh *shard) { out, err = s.leases(sh, key, now, held) })
	return out, err
}

func (s *Store) leases(sh *shard, key []byte, now gcra.Instant, held []lease.Held) ([]lease.Held, error) {
	exp, kind, ok := s.get(sh, key, now)
	switch {
	case !ok:
		return held, nil
	case kind != KindLeases:
		if s.otherKind(sh, key, exp, now) {
			return held, ErrWrongType
		}
		return held, nil
	}
	return lease.List(sh.t.value(&sh.t.slots[sh.t.lookup(key)]), now, held), nil
}

// keepScratch keeps next, a decision's new state built in sh.scratch, as
// the buffer the shard's next decision builds in, unless it grew too large.
func (sh *shard) keepScratch(next []byte) {
	if cap(next) <= maxScratch {
		sh.scratch = next
	}
}

func (tx *Txn) Acquire(key []byte, spec lease.Spec, token []byte, now gcra.Instant, dry bool) (res lease.Result, stored bool, err error) {
	tx.withShard(key, func(sh *shard) { res, stored, err = tx.s.acquire(sh, key, spec, token, now, dry) })
	return res, stored, err
}

func (tx *Txn) Release(key, token []byte, now gcra.Instant, dry bool) (held bool, err error) {
	tx.withShard(key, func(sh *shard) { held, err = tx.s.release(sh, key, token, now, dry) })
	return held, err
}

func (tx *Txn) Renew(key, token []byte, d time.Duration, now gcra.Instant, dry bool) (renewed bool, err error) {
	tx.withShard(key, func(sh *shard) { renewed, err = tx.s.renew(sh, key, token, d, now, dry) })
	return renewed, err
}

func (tx *Txn) Leases(key []byte, now gcra.Instant, held []lease.Held) (out []lease.Held, err error) {
	tx.withShard(key, func(sh *shard) { out, err = tx.s.leases(sh, key, now, held) })
	return out, err
}
