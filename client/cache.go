package client

import (
	"hash/maphash"
	"sync"
)

// refusals is the local refusal cache: for each key the server refused
// recently, its TAT as the server holds it, placed on this process's clock
// no later than it is (tracker.fetch). Any limit and quantity the TAT
// refuses are refused from it with no round trip, until the instant the
// server would allow them; the server tells the cache, through CLIENT
// TRACKING, to forget a key whenever the key changes (tracker), and a key is
// never in the cache unless its node's tracking connection was up when it
// was read and has stayed up since.
//
// It holds at most size keys, in shards by the key's hash, each under its
// own lock and evicting its oldest entry first. A lookup allocates nothing.
type refusals struct {
	shards []refusalShard
	mask   uint64
	seed   maphash.Seed
}

type refusalShard struct {
	mu      sync.Mutex
	entries map[string]*refusal
	// oldest and newest are the ends of the entries' list in the order
	// they were stored, for eviction.
	oldest, newest *refusal
	max            int
	_              [32]byte
}

// refusal is one key's entry. tat is the key's TAT as an instant of the
// process's clock (nanoseconds since the client's start, monotonic), a
// lower bound of the server's, and read when it was read (the spans from
// read are cut for the clocks' rates: Client.cachedRefusal). owner is the
// tracking connection whose invalidations cover it.
type refusal struct {
	key        string
	tat, read  int64
	owner      *tracker
	prev, next *refusal // by age: prev older
}

// cacheShards is how many shards a cache has: a power of two.
const cacheShards = 16

func newRefusals(size int) *refusals {
	c := &refusals{shards: make([]refusalShard, cacheShards), mask: cacheShards - 1, seed: maphash.MakeSeed()}
	per := max(1, size/cacheShards)
	for i := range c.shards {
		c.shards[i].entries = make(map[string]*refusal)
		c.shards[i].max = per
	}
	return c
}

func (c *refusals) shard(key string) *refusalShard {
	return &c.shards[maphash.String(c.seed, key)&c.mask]
}

// get returns key's TAT and when it was read, if it is cached.
func (c *refusals) get(key string) (tat, read int64, ok bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	if e, found := sh.entries[key]; found {
		tat, read, ok = e.tat, e.read, true
	}
	sh.mu.Unlock()
	return tat, read, ok
}

// put caches key's TAT, read at read, owned by t, evicting the shard's
// oldest entry if it is full. It returns how many entries it evicted.
func (c *refusals) put(key string, tat, read int64, t *tracker) int {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.entries[key]; ok {
		e.tat, e.read, e.owner = tat, read, t
		return 0
	}
	evicted := 0
	for len(sh.entries) >= sh.max && sh.oldest != nil {
		sh.unlink(sh.oldest)
		evicted++
	}
	sh.link(&refusal{key: key, tat: tat, read: read, owner: t})
	return evicted
}

// update runs fn on key's TAT (found reports whether it is held) under its
// shard's lock, and stores what fn returns when it says to: the fallback
// limiter's read-modify-write.
func (c *refusals) update(key string, fn func(tat int64, found bool) (int64, bool)) int {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, found := sh.entries[key]
	var tat int64
	if found {
		tat = e.tat
	}
	next, store := fn(tat, found)
	switch {
	case !store:
		return 0
	case found:
		e.tat = next
		return 0
	}
	evicted := 0
	for len(sh.entries) >= sh.max && sh.oldest != nil {
		sh.unlink(sh.oldest)
		evicted++
	}
	sh.link(&refusal{key: key, tat: next})
	return evicted
}

// link adds e as the newest entry, under the shard's lock.
func (sh *refusalShard) link(e *refusal) {
	e.prev = sh.newest
	if sh.newest != nil {
		sh.newest.next = e
	} else {
		sh.oldest = e
	}
	sh.newest = e
	sh.entries[e.key] = e
}

// unlink removes e, under the shard's lock.
func (sh *refusalShard) unlink(e *refusal) {
	delete(sh.entries, e.key)
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.oldest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sh.newest = e.prev
	}
	e.prev, e.next = nil, nil
}

// drop forgets key, and reports whether it was cached.
func (c *refusals) drop(key string) bool {
	sh := c.shard(key)
	sh.mu.Lock()
	e, ok := sh.entries[key]
	if ok {
		sh.unlink(e)
	}
	sh.mu.Unlock()
	return ok
}

// dropExpired forgets key if its TAT is still tat: an entry found useless
// (its TAT passed) by a lookup, unless it was replaced meanwhile.
func (c *refusals) dropExpired(key string, tat int64) {
	sh := c.shard(key)
	sh.mu.Lock()
	if e, ok := sh.entries[key]; ok && e.tat == tat {
		sh.unlink(e)
	}
	sh.mu.Unlock()
}

// dropOwned forgets every key owned by t (its connection was lost, or its
// server flushed), or every key for t nil, and returns how many.
func (c *refusals) dropOwned(t *tracker) int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for e := sh.oldest; e != nil; {
			next := e.next
			if t == nil || e.owner == t {
				sh.unlink(e)
				n++
			}
			e = next
		}
		sh.mu.Unlock()
	}
	return n
}

// len is how many keys are cached.
func (c *refusals) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}
