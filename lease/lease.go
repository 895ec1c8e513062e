// Package lease implements the concurrency limits of CL.ACQUIRE, CL.RELEASE,
// CL.RENEW and CL.LEASES: at most limit leases held on a key at any instant,
// each ending when released or when its lease passes without a renew, so a
// holder that dies frees its slot by itself.
//
// As packages gcra and window, it is pure: time is a parameter (gcra.Instant,
// integer nanoseconds), it does no I/O and takes no lock. A decision reads
// the key's encoded state and appends the new state to a buffer the caller
// owns and reuses; the store runs it under the key's shard lock, which is
// what makes "at most limit" exact whatever the connections.
//
// The state (baseSize, appendLease) is a base instant and the leases held, soonest
// expiry first, each its end in whole milliseconds after the base and its
// token: 12 bytes a lease with the server's tokens, which are kept as the 8
// bytes they encode. A lease's end is on the millisecond, rounded down as
// Redis's own expiries are (PEXPIRE counts from the millisecond now is in):
// a lease ends less than a millisecond sooner than asked, at worst, and
// retry_after never exceeds the lease asked for. Expired leases
// are dropped by the next decision that reads the state; the key's own
// expiry is its latest lease's, so the key disappears with its last lease
// (an empty state: the store deletes the key).
package lease

import (
	"errors"
	"time"

	"github.com/redcell/redcell/gcra"
)

// Errors of NewSpec and of a token. The server turns each into its text.
var (
	ErrLimit        = errors.New("lease: limit must be between 0 and MaxLimit")
	ErrLease        = errors.New("lease: lease must be positive")
	ErrLeaseTooLong = errors.New("lease: lease longer than MaxLease")
	ErrToken        = errors.New("lease: token must be 1 to MaxToken bytes")
	// ErrCorrupt: a stored state does not decode (written by something
	// else); the key is then taken as holding no lease.
	ErrCorrupt = errors.New("lease: corrupt state")
)

// MaxToken bounds a token's length: a lease costs its token in memory and
// on disk, and one byte holds its length.
const MaxToken = 64

// MaxLease bounds lease_ms (24 days): a lease is meant to be renewed while
// held, and a lease's end, counted in milliseconds from a base at most a
// millisecond before the decision, fits its 31 bits (maxOffset).
const MaxLease = 24 * 24 * time.Hour

// MaxLimit bounds limit: every lease held is read by each decision on its
// key, so a key of millions of leases would cost milliseconds a decision.
const MaxLimit = 100000

// Spec is a validated CL.ACQUIRE request.
type Spec struct {
	Limit int64
	Lease time.Duration
}

// NewSpec validates CL.ACQUIRE's numbers: at most limit leases (0: none
// granted, as a switch that turns a key off), each held for leaseMS
// milliseconds unless renewed.
func NewSpec(limit, leaseMS int64) (Spec, error) {
	switch {
	case limit < 0 || limit > MaxLimit:
		return Spec{}, ErrLimit
	case leaseMS < 1:
		return Spec{}, ErrLease
	case leaseMS > int64(MaxLease/time.Millisecond):
		return Spec{}, ErrLeaseTooLong
	}
	return Spec{Limit: limit, Lease: time.Duration(leaseMS) * time.Millisecond}, nil
}

// CheckToken reports whether token may name a lease.
func CheckToken(token []byte) error {
	if len(token) == 0 || len(token) > MaxToken {
		return ErrToken
	}
	return nil
}

// Result is CL.ACQUIRE's answer.
type Result struct {
	Limited   bool
	Limit     int64
	Remaining int64 // slots free after this decision
	// RetryAfter is, when limited, the time until the earliest lease
	// expires; -1 when acquired, or when limited with no lease held (a
	// limit of 0: only a higher limit frees a slot).
	RetryAfter time.Duration
	// Renewed: the token was already held, and its lease was renewed
	// instead of taking a second slot.
	Renewed bool
}

// Ints are the first four integers of CL.ACQUIRE's reply (the token is
// the fifth): limited, limit, remaining, retry_after_ms.
func (r Result) Ints() [4]int64 {
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilMillis(r.RetryAfter)
	}
	return [4]int64{boolInt(r.Limited), r.Limit, r.Remaining, retry}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ceilMillis rounds d up to milliseconds: a client that waits that long
