package gcra

import (
	"math"
	"time"
)

// Reservation is the reply to CL.RESERVE: the leaky bucket as a queue.
type Reservation struct {
	// Limited is true when the call would have to wait longer than its
	// MAXWAIT: nothing was reserved.
	Limited   bool
	Limit     int64
	Remaining int64
	// Wait is how long the caller must wait before acting on what was
	// reserved (0: act now); when Limited, the wait a reservation would
	// need, or -1 when the quantity is above the limit (as CL.THROTTLE's
	// retry_after: no wait lets it through at once, though a MAXWAIT that
	// long would queue it).
	Wait time.Duration
	// ResetAfter is how long until the key is back to its full burst.
	ResetAfter time.Duration
}

// Reserve runs one CL.RESERVE decision at now. Where Decide refuses a call
// that comes too early, Reserve schedules it: the call takes the next slot,
// new TAT = max(TAT, now) + increment as always, and is told to wait until
// new TAT - tolerance, when the burst would have allowed it; if that wait is
// at most maxWait the TAT is stored. So however bursty the input, the
// actions (call time + wait) leave at exactly the rate, and at most
// Limit + maxWait/EmissionInterval of them are ever queued.
//
// As Decide, Reserve obeys the stored TAT however far ahead it lies: a
// reservation once granted is never moved by a later call, whatever its own
// MAXWAIT or limit. A call with a shorter MAXWAIT than the queue ahead of it
// is refused; it does not cut the queue.
func Reserve(r Rate, tat, now Instant, maxWait time.Duration) (res Reservation, newTAT Instant, store bool, err error) {
	dvt := int64(r.Tolerance)
	tat = max(tat, now)
	inc := int64(r.Increment)
	if int64(tat) > math.MaxInt64-inc {
		return Reservation{}, 0, false, ErrOutOfRange
	}
	next := int64(tat) + inc
	wait := max(next-dvt-int64(now), 0)
	res = Reservation{Limit: r.Limit}
	var ttl int64
	if wait <= int64(maxWait) {
		res.Wait = time.Duration(wait)
		ttl = next - int64(now)
		newTAT, store = Instant(next), inc > 0
	} else {
		res.Limited = true
		res.Wait = -1
		if inc <= dvt {
			res.Wait = time.Duration(wait)
		}
		ttl = int64(tat - now)
	}
	if left := dvt - ttl; left > 0 {
		res.Remaining = left / int64(r.EmissionInterval)
	}
	res.ResetAfter = time.Duration(ttl)
	return res, newTAT, store, nil
}

// Ints returns CL.RESERVE's five integers: limited, limit, remaining, the
// wait and reset_after in milliseconds rounded up (the wait -1 when it can
// never be).
func (r Reservation) Ints() [5]int64 {
	return replyInts(r.Limited, r.Limit, r.Remaining, ceilDiv(r.Wait, time.Millisecond), ceilDiv(r.ResetAfter, time.Millisecond))
}
