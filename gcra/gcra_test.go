package gcra

import (
	"errors"
	"math"
	"testing"
	"time"

	"redcell/gcra/gcratest"
)

// t0 is an arbitrary, realistic start instant for the vectors.
var t0 = InstantOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

type step struct {
	at       time.Duration // since t0
	quantity int64
	want     [5]int64 // limited, limit, remaining, retry_after, reset_after
}

// runVectors plays steps against one key, storing TATs as a server would.
func runVectors(t *testing.T, maxBurst, count, period int64, steps []step) {
	t.Helper()
	var tat Instant
	for i, s := range steps {
		r, err := NewRate(maxBurst, count, period, s.quantity)
		if err != nil {
			t.Fatalf("step %d: NewRate: %v", i, err)
		}
		now := t0 + Instant(s.at)
		res, newTAT, store, err := Decide(r, tat, now)
		if err != nil {
			t.Fatalf("step %d: Decide: %v", i, err)
		}
		if store {
			tat = newTAT
		}
		if got := res.Ints(); got != s.want {
			t.Errorf("step %d: at %v quantity %d = %v want %v", i, s.at, s.quantity, got, s.want)
		}
	}
}

// Every reference vector (gcratest, shared with the server's tests).
func TestSpecVectors(t *testing.T) {
	for _, v := range gcratest.SpecVectors {
		t.Run(v.Name, func(t *testing.T) {
			steps := make([]step, len(v.Steps))
			for i, s := range v.Steps {
				steps[i] = step{s.At, s.Quantity, s.Want}
			}
			runVectors(t, v.Burst, v.Count, v.Period, steps)
		})
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

// A clock that goes backwards (NTP step) must not panic, go negative, or grant
// more than the burst: the stored TAT simply looks further away.
// A TAT further ahead than the tolerance allows (stored under a clock that
// ran fast) is clamped to now + tolerance: the burst used up, no more, and the
// clamped TAT is stored.
func TestTATBeyondTheToleranceIsClamped(t *testing.T) {
	r, _ := NewRate(4, 1, 1, 1)
	res, tat, _, _ := Decide(r, 0, t0)
	if got := res.Ints(); got != [5]int64{0, 5, 4, -1, 1} {
		t.Fatalf("first call = %v", got)
	}
	back := t0 - Instant(10*time.Second)
	res, newTAT, store, err := Decide(r, tat, back)
	if err != nil {
		t.Fatal(err)
	}
	// TAT is 11s ahead of the earlier clock, past the 5s tolerance: as if
	// the whole burst were used at that instant, not limited for 11s.
	if got := res.Ints(); got != [5]int64{1, 5, 0, 1, 5} || !store || newTAT != back+Instant(5*time.Second) {
		t.Fatalf("call 10s in the past = %v store %v tat %d; want [1 5 0 1 5], the clamped TAT stored", got, store, newTAT-back)
	}
	// A peek clamps and stores too, and reports the burst used up.
	pr, _ := NewRate(4, 1, 1, 0)
	res, newTAT, store, _ = Decide(pr, tat, back)
	if got := res.Ints(); got != [5]int64{0, 5, 0, -1, 5} || !store || newTAT != back+Instant(5*time.Second) {
		t.Fatalf("peek = %v store %v; want [0 5 0 -1 5], clamped and stored", got, store)
	}
	// Exactly at the tolerance nothing is clamped.
	res, _, store, _ = Decide(r, back+Instant(5*time.Second), back)
	if got := res.Ints(); got != [5]int64{1, 5, 0, 1, 5} || store {
		t.Fatalf("TAT at the tolerance = %v store %v; want limited, nothing stored", got, store)
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
	if res.Limited && store && newTAT != now+Instant(r.Tolerance) {
		t.Fatalf("limited call asked to store %d, not the clamped TAT", newTAT-now)
	}
	if store && tat-now > Instant(r.Tolerance) && newTAT-now > Instant(r.Tolerance) {
		t.Fatalf("a TAT %d ahead, past the tolerance %d, was obeyed", tat-now, r.Tolerance)
	}
	if store && (newTAT <= now || newTAT-now > Instant(r.Tolerance)) {
		t.Fatalf("stored TAT %d outside (now, now+dvt]", newTAT-now)
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
