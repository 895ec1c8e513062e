package server

import (
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// countFamily is CL.COUNT, for the command table (newCommandTable).
func countFamily() []*command {
	return []*command{limiterCommand("cl.count", -3, 4, 3, "generic", "0.1.0", "O(1)",
		"Counts hits in a fixed window of window seconds aligned to the epoch, over-limit hits included, as envoyproxy/ratelimit's INCRBY does.",
		cmdCount)}
}

// CL.COUNT key window [hits]
//
// Adds hits (default 1; 0 reads) to the count of the window of window
// seconds, aligned to the Unix epoch, that now falls in, and replies the
// count after them and the milliseconds until the window ends. Every hit
// counts, whatever the count: it is the fixed window of envoyproxy/ratelimit
// with Redis (INCRBY, then EXPIRE), kept under one key instead of a key per
// window. The key is a window of PRECISION 1, so CL.WINDOW key limit window
// 0 PRECISION 1 reads it; the rate limit service (package rls) decides its
// fixed-window rules with it, and forwards them to a key's node with it.
func cmdCount(c *client, args [][]byte, now time.Time) {
	seconds, ok := parseInt(args[2])
	if !ok {
		c.writeError(errWindowNotInteger)
		return
	}
	hits := int64(1)
	if len(args) == 4 {
		if hits, ok = parseInt(args[3]); !ok {
			c.writeError(errQuantityNotInteger)
			return
		}
	}
	spec, err := window.NewCountSpec(seconds, hits)
	if err != nil {
		c.writeError(windowError(err))
		return
	}
	var t window.Tally
	if !c.decide(args[1], hits, windowError, func(dry bool) (stored bool, err error) {
		t, stored, err = c.ks.Count(args[1], spec, gcra.InstantOf(now), dry)
		return stored, err
	}) {
		return
	}
	c.writeArray(2)
	c.writeInt(t.Count)
	c.writeInt(int64((t.ResetAfter + time.Millisecond - 1) / time.Millisecond))
}
