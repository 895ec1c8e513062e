package gcra

import (
	"math/rand/v2"
	"testing"
	"time"
)

// CL.RESERVE under a burst of 100 calls at one instant: the first max_burst+1
// act at once, the next wait ei, 2ei, ... up to MAXWAIT, the rest are
// refused; and the acting times (call time + wait) are spaced exactly ei
// apart after the burst.
func TestReserveShapesABurst(t *testing.T) {
	const maxWait = 2 * time.Second
	r, _ := NewRate(4, 10, 1, 1) // 10 a second: ei 100 ms; burst of 5
	var tat Instant
	var acts []Instant
	refused := 0
	for i := 0; i < 100; i++ {
		res, next, store, err := Reserve(r, tat, t0, maxWait)
		if err != nil {
			t.Fatal(err)
		}
		if res.Limited {
			refused++
			if res.Wait <= maxWait {
				t.Fatalf("call %d refused though its wait %v fits", i, res.Wait)
			}
			continue
		}
		if store {
			tat = next
		}
		acts = append(acts, t0+Instant(res.Wait))
		want := time.Duration(max(0, i-4)) * 100 * time.Millisecond
		if res.Wait != want {
			t.Fatalf("call %d waits %v, want %v", i, res.Wait, want)
		}
	}
	if len(acts) != 5+20 || refused != 75 {
		t.Fatalf("%d reserved, %d refused; want 25 (burst 5 + MAXWAIT/ei 20) and 75", len(acts), refused)
	}
	for i := 5; i < len(acts); i++ {
		if d := acts[i] - acts[i-1]; d != Instant(100*time.Millisecond) {
			t.Fatalf("acts %d and %d are %v apart, want exactly ei", i-1, i, time.Duration(d))
		}
	}
	// The replies in milliseconds, rounded up.
	res, _, _, _ := Reserve(r, tat, t0, maxWait)
	if got := res.Ints(); got != [5]int64{1, 5, 0, 2100, 2500} {
		t.Fatalf("a refused call: %v", got)
	}
	big, _ := NewRate(4, 10, 1, 6)
	res, _, _, _ = Reserve(big, 0, t0, 0)
	if got := res.Ints(); got != [5]int64{1, 5, 5, -1, 0} {
		t.Fatalf("quantity above the limit, no MAXWAIT: %v", got)
	}
}

// With MAXWAIT 0 CL.RESERVE decides as CL.THROTTLE, in milliseconds.
func TestReserveWithoutMaxWaitIsThrottle(t *testing.T) {
	r, _ := NewRate(4, 1, 1, 1)
	var tatA, tatB Instant
	for i := 0; i < 8; i++ {
		now := t0 + Instant(i)*Instant(300*time.Millisecond)
		a, nextA, storeA, _ := Decide(r, tatA, now)
		b, nextB, storeB, _ := Reserve(r, tatB, now, 0)
		if a.Limited != b.Limited || a.Remaining != b.Remaining || a.ResetAfter != b.ResetAfter ||
			(a.Limited && a.RetryAfter != b.Wait) || (!a.Limited && b.Wait != 0) {
			t.Fatalf("call %d: throttle %+v reserve %+v", i, a, b)
		}
		if storeA {
			tatA = nextA
		}
		if storeB {
			tatB = nextB
		}
	}
}

// The queue a call is promised is never cut by a later call with a shorter
// MAXWAIT: eleven calls queue 1.1 s of actions at 10 a second; a call with
// MAXWAIT 0 is refused, told it would need 1100 ms, and moves nothing; the
// next call with room to wait is given the slot after the queue, not one
// already promised.
func TestReserveNeverCutsTheQueue(t *testing.T) {
	r, _ := NewRate(0, 10, 1, 1) // ei 100 ms, no burst
	var tat Instant
	for i := range 11 {
		res, next, store, _ := Reserve(r, tat, t0, time.Second)
		if got := res.Ints(); got != [5]int64{0, 1, 0, int64(i) * 100, int64(i+1) * 100} || !store {
			t.Fatalf("call %d = %v store %v", i, got, store)
		}
		tat = next
	}
	res, _, store, _ := Reserve(r, tat, t0, 0)
	if got := res.Ints(); got != [5]int64{1, 1, 0, 1100, 1100} || store {
		t.Fatalf("MAXWAIT 0 = %v store %v; want [1 1 0 1100 1100], nothing stored", got, store)
	}
	res, next, store, _ := Reserve(r, tat, t0, 2*time.Second)
	if got := res.Ints(); got != [5]int64{0, 1, 0, 1100, 1200} || !store || next != t0+Instant(1200*time.Millisecond) {
		t.Fatalf("MAXWAIT 2000 after it = %v; want to wait 1100 ms, after the queue", got)
	}
}

