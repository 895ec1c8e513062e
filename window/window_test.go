package window

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
)

var t0 = gcra.InstantOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

func at(d time.Duration) gcra.Instant { return t0 + gcra.Instant(d) }

func spec(t testing.TB, limit, window, quantity, precision int64) Spec {
	t.Helper()
	s, err := NewSpec(limit, window, quantity, precision, DefaultLogMax)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// step is one call: at this offset, this quantity, these five integers.
type step struct {
	at       time.Duration
	quantity int64
	want     [5]int64
}

func run(t *testing.T, limit, window, precision int64, steps []step) {
	t.Helper()
	var state []byte
	for i, st := range steps {
		res, next, _, store := Decide(spec(t, limit, window, st.quantity, precision), state, at(st.at), nil)
		if got := res.Ints(); got != st.want {
			t.Fatalf("step %d (t=%v q=%d): %v want %v", i, st.at, st.quantity, got, st.want)
		}
		if store {
			state = append([]byte(nil), next...)
		}
	}
}

// The exact log at the window's edge: the limit+1th call inside the window
// is limited, told to retry when the oldest entry leaves, and allowed again
// exactly then, not a nanosecond before.
func TestExactLogAtTheWindowEdge(t *testing.T) {
	run(t, 3, 10, 0, []step{
		{0, 1, [5]int64{0, 3, 2, -1, 10}},
		{time.Second, 1, [5]int64{0, 3, 1, -1, 10}},
		{2 * time.Second, 1, [5]int64{0, 3, 0, -1, 10}},
		{3 * time.Second, 1, [5]int64{1, 3, 0, 7, 9}},    // the entry at 0 leaves at 10
		{10*time.Second - 1, 1, [5]int64{1, 3, 0, 0, 2}}, // 1 ns to wait: 0 s, as CL.THROTTLE rounds
		{10 * time.Second, 1, [5]int64{0, 3, 0, -1, 10}}, // exactly when it leaves
		{10 * time.Second, 0, [5]int64{0, 3, 0, -1, 10}}, // a peek
		{10 * time.Second, 4, [5]int64{1, 3, 0, -1, 10}}, // above the limit: never
		{11 * time.Second, 2, [5]int64{1, 3, 1, 1, 9}},   // needs the entries at 1 and 2 gone: at 12
		{12 * time.Second, 2, [5]int64{0, 3, 0, -1, 10}}, // entries at 10 and 12 (q 2)
		{12*time.Second + time.Millisecond, 0, [5]int64{0, 3, 0, -1, 10}},
		{30 * time.Second, 0, [5]int64{0, 3, 3, -1, 0}}, // all left
	})
}

// PRECISION 1, the fixed window, lets twice the limit through across a
// window edge; PRECISION 6 (10 s sub-windows) lets the limit plus what the
// sub-windows' approximation admits, and the exact log just the limit.
func TestFixedWindowBurstAcrossTheEdgeAndHowPrecisionShrinksIt(t *testing.T) {
	admitted := func(precision int64) int {
		s := spec(t, 10, 60, 1, precision)
		var state []byte
		n := 0
		// 60 s windows aligned to the epoch: t0 is at a minute's start.
		for _, d := range []time.Duration{59 * time.Second, 60 * time.Second} {
			for i := 0; i < 10; i++ {
				res, next, _, store := Decide(s, state, at(d), nil)
				if !res.Limited {
					n++
				}
				if store {
					state = append([]byte(nil), next...)
				}
			}
		}
		return n
	}
	if got := admitted(1); got != 20 {
		t.Fatalf("fixed window: %d admitted within one second, want 20 (twice the limit)", got)
	}
	if got := admitted(6); got != 10 {
		t.Fatalf("PRECISION 6: %d admitted, want 10: the calls at 59 s still count at 60 s", got)
	}
	if got := admitted(0); got != 10 {
		t.Fatalf("exact log: %d admitted, want 10", got)
	}
}

// The counters' replies: a fixed window resets at the window's start, and
// sub-windows leave one by one.
func TestCounterReplies(t *testing.T) {
	run(t, 2, 60, 1, []step{
		{30 * time.Second, 1, [5]int64{0, 2, 1, -1, 30}},
		{40 * time.Second, 1, [5]int64{0, 2, 0, -1, 20}},
		{50 * time.Second, 1, [5]int64{1, 2, 0, 10, 10}},
		{60 * time.Second, 1, [5]int64{0, 2, 1, -1, 60}},
	})
	run(t, 2, 60, 3, []step{ // 20 s sub-windows
		{5 * time.Second, 1, [5]int64{0, 2, 1, -1, 55}},  // in [0,20): leaves at 60
		{25 * time.Second, 1, [5]int64{0, 2, 0, -1, 55}}, // in [20,40): leaves at 80
		{45 * time.Second, 1, [5]int64{1, 2, 0, 15, 35}}, // the first leaves at 60
		{60 * time.Second, 1, [5]int64{0, 2, 0, -1, 60}},
	})
}

// exactModel is the sliding log written plainly: a sorted slice of the times
// of the admitted actions.
type exactModel struct{ times []gcra.Instant }

func (m *exactModel) decide(limit int64, window time.Duration, q int64, now gcra.Instant) [5]int64 {
	inWindow := m.times[:0:0]
	for _, t := range m.times {
		if t > now-gcra.Instant(window) {
			inWindow = append(inWindow, t)
		}
	}
	m.times = inWindow
	count := int64(len(m.times))
	reset := time.Duration(0)
	if count > 0 {
		reset = time.Duration(m.times[count-1] + gcra.Instant(window) - now)
	}
	if q > 0 && count+q <= limit {
		for i := int64(0); i < q; i++ {
			m.times = append(m.times, now)
		}
		return [5]int64{0, limit, limit - count - q, -1, gcra.Seconds(window)}
	}
	if q == 0 {
		return [5]int64{0, limit, limit - count, -1, gcra.Seconds(reset)}
	}
	retry := int64(-1)
	if q <= limit {
		// The (count+q-limit)th oldest must leave.
		retry = gcra.Seconds(time.Duration(m.times[count+q-limit-1] + gcra.Instant(window) - now))
	}
	return [5]int64{1, limit, limit - count, retry, gcra.Seconds(reset)}
}

// The exact log and the plain model decide identically on thousands of
// random calls: random times (many at the same instant), quantities and
// parameters.
func TestExactLogMatchesAPlainModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		limit, window := 1+r.Int64N(20), 1+r.Int64N(30)
		var m exactModel
		var state []byte
		now := t0
		for call := 0; call < 200; call++ {
			switch r.IntN(4) {
			case 0: // the same instant
			case 1:
				now += gcra.Instant(r.Int64N(int64(time.Second)))
			default:
				now += gcra.Instant(r.Int64N(int64(window) * int64(time.Second) / 2))
			}
			q := r.Int64N(limit + 2)
			res, next, _, store := Decide(spec(t, limit, window, q, 0), state, now, nil)
			if got, want := res.Ints(), m.decide(limit, time.Duration(window)*time.Second, q, now); got != want {
				t.Fatalf("trial %d call %d (limit %d window %d q %d): %v want %v", trial, call, limit, window, q, got, want)
			}
			if store {
				state = append(state[:0], next...)
			}
		}
	}
}

