package client

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Limit is a rate limit as CL.THROTTLE takes it: Count calls per Period,
// with bursts of up to Burst+1 calls. Only Count/Period matters for the
// rate. Period need not be whole seconds: it is sent to the server as the
// same rate in whole seconds (500 ms for 1 call is 2 calls a second).
type Limit struct {
	// Burst is CL.THROTTLE's max_burst: Burst+1 calls may be made at once.
	Burst int64
	// Count calls are allowed each Period.
	Count  int64
	Period time.Duration
}

// ErrInvalidLimit is returned for a Limit or a quantity the server would
// refuse (a negative burst or quantity, a zero or negative rate, a rate
// whose interval between calls is under a nanosecond, or figures that
// overflow), before anything is sent.
var ErrInvalidLimit = errors.New("client: invalid limit")

// rate is a Limit as CL.THROTTLE is sent it and as GCRA uses it: count calls
// per period whole seconds, one call every ei nanoseconds, dvt the span a
// whole burst takes, all as the server computes them (SPEC section 1).
type rate struct {
	burst, count, period int64
	ei, dvt              int64
}

// newRate converts l, checking it as the server would.
func newRate(l Limit) (rate, error) {
	switch {
	case l.Burst < 0:
		return rate{}, fmt.Errorf("%w: burst %d is negative", ErrInvalidLimit, l.Burst)
	case l.Count <= 0 || l.Period <= 0:
		return rate{}, fmt.Errorf("%w: %d per %v is not a rate", ErrInvalidLimit, l.Count, l.Period)
	}
	// count/period seconds = Count/Period: count = Count*1e9/g and
	// period = Period/g, g their greatest common divisor.
	hi, lo := bits.Mul64(uint64(l.Count), uint64(time.Second))
	if hi != 0 || lo > math.MaxInt64 {
		return rate{}, fmt.Errorf("%w: %d calls per %v is too many", ErrInvalidLimit, l.Count, l.Period)
	}
	n, d := int64(lo), int64(l.Period)
	g := gcd(n, d)
	r := rate{burst: l.Burst, count: n / g, period: d / g}
	if r.period > math.MaxInt64/int64(time.Second) {
		return rate{}, fmt.Errorf("%w: a period of %v is too long", ErrInvalidLimit, l.Period)
	}
	r.ei = r.period * int64(time.Second) / r.count
	if r.ei == 0 {
		return rate{}, fmt.Errorf("%w: %d calls per %v is under a nanosecond each", ErrInvalidLimit, l.Count, l.Period)
	}
	hi, lo = bits.Mul64(uint64(r.ei), uint64(l.Burst)+1)
	if hi != 0 || lo > math.MaxInt64 || l.Burst == math.MaxInt64 {
		return rate{}, fmt.Errorf("%w: a burst of %d at %d per %v overflows", ErrInvalidLimit, l.Burst, l.Count, l.Period)
	}
	r.dvt = int64(lo)
	return r, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// increment is what n calls cost, in nanoseconds.
func (r *rate) increment(n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: quantity %d is negative", ErrInvalidLimit, n)
	}
	hi, lo := bits.Mul64(uint64(r.ei), uint64(n))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %d calls overflow", ErrInvalidLimit, n)
	}
	return int64(lo), nil
}

// limit is the Decision's Limit: the calls a whole burst holds.
func (r *rate) limit() int64 { return r.burst + 1 }

// Decision is the answer to one call, with CL.THROTTLE's meaning.
type Decision struct {
	// Allowed is whether the call may go ahead; a refused call changed
	// nothing.
	Allowed bool
	// Limit is the calls a whole burst holds (Burst+1; the fallback's own
	// share while the server is away).
	Limit int64
	// Remaining is how many calls could be made at once right now.
	Remaining int64
	// RetryAfter is, for a refused call, how long until the same call
	// would be allowed: whole seconds rounded up when the server answers
	// (CL.THROTTLE's retry_after), exact from the cache; negative when it
	// never can be (more calls than a burst holds). Zero when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the burst is whole again (whole
	// seconds rounded up from the server).
	ResetAfter time.Duration
	// Local is set when the decision was made here, without a round trip:
	// a refusal from the cache, which the server would give too, or the
	// fallback's decision while the server is away (Options.Fallback).
	Local bool
}

// fromReply is the Decision of CL.THROTTLE's five integers.
func fromReply(v []int64) (Decision, error) {
	if len(v) != 5 {
		return Decision{}, fmt.Errorf("%w: CL.THROTTLE answered %d integers", errProtocol, len(v))
	}
	d := Decision{Allowed: v[0] == 0, Limit: v[1], Remaining: v[2], ResetAfter: time.Duration(v[4]) * time.Second}
	if !d.Allowed {
		d.RetryAfter = time.Duration(v[3]) * time.Second // -1 s: never
	}
	return d, nil
}

// gcraDecide is GCRA as the server decides it (SPEC section 1), in
// nanoseconds on any one timeline: the decision for a key whose TAT is tat,
// at now, costing inc; and the TAT to store when allowed.
func gcraDecide(r *rate, tat, now, inc int64) (d Decision, newTAT int64) {
	if tat < now {
		tat = now
	}
	newTAT = tat + inc
	diff := now - (newTAT - r.dvt)
	var ttl int64
	if diff < 0 {
		d.RetryAfter = time.Duration(-diff)
		if inc > r.dvt {
			d.RetryAfter = -time.Second
		}
		ttl = tat - now
		newTAT = 0
	} else {
		d.Allowed = true
		ttl = newTAT - now
	}
	if next := r.dvt - ttl; next > 0 {
		d.Remaining = next / r.ei
	}
	d.Limit = r.limit()
	d.ResetAfter = time.Duration(ttl)
	return d, newTAT
}