// reserveScript plays a script of calls on one key at one rate: each call
// after a gap, with a quantity and a MAXWAIT of its own. It checks each reply
// against what a caller relies on and returns the reservations made.
func reserveScript(t *testing.T, r func(quantity int64) Rate, calls []reserveCall) []reserved {
	t.Helper()
	now := t0
	var tat Instant
	var out []reserved
	for i, c := range calls {
		now += Instant(c.gap)
		rate := r(c.quantity)
		res, next, store, err := Reserve(rate, tat, now, c.maxWait)
		if err != nil {
			t.Fatal(err)
		}
		if res.Remaining < 0 || res.Remaining > res.Limit {
			t.Fatalf("call %d: remaining %d outside [0, %d]", i, res.Remaining, res.Limit)
		}
		switch {
		case !res.Limited && (res.Wait < 0 || res.Wait > c.maxWait):
			t.Fatalf("call %d reserved with a wait %v outside [0, %v]", i, res.Wait, c.maxWait)
		case res.Limited && (res.Wait == -1) != (c.quantity > res.Limit):
			t.Fatalf("call %d: wait %v for quantity %d, limit %d: -1 exactly above the limit", i, res.Wait, c.quantity, res.Limit)
		case res.Limited && res.Wait != -1 && res.Wait <= c.maxWait:
			t.Fatalf("call %d refused though its wait %v fits %v", i, res.Wait, c.maxWait)
		case res.Limited && store:
			t.Fatalf("call %d refused, yet it asked to store", i)
		}
		if store {
			out = append(out, reserved{act: now + Instant(res.Wait), from: next - Instant(rate.Increment), to: next})
			tat = next
		}
	}
	return out
}

type reserveCall struct {
	gap      time.Duration
	quantity int64
	maxWait  time.Duration
}

// reserved is one reservation: when its caller acts, and the span of the
// rate's schedule it holds, [from, to).
type reserved struct{ act, from, to Instant }

// checkReserved asserts that reservations never overlap (each one's span of
// the schedule begins at or after the end of the one before it), and that
// the actions never run ahead of the rate: between any two instants a and b
// at which callers act, the tokens acting number at most the burst plus the
// emission intervals from a to b.
func checkReserved(t *testing.T, rate Rate, got []reserved) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].from < got[i-1].to {
			t.Fatalf("reservation %d holds [%v, %v), overlapping %d's, which ends at %v", i,
				time.Duration(got[i].from-t0), time.Duration(got[i].to-t0), i-1, time.Duration(got[i-1].to-t0))
		}
	}
	for _, a := range got {
		for _, b := range got {
			if b.act < a.act {
				continue
			}
			var spent time.Duration
			for _, c := range got {
				if c.act >= a.act && c.act <= b.act {
					spent += time.Duration(c.to - c.from)
				}
			}
			if spent > rate.Tolerance+time.Duration(b.act-a.act) {
				t.Fatalf("%v of the schedule acting in [%v, %v]: more than the burst and the rate allow", spent,
					time.Duration(a.act-t0), time.Duration(b.act-t0))
			}
		}
	}
}

// Whatever MAXWAIT each call brings, no reservation overlaps another and the
// actions leave at the rate: random traffic on random rates, quantities up
// to the limit, MAXWAITs from none to seconds.
func TestReservationsNeverOverlapWhateverTheMaxWaits(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		burst, count, period := rng.Int64N(6), 1+rng.Int64N(20), 1+rng.Int64N(3)
		rateOf := func(q int64) Rate {
			r, err := NewRate(burst, count, period, q)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		calls := make([]reserveCall, 60)
		for i := range calls {
			calls[i] = reserveCall{
				gap:      time.Duration(rng.Int64N(4)) * time.Duration(rng.Int64N(300)) * time.Millisecond,
				quantity: 1 + rng.Int64N(burst+1),
				maxWait:  []time.Duration{0, 0, 50 * time.Millisecond, time.Second, 5 * time.Second, time.Minute}[rng.IntN(6)],
			}
		}
		checkReserved(t, rateOf(1), reserveScript(t, rateOf, calls))
	}
}

// FuzzReserve is TestReservationsNeverOverlapWhateverTheMaxWaits on the
// fuzzer's rates and scripts: three bytes a call, its gap, its quantity (up to
// the limit) and its MAXWAIT.
func FuzzReserve(f *testing.F) {
	f.Add(int64(4), int64(10), int64(1), []byte{1, 0, 9, 0, 1, 9, 2, 3, 0, 200, 9, 1})
	f.Add(int64(0), int64(1), int64(60), []byte{3, 255, 255, 7, 7, 7, 0, 0, 0})
	f.Fuzz(func(t *testing.T, maxBurst, count, period int64, script []byte) {
		maxBurst, count, period = abs(maxBurst)%20, 1+abs(count)%100, 1+abs(period)%100
		rateOf := func(q int64) Rate {
			r, err := NewRate(maxBurst, count, period, q)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var calls []reserveCall
		for i := 0; i+2 < len(script); i += 3 {
			calls = append(calls, reserveCall{
				gap:      time.Duration(script[i]) * 7 * time.Millisecond,
				quantity: 1 + int64(script[i+1])%(maxBurst+1),
				maxWait:  time.Duration(script[i+2]) * time.Duration(script[i+2]) * time.Millisecond,
			})
		}
		checkReserved(t, rateOf(1), reserveScript(t, rateOf, calls))
	})
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