// finds the lease gone.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Held is one lease: its token and when it ends.
type Held struct {
	Token  []byte
	Expiry gcra.Instant
}

// Acquire decides a CL.ACQUIRE of token on state at now: a token already
// held is renewed (no second slot, even above a lowered limit); otherwise
// a lease is granted while fewer than spec.Limit are held. It returns the
// new state appended to buf (empty: no lease left, the key is deleted),
// the key's expiry, and whether to store it.
func Acquire(spec Spec, state, token []byte, now gcra.Instant, buf []byte) (res Result, next []byte, exp gcra.Instant, store bool) {
	res = Result{Limit: spec.Limit, RetryAfter: -1}
	k := keyOf(token)
	end := now + gcra.Instant(spec.Lease)
	var l layout
	state = lay(&l, state, now, &k, end)
	held := l.held
	switch {
	case l.size > 0:
		res.Renewed = true
		next, exp = splice(buf, state, &l, true, &k, end, now)
	case l.held < spec.Limit:
		held++
		next, exp = splice(buf, state, &l, false, &k, end, now)
	default:
		res.Limited = true
		if l.held > 0 {
			res.RetryAfter = time.Duration(l.earliest - now)
		}
		// Nothing changes but the leases that expired, which the next
		// write drops: a refusal stores nothing.
		return res, nil, 0, false
	}
	res.Remaining = max(0, spec.Limit-held)
	return res, next, exp, true
}

// Release ends the lease named token. held reports whether it was held
// (live at now); only then is the new state to be stored.
func Release(state, token []byte, now gcra.Instant, buf []byte) (held bool, next []byte, exp gcra.Instant) {
	k := keyOf(token)
	var l layout
	state = lay(&l, state, now, &k, now)
	if l.size == 0 {
		return false, nil, 0
	}
	next, exp = splice(buf, state, &l, true, nil, 0, now)
	return true, next, exp
}

// Renew extends the lease named token to lease from now. renewed reports
// whether it was held (live at now): an ended lease never comes back.
func Renew(state, token []byte, lease time.Duration, now gcra.Instant, buf []byte) (renewed bool, next []byte, exp gcra.Instant) {
	k := keyOf(token)
	end := now + gcra.Instant(lease)
	var l layout
	state = lay(&l, state, now, &k, end)
	if l.size == 0 {
		return false, nil, 0
	}
	next, exp = splice(buf, state, &l, true, &k, end, now)
	return true, next, exp
}

// List appends the leases of state live at now to held, soonest expiry
// first, their tokens copied.
func List(state []byte, now gcra.Instant, held []Held) []Held {
	_ = walk(state, func(e entry) bool {
		if e.exp > now {
			held = append(held, Held{Token: e.appendToken(nil), Expiry: e.exp})
		}
		return true
	})
	return held
}

// Valid reports whether state decodes, names each token once and keeps
// each as a decision would (a token the server could have made, packed):
// what a restored, replicated or migrated state must be before it is
// stored. It need not be in expiry order, which a decision restores.
func Valid(state []byte) bool {
	packed := map[uint64]bool{}
	named := map[string]bool{}
	ok := true
	n := 0
	err := walk(state, func(e entry) bool {
		n++
		if e.packed {
			ok = !packed[e.raw]
			packed[e.raw] = true
			return ok
		}
		_, packable := pack(e.tok)
		ok = len(e.tok) <= MaxToken && !packable && !named[string(e.tok)]
		named[string(e.tok)] = true
		return ok
	})
	return err == nil && ok && n > 0
}

// Shift appends state to buf with every expiry moved by offset: the wall
// clock stepped, and the disk keeps wall-clock instants. The leases' ends
// are counted from the base: only the base moves.
func Shift(state []byte, offset time.Duration, buf []byte) []byte {
	buf = append(buf[:0], state...)
	if base, ok := baseOf(buf); ok {
		putBase(buf, base+gcra.Instant(offset))
	}
	return buf
}
