// Package gcratest holds CL.THROTTLE's reference vectors as data: sequences
// of calls on one key, each with the five integers it must answer, so that
// the algorithm's tests (gcra) and the server's (protocol_test) check
// exactly the same sequences. It imports nothing of ours.
package gcratest

import (
	"slices"
	"strconv"
	"time"
)

// Step is one CL.THROTTLE call of a vector: at At after the vector's start,
// charging Quantity, the five integers a user sees.
type Step struct {
	At       time.Duration
	Quantity int64
	Want     [5]int64 // limited, limit, remaining, retry_after, reset_after
}

// Vector is one reference sequence on one key.
type Vector struct {
	Name                 string
	Key                  string
	Burst, Count, Period int64
	// OmitQuantity sends four arguments: the quantity defaults to 1 (every
	// step of such a vector has Quantity 1).
	OmitQuantity bool
	Steps        []Step
	// Changes reconfigures the key while it is in use: from step i on, the
	// calls are sent with the limit Changes[i] (until a later change).
	Changes map[int]Limit
}

// Args is the CL.THROTTLE command of step i of v, as a client sends it.
func (v Vector) Args(i int) []string {
	l := v.LimitAt(i)
	a := []string{"CL.THROTTLE", v.Key, itoa(l.Burst), itoa(l.Count), itoa(l.Period)}
	if !v.OmitQuantity {
		a = append(a, itoa(v.Steps[i].Quantity))
	}
	return a
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Limit is CL.THROTTLE's max_burst, count and period.
type Limit struct{ Burst, Count, Period int64 }

// LimitAt is the limit step i of v is sent with.
func (v Vector) LimitAt(i int) Limit {
	l, from := Limit{v.Burst, v.Count, v.Period}, -1
	for at, c := range v.Changes {
		if at <= i && at > from {
			l, from = c, at
		}
	}
	return l
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// SpecVectors are every reference vector.
var SpecVectors = []Vector{
	{Name: "table", Key: "k", Burst: 4, Count: 1, Period: 1, Steps: []Step{
		{0, 6, [5]int64{1, 5, 5, -1, 0}},
		{0, 1, [5]int64{0, 5, 4, -1, 1}},
		{0, 1, [5]int64{0, 5, 3, -1, 2}},
		{0, 1, [5]int64{0, 5, 2, -1, 3}},
		{0, 1, [5]int64{0, 5, 1, -1, 4}},
		{0, 1, [5]int64{0, 5, 0, -1, 5}},
		{0, 1, [5]int64{1, 5, 0, 1, 5}},
		{ms(3000), 1, [5]int64{0, 5, 2, -1, 3}},
		{ms(3100), 1, [5]int64{0, 5, 1, -1, 4}},
		{ms(4000), 1, [5]int64{0, 5, 1, -1, 4}},
		{ms(8000), 1, [5]int64{0, 5, 4, -1, 1}},
		{ms(9500), 1, [5]int64{0, 5, 4, -1, 1}},
		{ms(9500), 0, [5]int64{0, 5, 4, -1, 1}},
		{ms(9500), 2, [5]int64{0, 5, 2, -1, 3}},
		{ms(9500), 5, [5]int64{1, 5, 2, 3, 3}},
	}},
	{Name: "no burst", Key: "k", Burst: 0, Count: 1, Period: 2, Steps: []Step{
		{0, 1, [5]int64{0, 1, 0, -1, 2}},
		{0, 1, [5]int64{1, 1, 0, 2, 2}},
		{ms(2000), 1, [5]int64{0, 1, 0, -1, 2}},
	}},
	{Name: "slow rate", Key: "k", Burst: 4, Count: 1, Period: 10, OmitQuantity: true, Steps: []Step{
		{0, 1, [5]int64{0, 5, 4, -1, 10}},
		{0, 1, [5]int64{0, 5, 3, -1, 20}},
		{0, 1, [5]int64{0, 5, 2, -1, 30}},
		{0, 1, [5]int64{0, 5, 1, -1, 40}},
		{0, 1, [5]int64{0, 5, 0, -1, 50}},
		{0, 1, [5]int64{1, 5, 0, 10, 50}},
	}},
	{Name: "readme", Key: "user123", Burst: 15, Count: 30, Period: 60, OmitQuantity: true, Steps: []Step{
		{0, 1, [5]int64{0, 16, 15, -1, 2}},
	}},
	{Name: "two per second", Key: "k", Burst: 1, Count: 2, Period: 1, OmitQuantity: true, Steps: []Step{
		{0, 1, [5]int64{0, 2, 1, -1, 1}},
		{0, 1, [5]int64{0, 2, 0, -1, 1}},
		{0, 1, [5]int64{1, 2, 0, 1, 1}},
	}},
}

// All is every vector: SpecVectors, then ReconfiguredVectors.
func All() []Vector { return slices.Concat(SpecVectors, ReconfiguredVectors) }

// ReconfiguredVectors change a key's limit while it is in use (a deploy
// that lowers a burst, a tenant moved to another plan), each at one instant.
// The replies are the real redis-cell v0.5.0 module's, sent as one pipeline
// through redis-cli: a TAT left by one limit is obeyed as it is by the next,
// never moved because of the calling limit (so a peek can be limited).
var ReconfiguredVectors = []Vector{
	{Name: "burst lowered", Key: "r1", Burst: 11, Count: 12, Period: 60, Steps: []Step{
		{0, 2, [5]int64{0, 12, 10, -1, 10}},
		{0, 2, [5]int64{0, 12, 8, -1, 20}},
		{0, 2, [5]int64{0, 12, 6, -1, 30}},
		{0, 2, [5]int64{0, 12, 4, -1, 40}},
		{0, 2, [5]int64{0, 12, 2, -1, 50}},
		{0, 1, [5]int64{0, 12, 1, -1, 55}},
		{0, 1, [5]int64{1, 7, 0, 25, 55}},  // 6 12 60: the TAT 55 s ahead, past the 35 s tolerance
		{0, 0, [5]int64{1, 7, 0, 20, 55}},  // a peek past the tolerance is limited
		{0, 1, [5]int64{0, 21, 9, -1, 60}}, // 20 12 60: room again
		{0, 3, [5]int64{0, 21, 6, -1, 75}},
		{0, 0, [5]int64{0, 21, 6, -1, 75}},
	}, Changes: map[int]Limit{6: {6, 12, 60}, 8: {20, 12, 60}}},
	{Name: "rate changed", Key: "r2", Burst: 9, Count: 10, Period: 1, Steps: []Step{
		{0, 5, [5]int64{0, 10, 5, -1, 1}},
		{0, 5, [5]int64{0, 10, 0, -1, 1}},
		{0, 1, [5]int64{0, 5, 3, -1, 2}}, // 4 1 1: a slower rate
		{0, 0, [5]int64{0, 5, 3, -1, 2}},
		{0, 1, [5]int64{1, 5, 0, 2, 2}},     // 4 100 1: a faster one, its tolerance 50 ms
		{0, 1, [5]int64{1, 1, 0, 2, 2}},     // 0 1 60
		{0, 1, [5]int64{0, 100, 97, -1, 3}}, // 99 1 1
		{0, 0, [5]int64{0, 100, 97, -1, 3}},
	}, Changes: map[int]Limit{2: {4, 1, 1}, 4: {4, 100, 1}, 5: {0, 1, 60}, 6: {99, 1, 1}}},
	{Name: "period changed", Key: "r3", Burst: 3, Count: 1, Period: 10, Steps: []Step{
		{0, 4, [5]int64{0, 4, 0, -1, 40}},
		{0, 1, [5]int64{0, 4, 2, -1, 140}},  // 3 1 100
		{0, 1, [5]int64{1, 4, 0, 137, 140}}, // 3 1 1
		{0, 0, [5]int64{1, 4, 0, 136, 140}},
		{0, 3, [5]int64{1, 2, 0, -1, 140}},   // 1 1 1: above the limit, never
		{0, 3, [5]int64{1, 31, 0, 112, 140}}, // 30 1 1
	}, Changes: map[int]Limit{1: {3, 1, 100}, 2: {3, 1, 1}, 4: {1, 1, 1}, 5: {30, 1, 1}}},
}
