package gcra

import (
	"errors"
	"math"
	"time"
)

// Errors of NewCommandRate: the products of Redis's GCRA command whose
// overflow it reports in words of its own.
var (
	// ErrOverflowTokens: period/tokens_per_period times TOKENS overflows.
	ErrOverflowTokens = errors.New("gcra: period, tokens_per_period and TOKENS overflow")
	// ErrOverflowBurst: period/tokens_per_period times max_burst+1 overflows.
	ErrOverflowBurst = errors.New("gcra: period, tokens_per_period and max_burst overflow")
)

// NewCommandRate builds the Rate of Redis's GCRA command (its 8.8
// milestones): tokensPerPeriod actions every periodSeconds, a float, so that
// sub-second periods work; bursts of maxBurst+1; this call charging count.
// The emission interval is period/tokensPerPeriod rounded to the nearest
// nanosecond, at least one. The caller has checked the ranges Redis checks
// (maxBurst >= 0, tokensPerPeriod >= 1, 0 < periodSeconds < 1e12, count >=
// 1); what remains is the overflow of the products, checked as Redis checks
// them.
func NewCommandRate(maxBurst, tokensPerPeriod int64, periodSeconds float64, count int64) (Rate, error) {
	ei := int64(math.Round(periodSeconds * float64(time.Second) / float64(tokensPerPeriod)))
	ei = max(ei, 1)
	limit := maxBurst
	if limit < math.MaxInt64 {
		limit++ // as Redis: max_burst + 1, unless that overflows
	}
	return rate(ei, limit, count, ErrOverflowTokens, ErrOverflowBurst)
}

// IntsCeil returns the five integers of the GCRA command's reply: as Ints,
// but both durations rounded up to whole seconds, as Redis rounds them.
func (r Result) IntsCeil() [5]int64 {
	return replyInts(r.Limited, r.Limit, r.Remaining, ceilDiv(r.RetryAfter, time.Second), ceilDiv(r.ResetAfter, time.Second))
}

// ceilDiv is d/unit rounded up for d >= 0, and -1 for a negative d (a wait
// that can never end).
func ceilDiv(d, unit time.Duration) int64 {
	if d < 0 {
		return -1
	}
	q := int64(d / unit)
	if d%unit > 0 {
		q++
	}
	return q
}