// ringModel is the sub-window design written plainly: a map from sub-window
// index to count.
type ringModel map[int64]int64

func (m ringModel) decide(limit, precision int64, window time.Duration, q int64, now gcra.Instant) [5]int64 {
	sub := int64(window) / precision
	cur := int64(now) / sub
	count, newest := int64(0), int64(-1)
	for b, v := range m {
		if b <= cur-precision {
			delete(m, b)
			continue
		}
		count += v
		if b > newest {
			newest = b
		}
	}
	leaves := func(b int64) int64 { return gcra.Seconds(time.Duration((b+precision)*sub - int64(now))) }
	if q > 0 && count+q <= limit {
		m[cur] += q
		return [5]int64{0, limit, limit - count - q, -1, leaves(cur)}
	}
	reset := int64(0)
	if newest >= 0 {
		reset = leaves(newest)
	}
	if q == 0 {
		return [5]int64{0, limit, limit - count, -1, reset}
	}
	retry := int64(-1)
	if q <= limit {
		left := count
		for b := cur - precision + 1; b <= cur; b++ {
			if left -= m[b]; left+q <= limit {
				retry = leaves(b)
				break
			}
		}
	}
	return [5]int64{1, limit, limit - count, retry, reset}
}

// The counters and the plain model decide identically, PRECISION 1 (the
// fixed counter) and m.
func TestCountersMatchAPlainModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		limit, window, precision := 1+r.Int64N(20), 1+r.Int64N(30), 1+r.Int64N(12)
		m := ringModel{}
		var state []byte
		now := t0 + gcra.Instant(r.Int64N(int64(time.Hour)))
		for call := 0; call < 200; call++ {
			if r.IntN(3) > 0 {
				now += gcra.Instant(r.Int64N(int64(window) * int64(time.Second) / 3))
			}
			q := r.Int64N(limit + 2)
			res, next, _, store := Decide(spec(t, limit, window, q, precision), state, now, nil)
			if got, want := res.Ints(), m.decide(limit, precision, time.Duration(window)*time.Second, q, now); got != want {
				t.Fatalf("trial %d call %d (limit %d window %d precision %d q %d): %v want %v", trial, call, limit, window, precision, q, got, want)
			}
			if store {
				state = append(state[:0], next...)
			}
		}
	}
}

