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
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"
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

// lay scans state (scan); a state out of expiry order, or that does not
// decode, is first rewritten with its live leases that decode, in order
// (normalize). Only a state written by something else is: every decision
// keeps the order.
func lay(state []byte, now gcra.Instant, token []byte, exp gcra.Instant) ([]byte, layout) {
	l := scan(state, now, token, exp)
	if !l.ordered {
		state = normalize(state, now)
		l = scan(state, now, token, exp)
	}
	return state, l
}

// normalize returns state's live leases that decode, in expiry order, in a
// new slice.
func normalize(state []byte, now gcra.Instant) []byte {
	held := List(state, now, nil)
	slices.SortStableFunc(held, func(a, b Held) int { return cmp.Compare(a.Expiry, b.Expiry) })
	var out []byte
	for _, h := range held {
		out = appendEntry(out, h.Token, h.Expiry)
	}
	return out
}

// layout is what one pass over a state finds (scan): where its live
// leases are, the one a token names, and where a lease ending at a given
// instant goes, so that a decision builds the new state from slices of the
// old one rather than entry by entry. A state's leases are kept in expiry
// order, so the expired ones are a prefix.
type layout struct {
	start    int // the live leases are state[start:]
	held     int64
	earliest gcra.Instant // the earliest live lease's end; 0: none
	// at and size place the live lease the token names (size 0: none).
	at, size int
	// ins is where a lease ending at the instant asked goes.
	ins int
	// lastAt places the last lease; last and beforeLast are the ends of
	// the last two (0: none), for the key's expiry once one is dropped.
	lastAt           int
	last, beforeLast gcra.Instant
	// ordered is false for a state out of expiry order or that does not
	// decode (written by something else): rebuild, entry by entry, then.
	ordered bool
}

// scan lays out state at now for token and a lease ending at exp.
func scan(state []byte, now gcra.Instant, token []byte, exp gcra.Instant) layout {
	l := layout{ins: -1, ordered: true}
	var prev gcra.Instant
	p := 0
	for p < len(state) {
		if len(state)-p < entryHeader {
			l.ordered = false
			return l
		}
		e := gcra.Instant(binary.LittleEndian.Uint64(state[p:]))
		n := int(state[p+8])
		size := entryHeader + n
		if n == 0 || len(state)-p < size {
			l.ordered = false
			return l
		}
		if e < prev {
			l.ordered = false
			return l
		}
		prev = e
		switch {
		case e <= now:
			l.start = p + size // expired: a prefix, as the order keeps them
		default:
			if l.held == 0 {
				l.earliest = e
			}
			l.held++
			// The last byte first: tokens of one length (numbered, or the
			// server's) differ there most, and most entries are not the
			// token's, so most are told apart without a call to compare.
			if token != nil && n == len(token) && state[p+size-1] == token[n-1] &&
				string(state[p+entryHeader:p+size]) == string(token) {
				l.at, l.size = p, size
			}
			if l.ins < 0 && e > exp {
				l.ins = p
			}
			l.beforeLast, l.last, l.lastAt = l.last, e, p
		}
		p += size
	}
	if l.ins < 0 {
		l.ins = len(state)
	}
	return l
}

// splice appends to buf the live leases of state (l.start on) without the
// one at l.at when drop, with (token, exp) at l.ins when token is not nil,
// and returns it with the key's new expiry (its latest lease's end; 0 for
// none).
func splice(buf, state []byte, l layout, drop bool, token []byte, exp gcra.Instant) ([]byte, gcra.Instant) {
	buf = buf[:0]
	// keep appends state[from:to] without the dropped lease.
	keep := func(from, to int) {
		if drop && l.at >= from && l.at < to {
			buf = append(buf, state[from:l.at]...)
			buf = append(buf, state[l.at+l.size:to]...)
			return
		}
		buf = append(buf, state[from:to]...)
	}
	keyExp := l.last
	if drop && l.at == l.lastAt {
		keyExp = l.beforeLast
	}
	if token == nil {
		keep(l.start, len(state))
		return buf, keyExp
	}
	ins := max(l.ins, l.start)
	keep(l.start, ins)
	buf = appendEntry(buf, token, exp)
	keep(ins, len(state))
	return buf, max(keyExp, exp)
}

// Acquire decides a CL.ACQUIRE of token on state at now: a token already
// held is renewed (no second slot, even above a lowered limit); otherwise
// a lease is granted while fewer than spec.Limit are held. It returns the
// new state appended to buf (empty: no lease left, the key is deleted),
// the key's expiry, and whether to store it.
func Acquire(spec Spec, state, token []byte, now gcra.Instant, buf []byte) (res Result, next []byte, exp gcra.Instant, store bool) {
	res = Result{Limit: spec.Limit, RetryAfter: -1}
	end := now + gcra.Instant(spec.Lease)
	state, l := lay(state, now, token, end)
	held := l.held
	switch {
	case l.size > 0:
		res.Renewed = true
		next, exp = splice(buf, state, l, true, token, end)
	case l.held < spec.Limit:
		held++
		next, exp = splice(buf, state, l, false, token, end)
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
	state, l := lay(state, now, token, 0)
	if l.size == 0 {
		return false, nil, 0
	}
	next, exp = splice(buf, state, l, true, nil, 0)
	return true, next, exp
}

// Renew extends the lease named token to lease from now. renewed reports
// whether it was held (live at now): an ended lease never comes back.
func Renew(state, token []byte, lease time.Duration, now gcra.Instant, buf []byte) (renewed bool, next []byte, exp gcra.Instant) {
	end := now + gcra.Instant(lease)
	state, l := lay(state, now, token, end)
	if l.size == 0 {
		return false, nil, 0
	}
	next, exp = splice(buf, state, l, true, token, end)
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

// Valid reports whether state decodes and names each token once: what a
// restored, replicated or migrated state must be before it is stored (a
// decision keeps a state so; it need not be in expiry order, which a
// decision restores).
func Valid(state []byte) bool {
	seen := map[string]bool{}
	dup := false
	err := entries(state, math.MinInt64, func(h Held) bool {
		dup = seen[string(h.Token)]
		seen[string(h.Token)] = true
		return !dup
	})
	return len(state) > 0 && err == nil && !dup
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
