package window

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/redcell/redcell/gcra"
)

// A count is the fixed window of envoyproxy/ratelimit with Redis: every hit
// is counted, over the limit or not (the reference INCRBYs before it
// compares), in windows aligned to the Unix epoch. Its state is a counting
// window's of PRECISION 1 (a uvarint 1, the uvarint window in seconds, the
// window's index, the uvarint count), so CL.WINDOW key limit window 0
// PRECISION 1 peeks at a counted key, and the store persists, replicates and
// moves it as any window. What differs is only the decision: a limited call
// changes nothing there, a counted hit always adds.

// CountSpec is a validated count: hits added to the window of length Window
// that now falls in. Build one with NewCountSpec.
type CountSpec struct {
	Window time.Duration
	Hits   int64 // 0 reads the count and changes nothing
	// Limit, when above 0, is the count over which a hit is refused by
	// the caller (the RLS's fixed window): such a count is told to CL.TOP
	// as limited. CL.COUNT, which only counts, leaves it 0.
	Limit int64
}

// NewCountSpec validates a count of hits in windows of windowSeconds.
func NewCountSpec(windowSeconds, hits int64) (CountSpec, error) {
	switch {
	case windowSeconds < 1:
		return CountSpec{}, ErrWindow
	case windowSeconds > math.MaxInt64/int64(time.Second)/2:
		return CountSpec{}, ErrOutOfRange
	case hits < 0:
		return CountSpec{}, ErrQuantity
	}
	return CountSpec{Window: time.Duration(windowSeconds) * time.Second, Hits: hits}, nil
}

// Tally is a count's reply: the hits counted in the current window, this
// call's included, and how long until that window ends (when the count is
// back to 0).
type Tally struct {
	Count      int64
	ResetAfter time.Duration
}

// maxCount bounds a stored count, as eachCount reads it back.
const maxCount = math.MaxInt64 / 2

// Count adds c.Hits to the count of the window now falls in, state being the
// key's encoded state (empty for an absent key; one of another shape or that
// does not decode is taken as empty), and appends the new state to buf. It
// returns the tally, the new state, when the key expires (the window's end)
// and whether to store: false only for Hits 0, which changes nothing. A
// count saturates at math.MaxInt64/2.
func Count(c CountSpec, state []byte, now gcra.Instant, buf []byte) (t Tally, newState []byte, expiry gcra.Instant, store bool) {
	s := Spec{Limit: 1, Window: c.Window, Precision: 1, sub: int64(c.Window)}
	cur := int64(now) / s.sub
	var count int64
	if !eachCount(s, stateBody(s, state), cur, func(_, v int64) { count += v }) {
		count = 0
	}
	t = Tally{Count: count, ResetAfter: time.Duration((cur+1)*s.sub - int64(now))}
	if c.Hits == 0 {
		return t, nil, 0, false
	}
	if t.Count = maxCount; c.Hits < maxCount-count {
		t.Count = count + c.Hits
	}
	buf = binary.AppendUvarint(buf[:0], 1)
	buf = binary.AppendUvarint(buf, uint64(c.Window/time.Second))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(cur))
	buf = binary.AppendUvarint(buf, uint64(t.Count))
	return t, buf, now + gcra.Instant(t.ResetAfter), true
}
