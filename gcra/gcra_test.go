package gcra

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra/gcratest"
)

// t0 is an arbitrary, realistic start instant for the vectors.
var t0 = InstantOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

// runVector plays v against one key, storing TATs as a server would, and
// checks every step's five integers.
func runVector(t *testing.T, v gcratest.Vector) {
	t.Helper()
	var tat Instant
	for i, s := range v.Steps {
		l := v.LimitAt(i)
		r, err := NewRate(l.Burst, l.Count, l.Period, s.Quantity)
		if err != nil {
			t.Fatalf("step %d: NewRate: %v", i, err)
		}
		res, newTAT, store, err := Decide(r, tat, t0+Instant(s.At))
		if err != nil {
			t.Fatalf("step %d: Decide: %v", i, err)
		}
		if store {
			tat = newTAT
		}
		if got := res.Ints(); got != s.Want {
			t.Errorf("step %d: at %v %v quantity %d = %v want %v", i, s.At, l, s.Quantity, got, s.Want)
		}
	}
}

// Every reference vector (gcratest, shared with the server's tests): the
// specification's, and the real redis-cell's replies on keys whose limit
// changes while in use.
func TestVectors(t *testing.T) {
	for _, v := range gcratest.All() {
		t.Run(v.Name, func(t *testing.T) { runVector(t, v) })
	}
}

// Only count/period matters for the rate.
func TestRateDependsOnlyOnRatio(t *testing.T) {
	a, err := NewRate(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRate(15, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("NewRate(15,30,60,1) = %+v, NewRate(15,1,2,1) = %+v; want equal", a, b)
	}
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{2 * time.Second, 2},
		{2*time.Second + 400*time.Microsecond, 2},
		{2*time.Second + time.Millisecond, 3},
		{500 * time.Millisecond, 1},
		{999 * time.Microsecond, 0},
		{0, 0},
		{-time.Second, -1},
	} {
		if got := Seconds(c.d); got != c.want {
			t.Errorf("Seconds(%v) = %d want %d", c.d, got, c.want)
		}
	}
}

func TestNewRateErrors(t *testing.T) {
	for _, c := range []struct {
		burst, count, period, quantity int64
		want                           error
	}{
		{-1, 1, 1, 1, ErrNegativeBurst},
		{1, -1, 1, 1, ErrNegativeCount},
		{1, 1, -1, 1, ErrNegativePeriod},
		{1, 0, 1, 1, ErrZeroRate},
		{1, 1, 0, 1, ErrZeroRate},
		{1, 1, 1, -1, ErrNegativeQuantity},
		// 1s / 2e9 truncates to a 0 ns emission interval.
		{1, 2_000_000_000, 1, 1, ErrZeroRate},
		{1, 1, math.MaxInt64/int64(time.Second) + 1, 1, ErrOutOfRange}, // period * 1e9
		{math.MaxInt64, 1, 1, 1, ErrOutOfRange},                        // max_burst + 1
		{1 << 40, 1, 1 << 20, 1, ErrOutOfRange},                        // dvt
		{1, 1, 1, 1 << 40, ErrOutOfRange},                              // inc
		// The negative-argument checks come in argument order.
		{-1, -1, -1, -1, ErrNegativeBurst},
		{1, -1, 0, 1, ErrNegativeCount},
	} {
		_, err := NewRate(c.burst, c.count, c.period, c.quantity)
		if !errors.Is(err, c.want) {
			t.Errorf("NewRate(%d, %d, %d, %d) = %v want %v", c.burst, c.count, c.period, c.quantity, err, c.want)
		}
	}
}

func TestDecideNewTATOverflow(t *testing.T) {
	r, err := NewRate(0, 1, 1<<30, 1) // a ~34-year increment: representable
	if err != nil {
		t.Fatal(err)
	}
	// A TAT at now (a far-future now) plus the increment passes MaxInt64.
	now := Instant(math.MaxInt64 - int64(r.Increment)/2)
	_, _, store, err := Decide(r, now, now)
	if !errors.Is(err, ErrOutOfRange) || store {
		t.Fatalf("Decide near MaxInt64 = store %v, %v; want no store, ErrOutOfRange", store, err)
	}
}

