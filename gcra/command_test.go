package gcra

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func commandRate(t *testing.T, maxBurst, tokens int64, period float64, count int64) Rate {
	t.Helper()
	r, err := NewCommandRate(maxBurst, tokens, period, count)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Redis's GCRA command: sub-second periods, durations rounded up.
func TestCommandRateSubSecondPeriods(t *testing.T) {
	// 1 token every half second, burst of 3.
	r := commandRate(t, 2, 1, 0.5, 1)
	if r.EmissionInterval != 500*time.Millisecond || r.Limit != 3 {
		t.Fatalf("rate %+v", r)
	}
	var tat Instant
	for i, want := range [][5]int64{
		{0, 3, 2, -1, 1}, // 0.5 s to full: rounded up
		{0, 3, 1, -1, 1}, // 1.0 s
		{0, 3, 0, -1, 2}, // 1.5 s
		{1, 3, 0, 1, 2},  // retry in 0.5 s: 1
	} {
		res, next, store, err := Decide(r, tat, t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.IntsCeil(); got != want {
			t.Fatalf("call %d: %v want %v", i, got, want)
		}
		if store {
			tat = next
		}
	}
	// A third of a second per token: rounded to the nanosecond.
	if r := commandRate(t, 0, 3, 1, 1); r.EmissionInterval != 333333333 {
		t.Fatalf("1/3 s = %d ns", r.EmissionInterval)
	}
	// Fractional periods below a nanosecond per token are one nanosecond.
	if r := commandRate(t, 0, 1<<40, 0.000001, 1); r.EmissionInterval != 1 {
		t.Fatalf("tiny interval = %d", r.EmissionInterval)
	}
}

// GCRA and CL.THROTTLE share the TAT: mixed on a key they count each
// other's actions.
func TestCommandRateAndThrottleShareTheTAT(t *testing.T) {
	g := commandRate(t, 4, 1, 1, 1)
	c, _ := NewRate(4, 1, 1, 1)
	var tat Instant
	for i, r := range []Rate{g, c, g, c, g} {
		res, next, store, _ := Decide(r, tat, t0)
		if res.Limited || res.Remaining != int64(3-i)+1 {
			t.Fatalf("call %d: %+v", i, res)
		}
		tat = next
		_ = store
	}
	res, _, _, _ := Decide(c, tat, t0)
	if !res.Limited {
		t.Fatal("the sixth call, whichever command, is limited")
	}
}

func TestCommandRateOverflow(t *testing.T) {
	if _, err := NewCommandRate(1, 1, 86400, 200000000000); err != ErrOverflowTokens {
		t.Fatalf("TOKENS overflow: %v", err)
	}
	if _, err := NewCommandRate(200000000000, 1, 86400, 1); err != ErrOverflowBurst {
		t.Fatalf("max_burst overflow: %v", err)
	}
	if r, err := NewCommandRate(1<<62, 1, 1e-9, 1); err != nil || r.Limit != 1<<62+1 {
		t.Fatalf("a large burst of tiny intervals: %+v %v", r, err)
	}
}

// A continuous token bucket, written plainly in integer nanoseconds: a
// capacity of b tokens, starting full, refilled at r tokens a second, a
// call charging n. Spring Cloud Gateway's script and Guava's SmoothBursty
// are this, in floats.
type tokenBucket struct {
	perToken int64 // nanoseconds to refill one token: 1e9/r
	capacity int64 // b tokens, in nanoseconds of refill
	level    int64 // tokens held, in nanoseconds of refill
	last     Instant
}

func (b *tokenBucket) take(n int64, now Instant) [5]int64 {
	if now > b.last {
		b.level = min(b.capacity, b.level+int64(now-b.last))
		b.last = now
	}
	need := n * b.perToken
	limit := b.capacity / b.perToken
	if need > b.capacity {
		return [5]int64{1, limit, b.level / b.perToken, -1, Seconds(time.Duration(b.capacity - b.level))}
	}
	if b.level >= need {
		b.level -= need
		return [5]int64{0, limit, b.level / b.perToken, -1, Seconds(time.Duration(b.capacity - b.level))}
	}
	return [5]int64{1, limit, b.level / b.perToken, Seconds(time.Duration(need - b.level)), Seconds(time.Duration(b.capacity - b.level))}
}

// The token bucket and CL.THROTTLE key b-1 r 1 n decide identically on
// thousands of random calls, whenever 1e9/r is a whole number of
// nanoseconds (the mapping in docs/commands.md, "The token bucket and Guava,
// mapped").
func TestTokenBucketEqualsThrottle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rates := []int64{1, 2, 4, 5, 8, 10, 16, 20, 25, 50, 100, 1000, 1_000_000}
	for trial := 0; trial < 300; trial++ {
		capacity, rate := 1+rng.Int64N(30), rates[rng.IntN(len(rates))]
		b := &tokenBucket{perToken: 1e9 / rate, capacity: capacity * (1e9 / rate), last: t0}
		b.level = b.capacity
		var tat Instant
		now := t0
		for call := 0; call < 200; call++ {
			now += Instant(rng.Int64N(3 * b.perToken))
			n := rng.Int64N(capacity + 2)
			if n == 0 {
				n = 1
			}
			r, err := NewRate(capacity-1, rate, 1, n)
			if err != nil {
				t.Fatal(err)
			}
			res, next, store, _ := Decide(r, tat, now)
			if got, want := res.Ints(), b.take(n, now); got != want {
				t.Fatalf("trial %d call %d (capacity %d rate %d n %d): throttle %v, bucket %v", trial, call, capacity, rate, n, got, want)
			}
			if store {
				tat = next
			}
		}
	}
}

// FuzzCommandRate: for any GCRA arguments within Redis's ranges,
// NewCommandRate either reports an overflow or returns a rate whose products
// are exact, and deciding on it keeps 0 <= remaining <= limit, retry_after
// -1 exactly when allowed or when TOKENS is above the burst.
func FuzzCommandRate(f *testing.F) {
	f.Add(int64(9), int64(5), 0.5, int64(1), int64(0), int64(0))
	f.Add(int64(200000000), int64(1), 86400.0, int64(1), int64(0), int64(0))
	f.Add(int64(0), int64(3), 1e-9, int64(7), int64(5), int64(1e9))
	f.Fuzz(func(t *testing.T, maxBurst, tokens int64, period float64, count, tatOffset, nowOffset int64) {
		maxBurst, tokens, count = abs(maxBurst), 1+abs(tokens%math.MaxInt64), 1+abs(count%math.MaxInt64)
		if !(period > 0 && period < 1e12) {
			return // the server refuses it before
		}
		r, err := NewCommandRate(maxBurst, tokens, period, count)
		if err != nil {
			if err != ErrOverflowTokens && err != ErrOverflowBurst {
				t.Fatalf("NewCommandRate(%d, %d, %v, %d): %v", maxBurst, tokens, period, count, err)
			}
			return
		}
		ei := int64(r.EmissionInterval)
		if ei < 1 || int64(r.Tolerance)/ei != r.Limit || int64(r.Tolerance)%ei != 0 || int64(r.Increment) != ei*count {
			t.Fatalf("NewCommandRate(%d, %d, %v, %d) = %+v: inexact products", maxBurst, tokens, period, count, r)
		}
		if want := min(maxBurst, math.MaxInt64-1) + 1; r.Limit != want {
			t.Fatalf("limit %d want %d", r.Limit, want)
		}
		now := t0 + Instant(nowOffset%(1<<61))
		tat := now + Instant(tatOffset%(1<<61))
		res, _, _, err := Decide(r, tat, now)
		if err != nil {
			return // the new TAT would overflow: the server reports it
		}
		v := res.IntsCeil()
		if v[2] < 0 || v[2] > v[1] || (v[3] == -1) != (!res.Limited || r.Increment > r.Tolerance) || v[4] < 0 {
			t.Fatalf("rate %+v tat %d now %d: reply %v", r, tat, now, v)
		}
	})
}
