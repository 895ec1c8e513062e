package storage

import (
	"context"
	"time"

	"github.com/redcell/redcell/gcra"
)

// Active expiry defaults. With 1M keys over 32 shards a full pass takes
// about 3 s at these settings, and a pass holds a shard lock for a few
// microseconds.
const (
	DefaultExpiryInterval = 100 * time.Millisecond
	DefaultExpiryBatch    = 1000
)

// RunExpiry calls ExpireSome(now(), perShard) every interval until ctx is
// done, so that keys nobody touches again still free their memory. A zero
// interval returns at once: tests drive ExpireSome themselves.
func (s *Store) RunExpiry(ctx context.Context, interval time.Duration, perShard int, now func() time.Time) {
	every(ctx, interval, func() { s.ExpireSome(gcra.InstantOf(now()), perShard) })
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
