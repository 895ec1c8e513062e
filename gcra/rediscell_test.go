package gcra

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra/gcratest"
)

// cellModel is redis-cell v0.5.0's CL.THROTTLE (src/cell/mod.rs and
// src/lib.rs), transcribed into Go in the units and the arithmetic it uses,
// for differential tests: the emission interval from a float division
// truncated to whole nanoseconds (Rate::per_period), remaining from whole
// microseconds divided as floats, durations converted to seconds through a
// float and bumped by one for a millisecond or more. It keeps one TAT per
// key, in nanoseconds, as the module keeps a string key.
//
// One thing it does as the specification does rather than as Redis happens
// to: a key is gone once its TAT has passed. Redis expires the module's key
// at its own clock's millisecond plus the TTL truncated to milliseconds, up
// to a millisecond before the TAT, and no caller can tell which of the two
// clocks read first.
type cellModel struct {
	tats map[string]int64
}

// throttle is one CL.THROTTLE at now (Unix nanoseconds).
func (m *cellModel) throttle(key string, maxBurst, count, period, quantity, now int64) ([5]int64, error) {
	ns := period * int64(time.Second)
	ei := int64(float64(ns) / float64(count))
	if ei == 0 {
		return [5]int64{}, fmt.Errorf("Zero rates are not supported")
	}
	dvt := ei * (maxBurst + 1)
	inc := ei * quantity
	tat, ok := m.tats[key]
	if !ok || tat <= now {
		tat = now
	}
	newTAT := tat + inc
	if now > tat {
		newTAT = now + inc
	}
	diff := now - (newTAT - dvt)
	retry, limited := -int64(time.Second), int64(0)
	var ttl int64
	if diff < 0 {
		if inc <= dvt {
			retry = -diff
		}
		ttl, limited = tat-now, 1
	} else {
		ttl = newTAT - now
		if m.tats == nil {
			m.tats = map[string]int64{}
		}
		m.tats[key] = newTAT // a peek too: the module writes it, with a TTL of 0 on an absent key
	}
	var remaining int64
	if next := dvt - ttl; next > -ei {
		remaining = rustF64ToI64(float64(next/1000) / float64(ei/1000)) // whole_microseconds
	}
	return [5]int64{limited, maxBurst + 1, remaining, cellSeconds(retry), cellSeconds(ttl)}, nil
}

// cellSeconds is redis-cell's conversion of a duration to the reply's
// seconds: as_seconds_f64() as i64, plus one when subsec_milliseconds() > 0.
func cellSeconds(d int64) int64 {
	secs, nanos := d/int64(time.Second), d%int64(time.Second)
	s := rustF64ToI64(float64(secs) + float64(nanos)/1e9)
	if nanos/int64(time.Millisecond) > 0 {
		s++
	}
	return s
}

// rustF64ToI64 is Rust's `as i64` of a float: toward zero, saturating, NaN
// to 0 (Go leaves the out-of-range cases to the platform).
func rustF64ToI64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// cellCase is one random limit: CL.THROTTLE's max_burst, count and period.
type cellCase struct{ burst, count, period int64 }

// randomLimits draws a few limits a key may be given over its life: bursts,
// rates and periods as users write them, with emission intervals in whole
// microseconds when whole is set (where redis-cell computes remaining
// exactly) or in any nanoseconds otherwise.
func randomLimits(rng *rand.Rand, whole bool) []cellCase {
	out := make([]cellCase, 1+rng.IntN(3))
	for i := range out {
		for {
			c := cellCase{
				burst:  []int64{0, 1, 2, 4, 5, 9, 15, 99}[rng.IntN(8)],
				count:  []int64{1, 2, 3, 7, 10, 12, 30, 60, 100, 1000, 3600, 7919}[rng.IntN(12)],
				period: []int64{1, 2, 5, 10, 60, 300, 3600, 86400}[rng.IntN(8)],
			}
			if ei := c.period * int64(time.Second) / c.count; (ei%1000 == 0) == whole {
				out[i] = c
				break
			}
		}
	}
	return out
}

