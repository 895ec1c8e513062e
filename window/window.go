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

	"github.com/redcell/redcell/gcra"
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

// Result is the reply to one decision: CL.THROTTLE's five values, which
// Ints converts for the wire as CL.THROTTLE's. Here RetryAfter is how long
// until enough of the window has slid out for this quantity (-1s when
// allowed, or when the quantity is above the limit: it can never be
// allowed), and ResetAfter how long until the window holds nothing.
type Result = gcra.Result

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
		if len(state) < body+logHeader {
			return buf
		}
		newest := binary.LittleEndian.Uint64(state[body+8:])
		binary.LittleEndian.PutUint64(buf[body:], first+uint64(offset))
		binary.LittleEndian.PutUint64(buf[body+8:], newest+uint64(offset))
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
