// Package gcra implements the Generic Cell Rate Algorithm exactly as redis-cell's
// CL.THROTTLE decides, in integer nanoseconds.
//
// The package is pure: it never reads a clock, does no I/O, takes no locks and
// does not allocate. The caller passes the current time and the stored
// theoretical arrival time (TAT) and stores the new TAT it is handed back.
package gcra

import (
	"errors"
	"math"
	"time"
)

// Instant is a point in time in nanoseconds since the Unix epoch. It is the
// form in which a key's TAT is stored; the zero Instant means "no TAT".
type Instant int64

// InstantOf converts t to an Instant.
func InstantOf(t time.Time) Instant { return Instant(t.UnixNano()) }

// Time converts i back to a time.Time.
func (i Instant) Time() time.Time { return time.Unix(0, int64(i)) }

// Errors returned by NewRate and Decide. The server turns each into an ERR
// reply of its own (server's throttleError); the names of the arguments are the
// caller's.
var (
	ErrNegativeBurst    = errors.New("gcra: max_burst must not be negative")
	ErrNegativeCount    = errors.New("gcra: count must be positive")
	ErrNegativePeriod   = errors.New("gcra: period must be positive")
	ErrZeroRate         = errors.New("gcra: zero rates are not supported")
	ErrNegativeQuantity = errors.New("gcra: quantity must not be negative")
	ErrOutOfRange       = errors.New("gcra: rate limit parameters out of range")
)

// Rate is a validated CL.THROTTLE request: how fast a key may act, how much it
// may burst, and how much this call charges. The zero Rate is not valid; build
// one with NewRate.
type Rate struct {
	// EmissionInterval is the time one action costs: period / count.
	EmissionInterval time.Duration
	// Tolerance is the delay variation tolerance, EmissionInterval * Limit.
	Tolerance time.Duration
	// Increment is what this call charges: EmissionInterval * quantity.
	Increment time.Duration
	// Limit is max_burst + 1, the most actions allowed at once.
	Limit int64
}

// NewRate validates CL.THROTTLE's numeric arguments (period in whole seconds)
// and returns the Rate they describe. Arguments are checked in the order they
// are given; every product that could overflow int64 is checked.
func NewRate(maxBurst, count, periodSeconds, quantity int64) (Rate, error) {
	switch {
	case maxBurst < 0:
		return Rate{}, ErrNegativeBurst
	case count < 0:
		return Rate{}, ErrNegativeCount
	case periodSeconds < 0:
		return Rate{}, ErrNegativePeriod
	case count == 0 || periodSeconds == 0:
		return Rate{}, ErrZeroRate
	case quantity < 0:
		return Rate{}, ErrNegativeQuantity
	}
	if periodSeconds > math.MaxInt64/int64(time.Second) {
		return Rate{}, ErrOutOfRange
	}
	ei := periodSeconds * int64(time.Second) / count
	if ei == 0 {
		return Rate{}, ErrZeroRate
	}
	// maxBurst+1 cannot overflow as a product check: maxBurst may be MaxInt64.
	if maxBurst == math.MaxInt64 {
		return Rate{}, ErrOutOfRange
	}
	return rate(ei, maxBurst+1, quantity, ErrOutOfRange, ErrOutOfRange)
}

// rate is the Rate of emission interval ei (> 0) and limit, for a call
// charging quantity; errIncrement when ei*quantity overflows, else
// errTolerance when ei*limit does.
func rate(ei, limit, quantity int64, errIncrement, errTolerance error) (Rate, error) {
	inc, ok := mul(ei, quantity)
	if !ok {
		return Rate{}, errIncrement
	}
	dvt, ok := mul(ei, limit)
	if !ok {
		return Rate{}, errTolerance
	}
	return Rate{EmissionInterval: time.Duration(ei), Tolerance: time.Duration(dvt), Increment: time.Duration(inc), Limit: limit}, nil
}

// Result is the reply to one decision, in redis-cell's order. Durations are
// exact; Seconds converts them as redis-cell does for the wire.
type Result struct {
	Limited   bool
	Limit     int64
	Remaining int64
	// RetryAfter is how long until this call would be allowed; -1s when it
	// was allowed or can never be (quantity above the limit).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full burst, which
	// is also when its stored TAT expires.
	ResetAfter time.Duration
}

// Decide runs one GCRA decision at now for a key whose stored TAT is tat
// (zero or any value <= now when the key is absent or expired).
//
// It returns the reply and the TAT to store. store is false when nothing must
// be written: the call was limited, or it charged nothing (a peek). Decide
// returns ErrOutOfRange, and stores nothing, when the new TAT would overflow.
//
// The stored TAT is obeyed as it is, however far ahead of now it lies, as
// redis-cell obeys it: a TAT further ahead than this call's tolerance was
// left by a call with another limit (a lowered burst or rate, a CL.RESERVE
// queue), and a decision never moves it because of its own parameters. A
// wall clock that stepped is corrected for where instants cross the
// process's edges (the store's load), not here.
func Decide(r Rate, tat, now Instant) (res Result, newTAT Instant, store bool, err error) {
	tat = max(tat, now)
	inc := int64(r.Increment)
	if int64(tat) > math.MaxInt64-inc {
		return Result{}, 0, false, ErrOutOfRange
	}
	next := int64(tat) + inc
	dvt := int64(r.Tolerance)
	diff := int64(now) - (next - dvt)

	res = Result{Limit: r.Limit, RetryAfter: -time.Second}
	var ttl int64
	if diff < 0 {
		res.Limited = true
		if inc <= dvt {
			res.RetryAfter = time.Duration(-diff)
		}
		ttl = int64(tat - now)
	} else {
		ttl = next - int64(now)
		newTAT = Instant(next)
		store = inc > 0
	}
	if left := dvt - ttl; left > 0 {
		res.Remaining = left / int64(r.EmissionInterval)
	}
	res.ResetAfter = time.Duration(ttl)
	return res, newTAT, store, nil
}

// Ints returns the five integers of the CL.THROTTLE reply, as redis-cell
// sends them: limited (0 or 1), limit, remaining, retry_after and reset_after
// in whole seconds.
func (r Result) Ints() [5]int64 {
	return replyInts(r.Limited, r.Limit, r.Remaining, Seconds(r.RetryAfter), Seconds(r.ResetAfter))
}

// replyInts is a reply's five integers in redis-cell's order, limited as 0
// or 1.
func replyInts(limited bool, limit, remaining, retry, reset int64) [5]int64 {
	l := int64(0)
	if limited {
		l = 1
	}
	return [5]int64{l, limit, remaining, retry, reset}
}

// Seconds converts d to whole seconds as redis-cell does: truncate, then add
// one when the remainder is at least a millisecond. So 2.0004s is 2, 2.001s is
// 3, 0.5s is 1 and -1s is -1.
func Seconds(d time.Duration) int64 {
	s := d / time.Second
	if d%time.Second >= time.Millisecond {
		s++
	}
	return int64(s)
}

// mul returns a*b and whether it fits in int64; a > 0 and b >= 0.
func mul(a, b int64) (int64, bool) {
	if b != 0 && a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}