// A differential test against the model of redis-cell: random traffic on
// keys whose limits change now and then (a deploy lowering a burst, a tenant
// moved to another plan), quantities from peeks to above the limit, calls
// from nanoseconds to minutes apart. For every emission interval that is a
// whole number of microseconds every reply is redis-cell's, integer for
// integer; for the others, everything but remaining, which redcell computes
// from exact nanoseconds (docs/commands.md's differences from redis-cell) and
// keeps within [0, limit].
func TestThrottleAnswersAsRedisCell(t *testing.T) {
	for _, whole := range []bool{true, false} {
		t.Run(fmt.Sprintf("whole microseconds %v", whole), func(t *testing.T) {
			for seed := range uint64(200) {
				rng := rand.New(rand.NewPCG(seed, 54))
				keys := make([][]cellCase, 1+rng.IntN(5))
				for k := range keys {
					keys[k] = randomLimits(rng, whole)
				}
				model := cellModel{}
				tats := make([]Instant, len(keys))
				now := int64(t0)
				for step := range 300 {
					switch rng.IntN(4) {
					case 0: // the same instant
					case 1:
						now += rng.Int64N(int64(time.Millisecond))
					case 2:
						now += rng.Int64N(int64(2 * time.Second))
					case 3:
						now += rng.Int64N(int64(time.Minute))
					}
					k := rng.IntN(len(keys))
					l := keys[k][0]
					if rng.IntN(10) == 0 { // reconfigured
						l = keys[k][rng.IntN(len(keys[k]))]
					}
					quantity := []int64{0, 1, 1, 1, 2, 3, l.burst + 1, l.burst + 2}[rng.IntN(8)]
					want, err := model.throttle(fmt.Sprint(k), l.burst, l.count, l.period, quantity, now)
					if err != nil {
						t.Fatalf("seed %d step %d: model: %v", seed, step, err)
					}
					r, err := NewRate(l.burst, l.count, l.period, quantity)
					if err != nil {
						t.Fatalf("seed %d step %d: NewRate: %v", seed, step, err)
					}
					res, next, store, err := Decide(r, tats[k], Instant(now))
					if err != nil {
						t.Fatalf("seed %d step %d: Decide: %v", seed, step, err)
					}
					if store {
						tats[k] = next
					}
					got := res.Ints()
					if !whole {
						if got[2] < 0 || got[2] > got[1] {
							t.Fatalf("seed %d step %d: remaining %d outside [0, %d]", seed, step, got[2], got[1])
						}
						got[2], want[2] = 0, 0
					}
					if got != want {
						t.Fatalf("seed %d step %d: key %d at +%v CL.THROTTLE %d %d %d %d = %v, redis-cell %v",
							seed, step, k, time.Duration(now-int64(t0)), l.burst, l.count, l.period, quantity, got, want)
					}
				}
			}
		})
	}
}

// The model is redis-cell's: the real module's replies in the reference
// vectors (gcratest.ReconfiguredVectors were read off it) and its documented
// differences (remaining above the limit where the emission interval is not
// whole microseconds, 2^63-1 where it is under one).
func TestCellModelIsRedisCell(t *testing.T) {
	var m cellModel
	// The real module answers k 6000 6000 1 with 0 6001 6024 -1 0.
	got, _ := m.throttle("k", 6000, 6000, 1, 1, int64(t0))
	if got != [5]int64{0, 6001, 6024, -1, 0} {
		t.Fatalf("6000 6000 1 = %v", got)
	}
	got, _ = m.throttle("fast", 10, 2_000_000, 1, 1, int64(t0))
	if got[2] != math.MaxInt64 {
		t.Fatalf("2M a second: remaining %d, want 2^63-1", got[2])
	}
	// The reconfigured vectors, as the real module answered them.
	for _, v := range gcratest.ReconfiguredVectors {
		m := cellModel{}
		for i, s := range v.Steps {
			l := v.LimitAt(i)
			got, err := m.throttle(v.Key, l.Burst, l.Count, l.Period, s.Quantity, int64(t0+Instant(s.At)))
			if err != nil || got != s.Want {
				t.Fatalf("%s step %d: model %v, %v; the module answered %v", v.Name, i, got, err, s.Want)
			}
		}
	}
}
