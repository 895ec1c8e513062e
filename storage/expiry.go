package storage

import (
	"context"
	"log/slog"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
)

// Active expiry frees the keys nobody touches again, as Redis's
// activeExpireCycle does, adaptively: every tick each shard examines a
// batch of keys from where it stopped; a shard whose batch found many
// expired (ExpiryStaleShare or more) is likely to hold more, and examines
// another, and so on while the tick's CPU budget lasts. When few keys
// expire a tick costs one batch a shard; when a million expire in the same
// second the sweep runs at its budget until they are gone. Each batch holds
// its shard's lock alone: tens of microseconds, a few milliseconds when a
// removal shrinks a large table, so decisions on other keys never wait
// long. Measured (BenchmarkExpiryOfAMillionKeys, 2 cores): a million keys
// expiring in the same second are gone 2.7-2.8 s later, in 27 ticks using
// 46% of a core meanwhile, with the slowest decision on another key 8-12
// ms; with nothing expiring a tick over a million keys costs 46 us, 0.05%
// of a core.
const (
	// DefaultExpiryInterval is how often a tick runs.
	DefaultExpiryInterval = 100 * time.Millisecond
	// DefaultExpiryBatch is the keys one shard examines in one batch.
	DefaultExpiryBatch = 256
	// DefaultExpiryBudget is the share of a core a tick may spend (25%,
	// Redis's ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC): at most a quarter of
	// the interval.
	DefaultExpiryBudget = DefaultExpiryInterval / 4
	// ExpiryStaleShare is the share of a batch's keys found expired past
	// which its shard examines another batch in the same tick, as Redis's
	// ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE: 10%.
	ExpiryStaleShare = 0.10
)

// ExpireCycle runs one tick of active expiry at now: each shard examines
// perShard keys (ExpireSome's batch); then, while over leaves time, each
// shard whose last batch found ExpiryStaleShare or more of its keys expired
// examines another, round after round, until none does. over reports
// whether the tick's budget is spent: RunExpiry's is a span of the real
// clock, a test's a count of batches. It returns how many keys it deleted.
func (s *Store) ExpireCycle(now gcra.Instant, perShard int, over func() bool) int {
	hot := make([]bool, len(s.shards))
	total := 0
	for round := 0; ; round++ {
		any := false
		for i := range s.shards {
			if round > 0 && !hot[i] {
				continue
			}
			examined, expired := s.expireShard(i, now, perShard)
			total += expired
			hot[i] = examined > 0 && float64(expired) >= ExpiryStaleShare*float64(examined)
			any = any || hot[i]
			if round > 0 && over() {
				return total
			}
		}
		if !any || over() {
			return total
		}
	}
}

// ExpiryOptions configure RunExpiry. The zero value takes every default.
type ExpiryOptions struct {
	// Interval is how often a tick runs. The default is
	// DefaultExpiryInterval; negative turns active expiry off (tests drive
	// ExpireCycle themselves).
	Interval time.Duration
	// Budget bounds a tick's time on the real clock. The default is a
	// quarter of Interval (DefaultExpiryBudget for the default interval).
	Budget time.Duration
	// Batch is the keys a shard examines at once. The default is
	// DefaultExpiryBatch.
	Batch int
	// Now reads the clock the keys' expiry is compared with. The default
	// is time.Now.
	Now func() time.Time
	// Logger receives a panic recovered in a tick (contain.Run). The
	// default discards it.
	Logger *slog.Logger
}

// RunExpiry runs ExpireCycle every interval until ctx is done, each tick
// within its budget of the real clock, so that keys nobody touches again
// free their memory soon after they expire. A panic in a tick is recorded
// (contain.Run) and the next tick runs.
func (s *Store) RunExpiry(ctx context.Context, opts ExpiryOptions) {
	if opts.Interval == 0 {
		opts.Interval = DefaultExpiryInterval
	}
	if opts.Budget <= 0 {
		opts.Budget = opts.Interval / 4
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultExpiryBatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	every(ctx, opts.Interval, func() {
		_ = contain.Run(opts.Logger, "expiry", "expiry", func() error {
			start := time.Now()
			s.ExpireCycle(gcra.InstantOf(opts.Now()), opts.Batch, func() bool { return time.Since(start) >= opts.Budget })
			return nil
		})
	})
}

// every calls fn each interval until ctx is done; a zero or negative
// interval returns at once, which turns the background work off.
func every(ctx context.Context, interval time.Duration, fn func()) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