func TestNewSpecErrors(t *testing.T) {
	for _, c := range []struct {
		limit, window, quantity, precision int64
		want                               error
	}{
		{0, 1, 1, 0, ErrLimit},
		{1, 0, 1, 0, ErrWindow},
		{1, 1, -1, 0, ErrQuantity},
		{1, 1, 1, -1, ErrPrecision},
		{1, 1, 1, MaxPrecision + 1, ErrPrecision},
		{DefaultLogMax + 1, 1, 1, 0, ErrLimitTooLarge},
		{1, 1 << 62, 1, 0, ErrOutOfRange},
	} {
		if _, err := NewSpec(c.limit, c.window, c.quantity, c.precision, DefaultLogMax); err != c.want {
			t.Errorf("NewSpec(%d, %d, %d, %d) = %v want %v", c.limit, c.window, c.quantity, c.precision, err, c.want)
		}
	}
	if _, err := NewSpec(DefaultLogMax+1, 1, 1, 10, DefaultLogMax); err != nil {
		t.Errorf("a large limit with PRECISION: %v", err)
	}
}

// A state that does not decode is taken as empty, whatever its bytes.
func TestCorruptStateIsEmpty(t *testing.T) {
	for _, precision := range []int64{0, 3} {
		res, _, _, store := Decide(spec(t, 5, 10, 1, precision), []byte{1, 2, 3}, t0, nil)
		if got := res.Ints(); got != [5]int64{0, 5, 4, -1, 10} || !store {
			t.Fatalf("precision %d: %v store %v", precision, got, store)
		}
	}
}

