package window

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/redcell/redcell/gcra"
)

// The counters' state: the index of the newest sub-window it counts (8
// bytes, little endian: the Unix nanoseconds at its start divided by the
// sub-window's length), then one uvarint count for each of the Precision
// sub-windows that end with it, oldest first. The window at now counts the
// sub-window now falls in and the Precision-1 before it.

// eachCount calls fn, in increasing j, for the counts of state that fall in
// the window of sub-window cur: j is the position in that window (0 the
// oldest sub-window, Precision-1 cur's), and a position may come more than
// once (counts of sub-windows after cur, from a clock that ran fast, are
// taken as cur's). It reports false for a state that does not decode.
func eachCount(s Spec, state []byte, cur int64, fn func(j, v int64)) bool {
	if len(state) == 0 {
		return true
	}
	if len(state) < 8 {
		return false
	}
	last := int64(binary.LittleEndian.Uint64(state))
	m := s.Precision
	p := 8
	for i := int64(0); i < m; i++ {
		v, n := binary.Uvarint(state[p:])
		if n <= 0 || v > math.MaxInt64/2 {
			return false
		}
		p += n
		j := min(last-m+1+i, cur) - (cur - m + 1)
		if j >= 0 && v > 0 {
			fn(j, int64(v))
		}
	}
	return p == len(state)
}

func decideCounters(s Spec, state []byte, now gcra.Instant, buf []byte) (Result, []byte, gcra.Instant, bool) {
	m := s.Precision
	cur := int64(now) / s.sub
	var count int64
	newest := int64(-1)
	if !eachCount(s, state, cur, func(j, v int64) { count, newest = count+v, j }) {
		state, count, newest = nil, 0, -1
	}
	// The sub-window at position j leaves the window when sub-window
	// cur+1+j begins.
	leaves := func(j int64) time.Duration { return time.Duration((cur+1+j)*s.sub - int64(now)) }
	res := Result{Limit: s.Limit, RetryAfter: -time.Second}
	if newest >= 0 {
		res.ResetAfter = leaves(newest)
	}
	if s.Quantity == 0 || count+s.Quantity > s.Limit {
		res.Remaining = max(s.Limit-count, 0)
		if s.Quantity > 0 {
			res.Limited = true
			if s.Quantity <= s.Limit {
				left, found := count, false
				eachCount(s, state, cur, func(j, v int64) {
					if left -= v; !found && left+s.Quantity <= s.Limit {
						res.RetryAfter, found = leaves(j), true
					}
				})
			}
		}
		return res, nil, 0, false
	}
	// Allowed: the counts at their new positions, this call's in cur's.
	buf = binary.LittleEndian.AppendUint64(buf, uint64(cur))
	next, pending := int64(0), int64(0) // the position being written, its count so far
	flush := func(upTo int64) {
		for ; next < upTo; next++ {
			buf = binary.AppendUvarint(buf, uint64(pending))
			pending = 0
		}
	}
	eachCount(s, state, cur, func(j, v int64) {
		flush(j)
		pending += v
	})
	flush(m - 1)
	buf = binary.AppendUvarint(buf, uint64(pending+s.Quantity))
	res.Remaining = s.Limit - count - s.Quantity
	res.ResetAfter = leaves(m - 1)
	return res, buf, now + gcra.Instant(res.ResetAfter), true
}
