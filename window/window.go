// Package window implements CL.WINDOW's sliding windows: an exact log of the
// calls allowed within the window, or m counters of sub-windows aligned to
// the Unix epoch (m = 1 is the classic fixed window).
//
// As package gcra, it is pure: time is a parameter (gcra.Instant, integer
// nanoseconds), it does no I/O, takes no lock and allocates nothing on the
// decision path: a decision reads the key's encoded state and appends the
// new state to a buffer the caller owns and reuses.
package window

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"redcell/gcra"
)

// Errors of NewSpec. The server turns each into its client text.
var (
	ErrLimit         = errors.New("window: limit must be positive")
	ErrWindow        = errors.New("window: window must be positive")
	ErrQuantity      = errors.New("window: quantity must not be negative")
	ErrPrecision     = errors.New("window: PRECISION must be between 0 and MaxPrecision")
	ErrLimitTooLarge = errors.New("window: limit too large for an exact window, use PRECISION")
	ErrOutOfRange    = errors.New("window: rate limit parameters out of range")
	// ErrCorrupt: a stored state does not decode (it was written by
	// something else); the key is then taken as empty.
	ErrCorrupt = errors.New("window: corrupt state")
)

// MaxPrecision bounds the sub-windows of a counting window: its state holds
// one counter each.
const MaxPrecision = 10000

// DefaultLogMax is the most entries an exact log may hold by default (a
// limit above it needs PRECISION): --window-log-max.
const DefaultLogMax = 10000

// MaxLogMax bounds --window-log-max: a decision reads the whole log, so a
// million entries (a few MB a key) already takes milliseconds.
const MaxLogMax = 1000000

// Spec is a validated CL.WINDOW request. Build one with NewSpec.
type Spec struct {
	Limit    int64
	Window   time.Duration
	Quantity int64
	// Precision is 0 for the exact log, else the number of sub-windows.
	Precision int64
	sub       int64 // nanoseconds per sub-window (counters only)
}

// NewSpec validates CL.WINDOW's numbers: at most limit actions in any window
// seconds, charging quantity (0 is a peek), with precision sub-windows (0:
// the exact log, which logMax bounds).
func NewSpec(limit, windowSeconds, quantity, precision, logMax int64) (Spec, error) {
	switch {
	case limit < 1:
		return Spec{}, ErrLimit
	case windowSeconds < 1:
		return Spec{}, ErrWindow
	case quantity < 0:
		return Spec{}, ErrQuantity
	case windowSeconds > math.MaxInt64/int64(time.Second)/2:
		return Spec{}, ErrOutOfRange // window + any instant must not overflow
	case precision < 0 || precision > MaxPrecision:
		return Spec{}, ErrPrecision
	case precision == 0 && limit > logMax:
		return Spec{}, ErrLimitTooLarge
	}
	s := Spec{Limit: limit, Window: time.Duration(windowSeconds) * time.Second, Quantity: quantity, Precision: precision}
	if precision > 0 {
		s.sub = int64(s.Window) / precision
	}
	return s, nil
}

// Result is the reply to one decision, in redis-cell's order. Durations are
// exact; Ints converts them for the wire as CL.THROTTLE's.
type Result struct {
	Limited   bool
	Limit     int64
	Remaining int64
	// RetryAfter is how long until enough of the window has slid out for
	// this quantity; -1s when allowed or when the quantity is above the
	// limit (it can never be allowed).
	RetryAfter time.Duration
	// ResetAfter is how long until the window holds nothing.
	ResetAfter time.Duration
}

// Ints returns the five integers of the reply: limited, limit, remaining,
// and the two durations in whole seconds, rounded as CL.THROTTLE's.
func (r Result) Ints() [5]int64 {
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	return [5]int64{limited, r.Limit, r.Remaining, gcra.Seconds(r.RetryAfter), gcra.Seconds(r.ResetAfter)}
}

// Decide runs one decision at now on state, the key's encoded state (empty
// for an absent key), and appends the new state to buf. It returns the reply,
// the new state, when the key expires (when the window holds nothing) and
// whether to store: false for a limited call or a peek, which change
// nothing. A state that does not decode is taken as empty.
//
// A state begins with the uvarint precision and window (seconds) it was kept
// with: one of another shape (the key's PRECISION or window changed) is
// taken as empty too.
func Decide(s Spec, state []byte, now gcra.Instant, buf []byte) (res Result, newState []byte, expiry gcra.Instant, store bool) {
	body := stateBody(s, state)
	buf = binary.AppendUvarint(buf[:0], uint64(s.Precision))
	buf = binary.AppendUvarint(buf, uint64(s.Window/time.Second))
	if s.Precision == 0 {
		return decideLog(s, body, now, buf)
	}
	return decideCounters(s, body, now, buf)
}

// header reads a state's precision and window, and where its body starts.
func header(state []byte) (precision, window int64, body int, ok bool) {
	p, n := binary.Uvarint(state)
	if n <= 0 || p > MaxPrecision {
		return 0, 0, 0, false
	}
	w, m := binary.Uvarint(state[n:])
	if m <= 0 || w < 1 || w > uint64(math.MaxInt64/int64(time.Second)/2) {
		return 0, 0, 0, false
	}
	return int64(p), int64(w), n + m, true
}