// checkAdmissions replays allowed calls and asserts that no window of the
// spec's length holds more than the limit (the exact log's promise).
func checkAdmissions(t *testing.T, limit int64, window time.Duration, allowed [][2]int64) {
	t.Helper()
	sort.Slice(allowed, func(i, j int) bool { return allowed[i][0] < allowed[j][0] })
	for i, a := range allowed {
		sum := int64(0)
		for j := i; j >= 0 && allowed[j][0] > a[0]-int64(window); j-- {
			sum += allowed[j][1]
		}
		if sum > limit {
			t.Fatalf("%d admitted in the window ending %d, limit %d", sum, a[0], limit)
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add(int64(3), int64(10), int64(0), []byte{1, 2, 3, 1})
	f.Add(int64(100), int64(60), int64(6), []byte{0, 0, 255, 9, 9, 9})
	f.Fuzz(func(t *testing.T, limit, window, precision int64, script []byte) {
		limit, window, precision = 1+abs(limit)%50, 1+abs(window)%100, abs(precision)%20
		var state []byte
		now := t0
		var allowed [][2]int64
		for _, b := range script {
			now += gcra.Instant(int64(b) * int64(time.Second) / 16)
			q := int64(b % 7)
			s, err := NewSpec(limit, window, q, precision, DefaultLogMax)
			if err != nil {
				t.Fatal(err)
			}
			res, next, expiry, store := Decide(s, state, now, nil)
			if res.Remaining < 0 || res.Remaining > limit {
				t.Fatalf("remaining %d outside [0, %d]", res.Remaining, limit)
			}
			if (res.RetryAfter == -time.Second) != (!res.Limited || q > limit) {
				t.Fatalf("retry_after %v for limited %v q %d", res.RetryAfter, res.Limited, q)
			}
			if res.Limited && store || q == 0 && store {
				t.Fatal("a limited call or a peek asked to store")
			}
			if store {
				if expiry <= now {
					t.Fatalf("expiry %d not after now", expiry-now)
				}
				state = append(state[:0], next...)
				allowed = append(allowed, [2]int64{int64(now), q})
			}
		}
		if precision == 0 {
			checkAdmissions(t, limit, time.Duration(window)*time.Second, allowed)
		}
	})
}

func abs(x int64) int64 {
	if x < 0 {
		if x == -x {
			return 0
		}
		return -x
	}
	return x
}

// A decision on a full log of 100 entries allocates nothing: the caller's
// buffer is reused.
// logOf returns the state of an exact log of limit 100 holding n entries,
// one a second, and the instant of the newest.
func logOf(b *testing.B, n int) (Spec, []byte, gcra.Instant) {
	s := spec(b, 100, 3600, 1, 0)
	var state []byte
	now := t0
	for range n {
		now += gcra.Instant(time.Second)
		_, next, _, _ := Decide(s, state, now, nil)
		state = append(state[:0], next...)
	}
	return s, state, now
}

// BenchmarkDecideLog100 is a limited call on a full log of 100 entries: it
// counts, then finds when the oldest leaves.
func BenchmarkDecideLog100(b *testing.B) {
	s, state, now := logOf(b, 100)
	buf := make([]byte, 0, 2*len(state))
	b.ReportAllocs()
	for b.Loop() {
		_, buf, _, _ = Decide(s, state, now+gcra.Instant(time.Second), buf)
	}
}

// BenchmarkDecideLog99 is an allowed call on a log of 99 entries: it
// counts, then writes the log with the new entry.
func BenchmarkDecideLog99(b *testing.B) {
	s, state, now := logOf(b, 99)
	buf := make([]byte, 0, 2*len(state))
	b.ReportAllocs()
	for b.Loop() {
		_, buf, _, _ = Decide(s, state, now+gcra.Instant(time.Second), buf)
	}
}

func BenchmarkDecideCounters(b *testing.B) {
	s := spec(b, 100, 60, 1, 60)
	var state []byte
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		_, buf, _, _ = Decide(s, state, t0, buf)
	}
}

// A key whose PRECISION or window changed starts afresh: the old state has
// another shape.
func TestChangedShapeStartsAfresh(t *testing.T) {
	_, state, _, _ := Decide(spec(t, 1, 60, 1, 0), nil, t0, nil)
	res, _, _, _ := Decide(spec(t, 1, 60, 1, 0), state, t0, nil)
	if !res.Limited {
		t.Fatal("the same shape: limited")
	}
	for _, other := range []Spec{spec(t, 1, 60, 1, 6), spec(t, 1, 30, 1, 0)} {
		res, _, _, store := Decide(other, state, t0, nil)
		if res.Limited || !store {
			t.Fatalf("%+v: a fresh window", other)
		}
	}
}

// Shift moves a log's instants exactly, and a counting window's by whole
// sub-windows: decisions after a shift by d at now+d are those before it at
// now.
func TestShift(t *testing.T) {
	for _, precision := range []int64{0, 6} {
		s := spec(t, 3, 60, 1, precision)
		var state []byte
		for _, d := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
			_, next, _, _ := Decide(s, state, at(d), nil)
			state = append(state[:0], next...)
		}
		offset := time.Hour
		shifted := Shift(state, offset, nil)
		for _, d := range []time.Duration{25 * time.Second, 65 * time.Second} {
			a, _, _, _ := Decide(s, state, at(d), nil)
			b, _, _, _ := Decide(s, shifted, at(d+offset), nil)
			if a.Ints() != b.Ints() {
				t.Fatalf("precision %d at %v: %v before the shift, %v after", precision, d, a.Ints(), b.Ints())
			}
		}
		if p, w, ok := Shape(state); !ok || p != precision || w != s.Window {
			t.Fatalf("Shape = %d %v %v", p, w, ok)
		}
	}
}

// Entries later than now (kept on a clock that ran fast, then loaded by one
// that did not) are taken as at now: they count, and leave a window after
// now, not after their own time.
func TestEntriesAheadOfNowAreTakenAsNow(t *testing.T) {
	run(t, 5, 60, 0, []step{
		{10 * time.Second, 3, [5]int64{0, 5, 2, -1, 60}},
		{0, 1, [5]int64{0, 5, 1, -1, 60}}, // the clock is 10 s behind
		{0, 2, [5]int64{1, 5, 1, 60, 60}}, // retry when the entry taken as at 0 leaves
		{59 * time.Second, 0, [5]int64{0, 5, 1, -1, 1}},
		{60 * time.Second, 0, [5]int64{0, 5, 5, -1, 0}}, // all left at 60 s, not 70 s
	})
}
