package window

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/redcell/redcell/gcra"
)

// The exact log's state (after the header Decide writes): the time of its
// oldest entry and of its newest (8 bytes each, little endian, nanoseconds
// since the epoch), the uvarint sum of their quantities, then one entry per
// allowed call in time order: the uvarint of the nanoseconds since the
// previous entry (0 for the first) shifted left by one, its low bit set when
// the quantity is 1; otherwise the uvarint quantity follows. About 4 to 5
// bytes an entry for calls milliseconds to seconds apart.
//
// The sum and the newest entry in front make a decision cost what leaves the
// window, not what stays: it reads the entries that left (a prefix), drops
// them, copies the rest as they are and appends the call.

// logHeader is the bytes of the two instants in front of the sum.
const logHeader = 16

// logState is a log's front: what a decision needs without reading every
// entry.
type logState struct {
	newest gcra.Instant // the newest entry's time
	count  int64        // the quantities inside the window
	// first is the oldest entry inside the window: its time, quantity and
	// where the entries after it start; rest is those entries' bytes.
	first     gcra.Instant
	firstSize int64
	rest      []byte
}

// readEntry decodes the entry at the start of b: the time since the
// previous entry, its quantity and its length in bytes (0: it does not
// decode).
func readEntry(b []byte) (delta, size int64, n int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxInt64/4 {
		return 0, 0, 0
	}
	if v&1 == 1 {
		return int64(v >> 1), 1, n
	}
	q, m := binary.Uvarint(b[n:])
	if m <= 0 || q == 0 || q > math.MaxInt64/4 {
		return 0, 0, 0
	}
	return int64(v >> 1), int64(q), n + m
}

func appendEntry(buf []byte, delta, size int64) []byte {
	if size == 1 {
		return binary.AppendUvarint(buf, uint64(delta)<<1|1)
	}
	buf = binary.AppendUvarint(buf, uint64(delta)<<1)
	return binary.AppendUvarint(buf, uint64(size))
}

// readLog reads state's front at now and drops the entries that have left
// the window (time <= now - window). It reports false for a state that does
// not decode; an empty one is a log with nothing inside.
func readLog(s Spec, state []byte, now gcra.Instant) (l logState, ok bool) {
	if len(state) == 0 {
		return l, true
	}
	if len(state) < logHeader+1 {
		return l, false
	}
	at := gcra.Instant(binary.LittleEndian.Uint64(state))
	l.newest = gcra.Instant(binary.LittleEndian.Uint64(state[8:]))
	total, n := binary.Uvarint(state[logHeader:])
	if n <= 0 || total == 0 || total > math.MaxInt64/4 || l.newest < at {
		return l, false
	}
	cutoff := now - gcra.Instant(s.Window)
	if l.newest <= cutoff {
		return logState{}, true // everything has left
	}
	l.count = int64(total)
	for p := logHeader + n; p < len(state); {
		delta, size, m := readEntry(state[p:])
		if m == 0 {
			return logState{}, false
		}
		p += m
		at += gcra.Instant(delta)
		if at > cutoff {
			l.first, l.firstSize, l.rest = at, size, state[p:]
			return l, l.count >= size
		}
		if l.count -= size; l.count <= 0 {
			return logState{}, false
		}
	}
	return logState{}, false // the newest entry is inside, so one must be
}

// each calls fn for the entries inside the window, oldest first, until fn
// returns false. It reports false for entries that do not decode.
func (l logState) each(fn func(at gcra.Instant, size int64) bool) bool {
	if l.count == 0 || !fn(l.first, l.firstSize) {
		return true
	}
	at := l.first
	for p := 0; p < len(l.rest); {
		delta, size, n := readEntry(l.rest[p:])
		if n == 0 {
			return false
		}
		p += n
		at += gcra.Instant(delta)
		if !fn(at, size) {
			return true
		}
	}
	return true
}

func decideLog(s Spec, state []byte, now gcra.Instant, buf []byte) (Result, []byte, gcra.Instant, bool) {
	l, ok := readLog(s, state, now)
	if !ok {
		l = logState{}
	}
	res := Result{Limit: s.Limit, RetryAfter: -time.Second}
	if l.count > 0 {
		res.ResetAfter = time.Duration(min(l.newest, now) + gcra.Instant(s.Window) - now)
	}
	if s.Quantity == 0 || l.count+s.Quantity > s.Limit {
		res.Remaining = max(s.Limit-l.count, 0)
		if s.Quantity > 0 {
			res.Limited = true
			if s.Quantity <= s.Limit {
				res.RetryAfter = logRetry(s, l, now)
			}
		}
		return res, nil, 0, false
	}
	res.Remaining = s.Limit - l.count - s.Quantity
	res.ResetAfter = s.Window
	return res, appendLog(s, l, now, buf), now + gcra.Instant(s.Window), true
}

// logRetry is how long until enough of the oldest entries have left the
// window for the quantity to fit: an entry at t leaves at t + window.
func logRetry(s Spec, l logState, now gcra.Instant) time.Duration {
	var wait time.Duration
	left := l.count
	l.each(func(at gcra.Instant, size int64) bool {
		if left -= size; left+s.Quantity <= s.Limit {
			wait = time.Duration(min(at, now) + gcra.Instant(s.Window) - now)
			return false
		}
		return true
	})
	return wait
}

// appendLog appends to buf the log after an allowed call at now: the
// entries inside the window, their bytes copied as they are, then the call.
func appendLog(s Spec, l logState, now gcra.Instant, buf []byte) []byte {
	if l.newest > now {
		return appendLogSlowly(s, l, now, buf)
	}
	first, newest := now, now
	if l.count > 0 {
		first = l.first
	}
	buf = binary.LittleEndian.AppendUint64(buf, uint64(first))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(newest))
	buf = binary.AppendUvarint(buf, uint64(l.count+s.Quantity))
	if l.count > 0 {
		buf = appendEntry(buf, 0, l.firstSize)
		buf = append(buf, l.rest...)
		return appendEntry(buf, int64(now-l.newest), s.Quantity)
	}
	return appendEntry(buf, 0, s.Quantity)
}

// appendLogSlowly is appendLog for a log whose newest entries are later than
// now (kept on a clock that ran fast): they are taken as at now, so every
// entry is written again.
func appendLogSlowly(s Spec, l logState, now gcra.Instant, buf []byte) []byte {
	buf = binary.LittleEndian.AppendUint64(buf, uint64(min(l.first, now)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(now))
	buf = binary.AppendUvarint(buf, uint64(l.count+s.Quantity))
	prev := min(l.first, now)
	l.each(func(at gcra.Instant, size int64) bool {
		at = min(at, now)
		buf = appendEntry(buf, int64(at-prev), size)
		prev = at
		return true
	})
	return appendEntry(buf, int64(now-prev), s.Quantity)
}
