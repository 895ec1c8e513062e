package gcra

import (
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

// A TAT beyond what the call's own tolerance and MAXWAIT allow is clamped
// there and stored: never obeyed for longer.
func TestReserveClampsAFarTAT(t *testing.T) {
	r, _ := NewRate(0, 1, 1, 1) // 1 a second, no burst
	res, next, store, _ := Reserve(r, t0+Instant(time.Hour), t0, 2*time.Second)
	if !res.Limited || !store || next != t0+Instant(3*time.Second) {
		t.Fatalf("%+v store %v next %v", res, store, time.Duration(next-t0))
	}
}

// FuzzReserve drives one key with random calls (quantities, gaps) under one
// MAXWAIT and checks what a caller relies on: 0 <= remaining <= limit; a
// reserved call waits at most MAXWAIT; a refused one needs more, or -1
// exactly when its quantity is above the limit; and the reserved actions
// never run ahead of the rate: the tokens acting by instant t number at most
// the burst plus the emission intervals from the first call to t.
func FuzzReserve(f *testing.F) {
	f.Add(int64(4), int64(10), int64(1), int64(2000), []byte{1, 0, 0, 1, 2, 3, 200, 9, 1})
	f.Add(int64(0), int64(1), int64(60), int64(0), []byte{3, 255, 255, 7, 7, 7})
	f.Fuzz(func(t *testing.T, maxBurst, count, period, maxWaitMs int64, script []byte) {
		maxBurst, count, period = abs(maxBurst)%20, 1+abs(count)%100, 1+abs(period)%100
		maxWait := time.Duration(abs(maxWaitMs)%100000) * time.Millisecond
		now := t0
		var tat Instant
		var spent int64 // the quantities reserved
		for i := 0; i+1 < len(script); i += 2 {
			now += Instant(script[i]) * Instant(7*time.Millisecond)
			quantity := int64(script[i+1] % 8)
			r, err := NewRate(maxBurst, count, period, quantity)
			if err != nil {
				t.Fatal(err)
			}
			res, next, store, err := Reserve(r, tat, now, maxWait)
			if err != nil {
				t.Fatal(err)
			}
			if res.Remaining < 0 || res.Remaining > res.Limit {
				t.Fatalf("call %d: remaining %d outside [0, %d]", i/2, res.Remaining, res.Limit)
			}
			switch {
			case !res.Limited && (res.Wait < 0 || res.Wait > maxWait):
				t.Fatalf("call %d reserved with a wait %v outside [0, %v]", i/2, res.Wait, maxWait)
			case res.Limited && (res.Wait == -1) != (quantity > res.Limit):
				t.Fatalf("call %d: wait %v for quantity %d, limit %d: -1 exactly above the limit", i/2, res.Wait, quantity, res.Limit)
			case res.Limited && res.Wait != -1 && res.Wait <= maxWait:
				t.Fatalf("call %d refused though its wait %v fits %v", i/2, res.Wait, maxWait)
			}
			if store {
				tat = next
			}
			if !res.Limited {
				spent += quantity
				act := now + Instant(res.Wait)
				if room := r.Tolerance + time.Duration(act-t0); time.Duration(spent)*r.EmissionInterval > room {
					t.Fatalf("call %d: %d tokens acting by %v, more than the burst and the rate allow", i/2, spent, time.Duration(act-t0))
				}
			}
		}
	})
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
