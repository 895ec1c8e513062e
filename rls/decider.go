package rls

import (
	"context"
	"math"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// Call is one limit's decision on one key: what to decide, then what was
// decided.
type Call struct {
	Key   []byte
	Limit Limit
	// Hits is what the call adds, 0 to read only. It is at most MaxHits.
	Hits int64

	// Count is a fixed window's count after the hits (CL.COUNT's reply).
	Count int64
	// Result is GCRA's and the sliding window's reply (CL.THROTTLE's and
	// CL.WINDOW's).
	Result gcra.Result
}

// MaxHits bounds a call's hits: a request's hits_addend is a uint64, and
// more than this many hits in one window decide as many as this.
const MaxHits = math.MaxInt64 / 4

// Decider runs calls at now, each on its key, and fills in their results.
// An error fails the whole request. Local decides on this node's store,
// Cluster on the node that owns each key.
type Decider interface {
	Decide(ctx context.Context, now time.Time, calls []Call) error
}

// Keyspace is what Local needs of the store: *storage.Store implements it.
type Keyspace interface {
	ThrottleSlot(key []byte, slot int, r gcra.Rate, now gcra.Instant) (gcra.Result, error)
	Window(key []byte, spec window.Spec, now gcra.Instant, dry bool) (window.Result, bool, error)
	Count(key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (window.Tally, bool, error)
}

// Local decides calls on this node's keyspace, as CL.COUNT, CL.THROTTLE and
// CL.WINDOW would.
type Local struct {
	Store Keyspace
	// WindowLogMax is --window-log-max; 0 is window.DefaultLogMax.
	WindowLogMax int64
	// Refused, when set, says why changes cannot be made now (a replica, a
	// failing disk in durable mode), or nil when they can. Calls that only
	// read (Hits 0) are decided all the same.
	Refused func() error
	// Sync, when set, waits until every change so far is durable (durable
	// mode, --flush-interval 0): Decide returns once its changes are.
	Sync func() error
}

var _ Decider = (*Local)(nil)

// Decide implements Decider.
func (l *Local) Decide(_ context.Context, now time.Time, calls []Call) error {
	if l.Refused != nil {
		for i := range calls {
			if calls[i].Hits > 0 {
				if err := l.Refused(); err != nil {
					return err
				}
				break
			}
		}
	}
	at := gcra.InstantOf(now)
	changed := false
	for i := range calls {
		c := &calls[i]
		stored, err := l.decide(c, at)
		if err != nil {
			return err
		}
		changed = changed || stored
	}
	if changed && l.Sync != nil {
		return l.Sync()
	}
	return nil
}

// decide runs one call here, and reports whether it changed the key.
func (l *Local) decide(c *Call, at gcra.Instant) (bool, error) {
	switch c.Limit.Algorithm {
	case GCRA:
		r, err := c.Limit.rate(c.Hits)
		if err != nil {
			return false, err
		}
		c.Result, err = l.Store.ThrottleSlot(c.Key, -1, r, at)
		return c.Hits > 0 && !c.Result.Limited, err
	case SlidingWindow:
		spec, err := c.Limit.window(c.Hits, l.WindowLogMax)
		if err != nil {
			return false, err
		}
		res, stored, err := l.Store.Window(c.Key, spec, at, false)
		c.Result = res
		return stored, err
	default:
		spec, err := window.NewCountSpec(c.Limit.Unit.Seconds(), c.Hits)
		if err != nil {
			return false, err
		}
		t, stored, err := l.Store.Count(c.Key, spec, at, false)
		c.Count = t.Count
		return stored, err
	}
}

// quantity is the hits a GCRA or sliding-window call decides: more than the
// limit can never be allowed, and limit+1 answers just as any more would,
// without the engines' overflow checks refusing it.
func (lim Limit) quantity(hits int64) int64 {
	most := int64(lim.RequestsPerUnit) + 1
	if lim.Algorithm == GCRA {
		most = lim.Burst + 2
	}
	return min(hits, most)
}

// rate is the CL.THROTTLE rate of a GCRA limit: burst, requests_per_unit
// per unit.
func (lim Limit) rate(hits int64) (gcra.Rate, error) {
	return gcra.NewRate(lim.Burst, int64(lim.RequestsPerUnit), lim.Unit.Seconds(), lim.quantity(hits))
}

// window is the CL.WINDOW spec of a sliding-window limit.
func (lim Limit) window(hits, logMax int64) (window.Spec, error) {
	if logMax == 0 {
		logMax = window.DefaultLogMax
	}
	return window.NewSpec(int64(lim.RequestsPerUnit), lim.Unit.Seconds(), lim.quantity(hits), lim.Precision, logMax)
}
