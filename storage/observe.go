package storage

// An Observer is told of every change of the keyspace as it is made,
// whatever makes it: a decision that stores, a deletion, a key expired
// (swept or found expired), evicted, applied from a master's stream or a
// slot's import, dropped with its slot (DeleteSlot), and every key at once by
// Clear. It is how the server learns which keys its clients' caches must
// forget (Redis's client-side caching, CLIENT TRACKING), wherever the change
// came from: the server's own commands, replication, cluster mode or the rate
// limit service.
//
// Changed runs on the goroutine making the change, under the key's shard
// lock: it must be quick, must not block, and must not call the Store (its
// lock is held). key is a view of the table's memory, valid during the call
// only: what is kept must be copied.
type Observer interface {
	// Changed is called after key was written or deleted.
	Changed(key []byte)
	// Cleared is called after Clear (a Store's or a Txn's) deleted every
	// key, instead of Changed for each; no shard lock is held but a
	// transaction's own. It too must not call the Store.
	Cleared()
}

// observerBox holds an Observer for an atomic.Pointer.
type observerBox struct{ o Observer }

// Observe makes o the store's observer (Observer), replacing the one
// before; nil stops observing. It takes every shard's lock once, so a change
// made after it returns is seen by o. While no observer is set, a decision
// pays nothing for it (table.markDirty's one test covers the change logs
// too).
func (s *Store) Observe(o Observer) {
	s.setObserver(o)
	s.forShards(nil, func(sh *shard) { sh.t.obs = o; sh.t.rehook() })
}

// Observed reports whether the store has an observer.
func (s *Store) Observed() bool { return s.observer.Load() != nil }

func (s *Store) setObserver(o Observer) {
	if o == nil {
		s.observer.Store(nil)
	} else {
		s.observer.Store(&observerBox{o})
	}
}

// cleared tells the observer, if any, that every key was deleted.
func (s *Store) cleared() {
	if b := s.observer.Load(); b != nil {
		b.o.Cleared()
	}
}
