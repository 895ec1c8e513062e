package window

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
)

// The designs users write on Redis today, each written plainly as its Redis
// commands do it, and CL.WINDOW deciding as each on random traffic of one
// action a call (the seed designs have no quantities).

// zsetLog is the sliding log in a sorted set: ZREMRANGEBYSCORE key -inf
// now-window, ZCARD key, and ZADD key now member when under the limit.
type zsetLog map[int]gcra.Instant // member -> score

func (z zsetLog) call(member int, limit int64, window time.Duration, now gcra.Instant) (allowed bool, remaining int64) {
	for m, score := range z { // ZREMRANGEBYSCORE -inf (now-window]
		if score <= now-gcra.Instant(window) {
			delete(z, m)
		}
	}
	card := int64(len(z)) // ZCARD
	if card >= limit {
		return false, 0
	}
	z[member] = now // ZADD
	return true, limit - card - 1
}

// incrCounter is the fixed window of INCR key:<window index> with EXPIRE on
// the first increment: allowed while the count is at most the limit. Denied
// calls increment too, as INCR does.
type incrCounter map[int64]int64

func (c incrCounter) call(limit int64, window time.Duration, now gcra.Instant) bool {
	idx := int64(now) / int64(window)
	for k := range c { // EXPIRE: the key of a past window is gone
		if k != idx {
			delete(c, k)
		}
	}
	c[idx]++ // INCR
	return c[idx] <= limit
}

// subRing is the sliding window of m sub-window counters in a hash: HINCRBY
// key <sub-window index> 1 when the sum of the last m fields is under the
// limit (HGETALL, sum, HDEL the old ones).
type subRing map[int64]int64

func (r subRing) call(limit, m int64, window time.Duration, now gcra.Instant) bool {
	sub := int64(window) / m
	cur := int64(now) / sub
	var sum int64
	for field, v := range r {
		if field <= cur-m {
			delete(r, field) // HDEL
			continue
		}
		sum += v
	}
	if sum >= limit {
		return false
	}
	r[cur]++ // HINCRBY
	return true
}

// randomCalls calls fn on random traffic: bursts at one instant, gaps of a
// fraction of the window, pauses longer than it, and calls exactly one
// window after an earlier one, at the edge where it leaves.
func randomCalls(r *rand.Rand, window time.Duration, n int, fn func(now gcra.Instant)) {
	now := t0 + gcra.Instant(r.Int64N(int64(time.Hour)))
	var past []gcra.Instant
	for range n {
		past = append(past, now)
		switch r.IntN(7) {
		case 6:
			now = max(now, past[r.IntN(len(past))]+gcra.Instant(window))
		case 0, 1: // the same instant
		case 2:
			now += gcra.Instant(r.Int64N(int64(time.Millisecond)))
		case 3, 4:
			now += gcra.Instant(r.Int64N(int64(window) / 4))
		default:
			now += gcra.Instant(r.Int64N(int64(window) * 2))
		}
		fn(now)
	}
}

func TestExactLogDecidesAsTheZsetLog(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		limit, window := 1+r.Int64N(20), time.Duration(1+r.Int64N(30))*time.Second
		z := zsetLog{}
		s := spec(t, limit, int64(window/time.Second), 1, 0)
		var state []byte
		call := 0
		randomCalls(r, window, 300, func(now gcra.Instant) {
			call++
			allowed, remaining := z.call(call, limit, window, now)
			res, next, _, store := Decide(s, state, now, nil)
			if res.Limited == allowed || res.Remaining != remaining {
				t.Fatalf("trial %d call %d (limit %d window %v): CL.WINDOW limited %v remaining %d, zset allowed %v remaining %d",
					trial, call, limit, window, res.Limited, res.Remaining, allowed, remaining)
			}
			if store {
				state = append(state[:0], next...)
			}
		})
	}
}

func TestPrecisionOneDecidesAsINCRAndEXPIRE(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		limit, window := 1+r.Int64N(20), time.Duration(1+r.Int64N(30))*time.Second
		c := incrCounter{}
		s := spec(t, limit, int64(window/time.Second), 1, 1)
		var state []byte
		call := 0
		randomCalls(r, window, 300, func(now gcra.Instant) {
			call++
			allowed := c.call(limit, window, now)
			res, next, _, store := Decide(s, state, now, nil)
			if res.Limited == allowed {
				t.Fatalf("trial %d call %d (limit %d window %v): CL.WINDOW limited %v, INCR allowed %v", trial, call, limit, window, res.Limited, allowed)
			}
			if store {
				state = append(state[:0], next...)
			}
		})
	}
}

func TestPrecisionMDecidesAsTheSubWindowRing(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 300 {
		limit, window, m := 1+r.Int64N(20), time.Duration(1+r.Int64N(30))*time.Second, 1+r.Int64N(12)
		ring := subRing{}
		s := spec(t, limit, int64(window/time.Second), 1, m)
		var state []byte
		call := 0
		randomCalls(r, window, 300, func(now gcra.Instant) {
			call++
			allowed := ring.call(limit, m, window, now)
			res, next, _, store := Decide(s, state, now, nil)
			if res.Limited == allowed {
				t.Fatalf("trial %d call %d (limit %d window %v m %d): CL.WINDOW limited %v, ring allowed %v", trial, call, limit, window, m, res.Limited, allowed)
			}
			if store {
				state = append(state[:0], next...)
			}
		})
	}
}