// A TAT further ahead than the calling limit's tolerance (left by a larger
// burst or a slower rate, or a CL.RESERVE queue) is obeyed as it is, as
// redis-cell obeys it: limited until TAT - tolerance, and never moved,
// neither by a limited call nor by a peek.
func TestATATBeyondTheToleranceIsObeyed(t *testing.T) {
	big, _ := NewRate(11, 12, 60, 1) // ei 5 s, tolerance 60 s
	tat := t0 + Instant(55*time.Second)
	small, _ := NewRate(6, 12, 60, 1) // tolerance 35 s
	res, _, store, err := Decide(small, tat, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Ints(); got != [5]int64{1, 7, 0, 25, 55} || store {
		t.Fatalf("lowered burst = %v store %v; want redis-cell's [1 7 0 25 55], nothing stored", got, store)
	}
	peek, _ := NewRate(6, 12, 60, 0)
	if res, _, store, _ = Decide(peek, tat, t0); res.Ints() != [5]int64{1, 7, 0, 20, 55} || store {
		t.Fatalf("peek = %v store %v; want [1 7 0 20 55], nothing stored", res.Ints(), store)
	}
	// 25 s later, as it said, the lowered limit allows, and stores TAT + ei.
	res, newTAT, store, _ := Decide(small, tat, t0+Instant(25*time.Second))
	if got := res.Ints(); got != [5]int64{0, 7, 0, -1, 35} || !store || newTAT != tat+Instant(5*time.Second) {
		t.Fatalf("25 s later = %v store %v tat %v; want [0 7 0 -1 35], TAT + 5 s", got, store, time.Duration(newTAT-t0))
	}
	// The original limit still sees its own budget.
	if res, _, _, _ = Decide(big, tat, t0); res.Ints() != [5]int64{0, 12, 0, -1, 60} {
		t.Fatalf("original limit = %v", res.Ints())
	}
}

// A limited call returns the TAT unchanged: nothing to store.
func TestLimitedStoresNothing(t *testing.T) {
	r, _ := NewRate(0, 1, 60, 1)
	_, tat, store, _ := Decide(r, 0, t0)
	if !store || tat != t0+Instant(time.Minute) {
		t.Fatalf("first call: store %v tat %d", store, tat)
	}
	res, _, store, _ := Decide(r, tat, t0+Instant(time.Second))
	if !res.Limited || store {
		t.Fatalf("second call: limited %v store %v; want limited, no store", res.Limited, store)
	}
}

func TestPeekNeverStores(t *testing.T) {
	r, _ := NewRate(4, 1, 1, 0)
	res, _, store, _ := Decide(r, 0, t0)
	if store || res.Ints() != [5]int64{0, 5, 5, -1, 0} {
		t.Fatalf("peek on absent key = %v store %v", res.Ints(), store)
	}
}

// checkInvariants asserts what must hold for any accepted input.
func checkInvariants(t *testing.T, maxBurst, count, period, quantity int64, tatOffset, nowOffset int64) {
	r, err := NewRate(maxBurst, count, period, quantity)
	if err != nil {
		return
	}
	now := t0 + Instant(nowOffset)
	tat := now + Instant(tatOffset)
	res, newTAT, store, err := Decide(r, tat, now)
	if err != nil {
		if !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Decide: unexpected error %v", err)
		}
		return
	}
	if res.Limit != maxBurst+1 {
		t.Fatalf("limit %d want %d", res.Limit, maxBurst+1)
	}
	if res.Remaining < 0 || res.Remaining > res.Limit {
		t.Fatalf("remaining %d outside [0, %d] (rate %+v tat %d now %d)", res.Remaining, res.Limit, r, tat, now)
	}
	if res.ResetAfter < 0 {
		t.Fatalf("reset_after %v negative", res.ResetAfter)
	}
	if !res.Limited && res.RetryAfter != -time.Second {
		t.Fatalf("allowed with retry_after %v", res.RetryAfter)
	}
	if res.Limited && res.RetryAfter != -time.Second && res.RetryAfter <= 0 {
		t.Fatalf("limited with retry_after %v", res.RetryAfter)
	}
	if store && (res.Limited || quantity == 0) {
		t.Fatalf("a limited call or a peek asked to store %d", newTAT-now)
	}
	if store && (newTAT != max(tat, now)+Instant(r.Increment) || newTAT-now > Instant(r.Tolerance)) {
		t.Fatalf("stored TAT %d: want max(tat, now) + inc, within the tolerance %d", newTAT-now, r.Tolerance)
	}
	if !res.Limited && quantity > 0 && !store {
		t.Fatalf("an allowed call stored nothing")
	}
}

func TestInvariantsOnEdges(t *testing.T) {
	vals := []int64{0, 1, 2, 3, 7, 999, 1000, 1001, 1e6, 1e9, 1e12, math.MaxInt32, math.MaxInt64 / 2, math.MaxInt64}
	for _, b := range vals {
		for _, c := range vals {
			for _, p := range vals {
				for _, q := range []int64{0, 1, 2, 6, 1e9} {
					for _, off := range []int64{-1e9, 0, 1, 1e9, 1e15} {
						checkInvariants(t, b, c, p, q, off, 0)
					}
				}
			}
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add(int64(4), int64(1), int64(1), int64(1), int64(0), int64(0))
	f.Add(int64(6000), int64(6000), int64(1), int64(1), int64(5e8), int64(3))
	f.Add(int64(0), int64(1), int64(2), int64(7), int64(-1), int64(1e18))
	f.Fuzz(func(t *testing.T, maxBurst, count, period, quantity, tatOffset, nowOffset int64) {
		// Keep now within a realistic century so the offsets cannot wrap.
		nowOffset %= 1 << 61
		tatOffset %= 1 << 61
		checkInvariants(t, maxBurst, count, period, quantity, tatOffset, nowOffset)
	})
}

func BenchmarkDecide(b *testing.B) {
	b.ReportAllocs()
	r, _ := NewRate(100, 10, 1, 1)
	var tat Instant
	now := t0
	for i := 0; i < b.N; i++ {
		now += 1000
		res, next, store, _ := Decide(r, tat, now)
		if store {
			tat = next
		}
		_ = res
	}
}
