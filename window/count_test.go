package window

import (
	"math"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
)

// A count is envoyproxy/ratelimit's fixed window: windows aligned to the
// epoch, every hit counted (over-limit ones too), a peek changing nothing,
// and CL.WINDOW PRECISION 1 reading the same state.
func TestCountWindowsAlignedToTheEpoch(t *testing.T) {
	steps := []struct {
		at        time.Duration
		hits      int64
		count     int64
		reset     time.Duration
		wantStore bool
	}{
		{0, 1, 1, 60 * time.Second, true}, // t0 is 12:00:00, a minute's start
		{time.Second, 5, 6, 59 * time.Second, true},
		{30 * time.Second, 0, 6, 30 * time.Second, false}, // a peek
		{59*time.Second + 500*time.Millisecond, 100, 106, 500 * time.Millisecond, true},
		{60 * time.Second, 1, 1, 60 * time.Second, true}, // the next minute starts afresh
		{3 * time.Minute, 0, 0, 60 * time.Second, false},
	}
	var state []byte
	for i, st := range steps {
		c, err := NewCountSpec(60, st.hits)
		if err != nil {
			t.Fatal(err)
		}
		tally, next, exp, store := Count(c, state, at(st.at), nil)
		if tally.Count != st.count || tally.ResetAfter != st.reset || store != st.wantStore {
			t.Fatalf("step %d: count %d reset %v store %v, want %d %v %v", i, tally.Count, tally.ResetAfter, store, st.count, st.reset, st.wantStore)
		}
		if store {
			if exp != at(st.at)+gcra.Instant(st.reset) {
				t.Fatalf("step %d: expiry %v want the window's end", i, exp)
			}
			state = append([]byte(nil), next...)
		}
	}
}

// A counted key is a window of PRECISION 1: CL.WINDOW peeks at it and sees
// the hits counted, over-limit ones included.
func TestCountIsReadByAFixedCLWindow(t *testing.T) {
	c, _ := NewCountSpec(10, 7)
	_, state, _, _ := Count(c, nil, at(2*time.Second), nil)
	res, _, _, store := Decide(spec(t, 5, 10, 0, 1), state, at(3*time.Second), nil)
	if store || res.Remaining != 0 || res.ResetAfter != 7*time.Second {
		t.Fatalf("CL.WINDOW peek: %+v store %v", res, store)
	}
	// And a window's state of another shape is taken as empty.
	_, exact, _, _ := Decide(spec(t, 5, 10, 1, 0), nil, at(0), nil)
	tally, _, _, _ := Count(CountSpec{Window: 10 * time.Second}, exact, at(time.Second), nil)
	if tally.Count != 0 {
		t.Fatalf("an exact log read as a count: %d", tally.Count)
	}
}

func TestCountSaturates(t *testing.T) {
	c, _ := NewCountSpec(1, math.MaxInt64)
	tally, state, _, _ := Count(c, nil, at(0), nil)
	if tally.Count != maxCount {
		t.Fatalf("count %d", tally.Count)
	}
	c.Hits = 1
	if tally, _, _, _ = Count(c, state, at(0), nil); tally.Count != maxCount {
		t.Fatalf("count %d after saturation", tally.Count)
	}
}

func TestNewCountSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		window, hits int64
		want         error
	}{{0, 1, ErrWindow}, {1, -1, ErrQuantity}, {math.MaxInt64, 1, ErrOutOfRange}} {
		if _, err := NewCountSpec(tc.window, tc.hits); err != tc.want {
			t.Errorf("NewCountSpec(%d, %d) = %v want %v", tc.window, tc.hits, err, tc.want)
		}
	}
}
