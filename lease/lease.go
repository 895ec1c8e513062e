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
// The state is the leases held, soonest expiry first, each an expiry
// (8 bytes, little-endian nanoseconds), a token length (1 byte) and the
// token: 20 bytes a lease with the server's 11-character tokens. Expired
// leases are dropped by the next decision that reads the state; the key's
// own expiry is its latest lease's, so the key disappears with its last
// lease (an empty state: the store deletes the key).
package lease

import (
	"encoding/binary"
	"errors"
	"math"
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

// MaxLease bounds lease_ms (about 106 days): a lease is meant to be renewed
// while held, and expiries stay far from int64's overflow.
const MaxLease = 1 << 53 * time.Nanosecond

// MaxLimit bounds limit: every lease held is read by each decision on its
// key, so a key of millions of leases would cost milliseconds a decision.
const MaxLimit = 100000

// entryHeader is an entry's expiry and token length.
const entryHeader = 9

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
	Token  []byte // a view of the state
	Expiry gcra.Instant
}

// entries walks state's leases live at now, soonest expiry first, calling
// f with each; f returns false to stop. A state that does not decode is
// ErrCorrupt (the leases before the damage were walked).
func entries(state []byte, now gcra.Instant, f func(Held) bool) error {
	for len(state) > 0 {
		if len(state) < entryHeader {
			return ErrCorrupt
		}
		exp := gcra.Instant(binary.LittleEndian.Uint64(state))
		n := int(state[8])
		if n == 0 || len(state) < entryHeader+n {
			return ErrCorrupt
		}
		if exp > now && !f(Held{Token: state[entryHeader : entryHeader+n], Expiry: exp}) {
			return nil
		}
		state = state[entryHeader+n:]
	}
	return nil
}

// appendEntry appends one lease to buf.
func appendEntry(buf []byte, token []byte, exp gcra.Instant) []byte {
	buf = binary.LittleEndian.AppendUint64(buf, uint64(exp))
	buf = append(buf, byte(len(token)))
	return append(buf, token...)
}

// rebuild appends to buf the leases of state live at now, without the one
// named skip (nil: none), with (token, exp) inserted in expiry order when
// token is not nil. It returns the new state, the key's expiry (its latest
// lease's; 0 for no lease) and how many leases it holds.
func rebuild(buf, state []byte, now gcra.Instant, skip, token []byte, exp gcra.Instant) (next []byte, keyExp gcra.Instant, held int64) {
	buf = buf[:0]
	put := func(t []byte, e gcra.Instant) {
		buf = appendEntry(buf, t, e)
		keyExp = max(keyExp, e)
		held++
	}
	_ = entries(state, now, func(h Held) bool {
		if skip != nil && string(h.Token) == string(skip) {
			return true
		}
		if token != nil && exp < h.Expiry {
			put(token, exp)
			token = nil
		}
		put(h.Token, h.Expiry)
		return true
	})
	if token != nil {
		put(token, exp)
	}
	return buf, keyExp, held
}

// find returns the lease of state named token live at now, and how many
// leases are live and when the earliest ends (0: none).
func find(state []byte, now gcra.Instant, token []byte) (found bool, held int64, earliest gcra.Instant) {
	_ = entries(state, now, func(h Held) bool {
		if held == 0 {
			earliest = h.Expiry
		}
		held++
		if token != nil && string(h.Token) == string(token) {
			found = true
		}
		return true
	})
	return found, held, earliest
}

// Acquire decides a CL.ACQUIRE of token on state at now: a token already
// held is renewed (no second slot, even above a lowered limit); otherwise
// a lease is granted while fewer than spec.Limit are held. It returns the
// new state appended to buf (empty: no lease left, the key is deleted),
// the key's expiry, and whether to store it.
func Acquire(spec Spec, state, token []byte, now gcra.Instant, buf []byte) (res Result, next []byte, exp gcra.Instant, store bool) {
	res = Result{Limit: spec.Limit, RetryAfter: -1}
	held, count, earliest := find(state, now, token)
	end := now + gcra.Instant(spec.Lease)
	switch {
	case held:
		res.Renewed = true
		next, exp, count = rebuild(buf, state, now, token, token, end)
	case count < spec.Limit:
		next, exp, count = rebuild(buf, state, now, nil, token, end)
	default:
		res.Limited = true
		if count > 0 {
			res.RetryAfter = time.Duration(earliest - now)
		}
		// Nothing changes but the leases that expired, which the next
		// write drops: a refusal stores nothing.
		return res, nil, 0, false
	}
	res.Remaining = max(0, spec.Limit-count)
	return res, next, exp, true
}

// Release ends the lease named token. held reports whether it was held
// (live at now); only then is the new state to be stored.
func Release(state, token []byte, now gcra.Instant, buf []byte) (held bool, next []byte, exp gcra.Instant) {
	if found, _, _ := find(state, now, token); !found {
		return false, nil, 0
	}
	next, exp, _ = rebuild(buf, state, now, token, nil, 0)
	return true, next, exp
}

// Renew extends the lease named token to lease from now. renewed reports
// whether it was held (live at now): an ended lease never comes back.
func Renew(state, token []byte, lease time.Duration, now gcra.Instant, buf []byte) (renewed bool, next []byte, exp gcra.Instant) {
	if found, _, _ := find(state, now, token); !found {
		return false, nil, 0
	}
	next, exp, _ = rebuild(buf, state, now, token, token, now+gcra.Instant(lease))
	return true, next, exp
}

// List appends the leases of state live at now to held, soonest expiry
// first, their tokens copied.
func List(state []byte, now gcra.Instant, held []Held) []Held {
	_ = entries(state, now, func(h Held) bool {
		h.Token = append([]byte(nil), h.Token...)
		held = append(held, h)
		return true
	})
	return held
}

// Valid reports whether state decodes: what a restored or replicated state
// must be before it is stored.
func Valid(state []byte) bool {
	return len(state) > 0 && entries(state, math.MinInt64, func(Held) bool { return true }) == nil
}

// Shift appends state to buf with every expiry moved by offset: the wall
// clock stepped, and the disk keeps wall-clock instants.
func Shift(state []byte, offset time.Duration, buf []byte) []byte {
	buf = append(buf[:0], state...)
	for p := 0; p+entryHeader <= len(buf); p += entryHeader + int(buf[p+8]) {
		exp := int64(binary.LittleEndian.Uint64(buf[p:]))
		binary.LittleEndian.PutUint64(buf[p:], uint64(exp+int64(offset)))
	}
	return buf
}
