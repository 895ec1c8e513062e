package rls

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
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
	Preview(key []byte, r gcra.Rate, now gcra.Instant) (gcra.Result, bool, error)
	Window(key []byte, spec window.Spec, now gcra.Instant, dry bool) (window.Result, bool, error)
	Count(key []byte, spec window.CountSpec, now gcra.Instant, dry bool) (window.Tally, bool, error)
	Get(key []byte, now gcra.Instant) (gcra.Instant, storage.Kind, bool)
	// RefusesNewKeys reports whether a key created now would be refused
	// (storage.ErrOOM: over --maxmemory under noeviction).
	RefusesNewKeys() bool
}

// Local decides calls on this node's keyspace, as CL.COUNT, CL.THROTTLE and
// CL.WINDOW would, admitted by the gate the RESP commands ask.
type Local struct {
	Store Keyspace
	// Gate admits the decisions: the server's (server.Server.Gate), so
	// that the service refuses exactly when RESP does. nil admits all.
	Gate *admission.Gate
	// WindowLogMax is --window-log-max; 0 is window.DefaultLogMax.
	WindowLogMax int64
	// Sync, when set, waits until every change so far is durable (durable
	// mode, --flush-interval 0): Decide returns once its changes are.
	Sync func() error
}

var _ Decider = (*Local)(nil)

// RefusedError is a request refused before any of it was decided: by the
// gate, by the store's memory limit, or by the node a key was forwarded to.
// Text is the refusal as Redis words it.
type RefusedError struct {
	Refusal admission.Refusal
	Text    string
}

func (e *RefusedError) Error() string { return e.Text }

// refused is r's RefusedError for a key of keyLen bytes.
func (l *Local) refused(r admission.Refusal, keyLen int) *RefusedError {
	if r == admission.KeyTooLong {
		return &RefusedError{r, admission.KeyTooLongText(keyLen, l.Gate.MaxKeyLen)}
	}
	return &RefusedError{r, r.Text()}
}

// Decide implements Decider. A request is decided whole or not at all:
// every call is admitted before any is decided (admission.Gate.Admit, in
// the order of the calls); under a conditional refusal (NOREPLICAS,
// MISCONF), or while the store refuses new keys, every call is first
// decided dry, and the request is refused if one of them would store (or
// create a key the store refuses); else, under a conditional refusal, the
// dry answers are the answers, as RESP answers a decision that stores
// nothing.
func (l *Local) Decide(_ context.Context, now time.Time, calls []Call) error {
	at := gcra.InstantOf(now)
	cond := admission.Admitted
	if l.Gate != nil {
		for i := range calls {
			switch r := l.Gate.Admit(len(calls[i].Key), calls[i].Hits); {
			case r == admission.Admitted:
			case r.Conditional():
				cond = r
			default:
				return l.refused(r, len(calls[i].Key))
			}
		}
	}
	if oom := l.Store.RefusesNewKeys(); cond != admission.Admitted || oom {
		stores := false
		for i := range calls {
			stored, err := l.decide(&calls[i], at, true)
			if err != nil {
				return l.storageError(err)
			}
			if stored && oom {
				if _, _, live := l.Store.Get(calls[i].Key, at); !live {
					return l.refused(admission.OOM, 0)
				}
			}
			stores = stores || stored
		}
		switch {
		case stores && cond != admission.Admitted:
			return l.refused(cond, 0)
		case cond != admission.Admitted:
			return nil // nothing stores: the dry answers stand
		}
	}
	changed := false
	for i := range calls {
		stored, err := l.decide(&calls[i], at, false)
		if err != nil {
			return l.storageError(err)
		}
		changed = changed || stored
	}
	if changed && l.Sync != nil {
		return l.Sync()
	}
	return nil
}

// storageError is a decision's error, a refusal where it is one.
func (l *Local) storageError(err error) error {
	if errors.Is(err, storage.ErrOOM) {
		return l.refused(admission.OOM, 0)
	}
	return err
}

// decide runs one call here, dry or not, and reports whether it changed the
// key, or with dry would have.
func (l *Local) decide(c *Call, at gcra.Instant, dry bool) (bool, error) {
	switch c.Limit.Algorithm {
	case GCRA:
		r, err := c.Limit.rate(c.Hits)
		if err != nil {
			return false, err
		}
		if dry {
			var stores bool
			c.Result, stores, err = l.Store.Preview(c.Key, r, at)
			return stores, err
		}
		c.Result, err = l.Store.ThrottleSlot(c.Key, -1, r, at)
		return c.Hits > 0 && !c.Result.Limited, err
	case SlidingWindow:
		spec, err := c.Limit.window(c.Hits, l.WindowLogMax)
		if err != nil {
			return false, err
		}
		res, stored, err := l.Store.Window(c.Key, spec, at, dry)
		c.Result = res
		return stored, err
	default:
		spec, err := window.NewCountSpec(c.Limit.Unit.Seconds(), c.Hits)
		if err != nil {
			return false, err
		}
		spec.Limit = int64(c.Limit.RequestsPerUnit) // over it is limited, for CL.TOP
		t, stored, err := l.Store.Count(c.Key, spec, at, dry)
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
