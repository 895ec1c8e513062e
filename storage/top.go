package storage

import (
	"cmp"
	"slices"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/top"
)

// The most limited keys (CL.TOP): each shard keeps a top.Sketch that its
// decisions tell under the lock they hold, so that every limiter and every
// front (RESP, the RLS) feeds it from one place, and the hot path pays
// top.Sketch.Quick, inlined.

// note tells sh's sketch, sh locked, of a decision on key at now: every
// limited one, and the allowed ones of the keys it tracks. Not of a dry
// decision (nothing was decided) nor a peek.
func (sh *shard) note(key []byte, limited bool, now gcra.Instant) {
	h := keyHash(key)
	if !sh.top.Quick(h, limited, now) {
		sh.top.Note(key, h, limited, now)
	}
}

// Top returns at most n of the keys limited most over about the last
// minute at now (top.Generation), most limited first: this node's view,
// merged from its shards' sketches.
func (s *Store) Top(n int, now gcra.Instant) []top.Entry { return s.top(nil, n, now) }

// Top is Store.Top within the transaction: the shards it holds are read
// without locking them again (CL.TOP inside MULTI/EXEC deadlocked on them).
func (tx *Txn) Top(n int, now gcra.Instant) []top.Entry { return tx.s.top(tx, n, now) }

func (s *Store) top(tx *Txn, n int, now gcra.Instant) []top.Entry {
	var out []top.Entry
	s.forShards(tx, func(sh *shard) { out = sh.top.AppendTo(out, now) })
	return best(out, n)
}

// best sorts the shards' entries, most limited first (then by key), and
// keeps n.
func best(out []top.Entry, n int) []top.Entry {
	slices.SortFunc(out, func(a, b top.Entry) int {
		if c := cmp.Compare(b.Limited, a.Limited); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out[:min(n, len(out))]
}

// TopMemory is the bytes the sketches of CL.TOP take: fixed, whatever the
// keys (top.Size a shard).
func (s *Store) TopMemory() int64 { return int64(len(s.shards) * top.Size) }
