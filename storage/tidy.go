package storage

import (
	"context"
	"log/slog"
	"time"

	"github.com/redcell/redcell/internal/contain"
)

// Tidying gives a store at rest the garbage of its arenas back. A table
// compacts an arena on its own only once garbage is half of it
// (table.maybeCompactValues, table.removeAt): a lower bound there made a
// write-heavy fill pay for compactions it did not need (at a quarter, a fill
// of a million leases ran 14% slower, each compaction walking the whole
// table). So up to half an arena can be garbage when writing stops, and it
// stays so while nothing moves: a million leases took 19 B each for their
// 12 B of state. Likewise the room of a blob whose state shrank (a key's
// holders gone): no write gives it back, a compaction does. Tidy, off the
// command path, compacts an arena whose garbage is more than tidyShare of
// it in a table that made less than quietShare of it since the last look:
// a store being filled is left to its own compactions, one at rest gets its
// memory back within two looks. After a compaction an arena's garbage has
// to grow by an eighth of it in steps of under a 64th a look before the
// next, so tidying copies at most an eighth of the arenas' bytes a look.
const (
	// DefaultTidyInterval is how often RunTidy looks.
	DefaultTidyInterval = time.Second
	// tidyShare is the share of an arena's bytes in garbage past which a
	// quiet table compacts it.
	tidyShare = 8 // garbage > used/tidyShare
	// quietShare bounds the garbage a table may make between two looks and
	// still count as quiet.
	quietShare = 64 // growth < used/quietShare
)

// Tidy looks once at every shard's arenas (table.tidy), each shard under
// its own lock, and returns the bytes it dropped.
func (s *Store) Tidy() int { return s.tidy(false) }

// tidy is Tidy; with pressed, an arena past tidyShare is compacted even in
// a table being written (the memory watch, over the limit: garbage counts
// toward it).
func (s *Store) tidy(pressed bool) int {
	freed := 0
	for i := range s.shards {
		s.shards[i].with(func(sh *shard) { freed += sh.t.tidy(pressed) })
	}
	return freed
}

// RunTidy calls Tidy every interval until ctx is done. A panic in a look is
// recorded (contain.Run) and the next look runs.
func (s *Store) RunTidy(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	every(ctx, interval, func() {
		_ = contain.Run(logger, "tidy", "arena tidying", func() error {
			s.Tidy()
			return nil
		})
	})
}

// tidy compacts each of the table's arenas that is worth it (worthTidying)
// and returns the bytes dropped: garbage, and in the value arena the room
// states that shrank no longer need (table.valSpare), which counts as
// garbage here. Only arenas mapped outside the Go heap are tidied: their
// pages go back to the system when the old region is freed, where a heap
// region's would wait for the collector, and a heap region is small anyway
// (under mmapThreshold).
func (t *table) tidy(pressed bool) int {
	freed := 0
	if t.mem.arena.mapped && worthTidying(len(t.arena), t.garbage, t.tidyMark[0], pressed) {
		freed += t.garbage
		t.compactArena(max(minArena, 2*(len(t.arena)-t.garbage)))
	}
	if t.mem.vals.mapped && worthTidying(len(t.vals), t.valGarbage+t.valSpare, t.tidyMark[1], pressed) {
		freed += t.valGarbage + t.valSpare
		t.compactValues(max(minArena, 2*(len(t.vals)-t.valGarbage)))
	}
	t.tidyMark = [2]int{t.garbage, t.valGarbage + t.valSpare}
	return freed
}

// worthTidying reports whether an arena of used bytes, garbage of them
// garbage, mark at the last look, is to be compacted now: it is past
// tidyShare garbage and its table has been quiet since (made less than
// quietShare of it), or pressed. A compaction resets the garbage, so mark
// can be more than garbage: that is quiet too.
func worthTidying(used, garbage, mark int, pressed bool) bool {
	return used >= compactArena && garbage > used/tidyShare && (pressed || garbage-mark < used/quietShare)
}
