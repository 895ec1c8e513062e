// Package gcratest holds CL.THROTTLE's reference vectors as data: sequences
// of calls on one key, each with the five integers it must answer, so that
// the algorithm's tests (gcra) and the server's (protocol_test) check
// exactly the same sequences. It imports nothing of ours.
package gcratest

import "time"

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