// stateBody is state after its header, or nil when its shape is not s's or
// it does not decode.
func stateBody(s Spec, state []byte) []byte {
	p, w, body, ok := header(state)
	if !ok || p != s.Precision || time.Duration(w)*time.Second != s.Window {
		return nil
	}
	return state[body:]
}

// Shape returns the precision and window a state was kept with.
func Shape(state []byte) (precision int64, window time.Duration, ok bool) {
	p, w, _, ok := header(state)
	return p, time.Duration(w) * time.Second, ok
}

// Shift returns state, appended to buf, with its instants moved by offset:
// how the store turns a state kept on its clock into one of wall-clock
// instants for the disk. A log's instants move exactly; a counting window
// moves by whole sub-windows, the nearest to offset. A state that does not
// decode is returned as it is.
func Shift(state []byte, offset time.Duration, buf []byte) []byte {
	buf = append(buf[:0], state...)
	precision, window, body, ok := header(state)
	if !ok || len(state) < body+8 || offset == 0 {
		return buf
	}
	first := binary.LittleEndian.Uint64(state[body:])
	if precision == 0 {
		binary.LittleEndian.PutUint64(buf[body:], first+uint64(offset))
		return buf
	}
	sub := window * int64(time.Second) / precision
	half := sub / 2
	if offset < 0 {
		half = -half
	}
	binary.LittleEndian.PutUint64(buf[body:], first+uint64((int64(offset)+half)/sub))
	return buf
}

// The exact log's state: the time of its oldest entry (8 bytes, little
// endian, nanoseconds since the epoch), then one entry per allowed call in
// time order, each the uvarint nanoseconds since the previous entry (0 for
// the first) and the uvarint quantity. Calls at the same instant share an
// entry. About 7 bytes an entry for calls seconds apart.

// logEntries calls fn for every entry of state that is still in the window
// at now (time > now - window), oldest first; entries later than now (a TAT
// from a clock that ran fast) are taken as at now. It reports false for a
// state that does not decode.
func logEntries(s Spec, state []byte, now gcra.Instant, fn func(at gcra.Instant, size int64)) bool {
	if len(state) == 0 {
		return true
	}
	if len(state) < 8 {
		return false
	}
	at := gcra.Instant(binary.LittleEndian.Uint64(state))
	cutoff := now - gcra.Instant(s.Window)
	for p := 8; p < len(state); {
		delta, n := binary.Uvarint(state[p:])
		if n <= 0 || delta > math.MaxInt64/2 {
			return false
		}
		p += n
		size, n := binary.Uvarint(state[p:])
		if n <= 0 || size == 0 || size > math.MaxInt64/2 {
			return false
		}
		p += n
		at += gcra.Instant(delta)
		if at > cutoff {
			fn(min(at, now), int64(size))
		}
	}
	return true
}

func decideLog(s Spec, state []byte, now gcra.Instant, buf []byte) (Result, []byte, gcra.Instant, bool) {
	var count, kept int64
	var newest gcra.Instant
	if !logEntries(s, state, now, func(at gcra.Instant, size int64) { count, kept, newest = count+size, kept+1, at }) {
		state, count, kept = nil, 0, 0
	}
	res := Result{Limit: s.Limit, RetryAfter: -time.Second}
	if count > 0 {
		res.ResetAfter = time.Duration(newest + gcra.Instant(s.Window) - now)
	}
	if s.Quantity == 0 || count+s.Quantity > s.Limit {
		res.Remaining = max(s.Limit-count, 0)
		if s.Quantity > 0 {
			res.Limited = true
			if s.Quantity <= s.Limit {
				res.RetryAfter = logRetry(s, state, now, count)
			}
		}
		return res, nil, 0, false
	}
	// Allowed: the entries still in the window, then this call, which
	// shares the newest entry if that is at this same instant.
	merge := kept > 0 && newest == now
	var prev gcra.Instant
	var i int64
	logEntries(s, state, now, func(at gcra.Instant, size int64) {
		if i == 0 {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(at))
			prev = at
		}
		if i++; i == kept && merge {
			size += s.Quantity
		}
		buf = binary.AppendUvarint(buf, uint64(at-prev))
		buf = binary.AppendUvarint(buf, uint64(size))
		prev = at
	})
	if kept == 0 {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(now))
		prev = now
	}
	if !merge {
		buf = binary.AppendUvarint(buf, uint64(now-prev))
		buf = binary.AppendUvarint(buf, uint64(s.Quantity))
	}
	res.Remaining = s.Limit - count - s.Quantity
	res.ResetAfter = s.Window
	return res, buf, now + gcra.Instant(s.Window), true
}

// logRetry is how long until enough of the oldest entries have left the
// window for the quantity to fit: an entry at t leaves at t + window.
func logRetry(s Spec, state []byte, now gcra.Instant, count int64) time.Duration {
	var wait time.Duration
	done := false
	logEntries(s, state, now, func(at gcra.Instant, size int64) {
		if done {
			return
		}
		count -= size
		if count+s.Quantity <= s.Limit {
			wait = time.Duration(at + gcra.Instant(s.Window) - now)
			done = true
		}
	})
	return wait
}
