package gcra

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// redisGCRA is Redis's own GCRA command (src/gcra.c of its 8.8 milestones,
// gcraCommand) in the units it uses: microseconds, the emission interval
// period/tokens_per_period rounded to the nearest microsecond, both
// durations rounded up to whole seconds, and a stored TAT obeyed as it is.
// A key lives until its TAT, as the specification says (Redis sets its
// expiry at the TAT truncated to milliseconds).
type redisGCRA struct{ tats map[string]int64 }

func (m *redisGCRA) gcra(key string, maxBurst, tokens int64, period float64, count, nowUs int64) [5]int64 {
	burst := maxBurst + 1
	ei := int64(period*1e6/float64(tokens) + 0.5)
	ei = max(ei, 1)
	variance, inc := ei*burst, ei*count
	tat, ok := m.tats[key]
	if !ok || tat <= nowUs {
		tat = nowUs
	}
	newTAT := max(nowUs, tat) + inc
	diff := nowUs - (newTAT - variance)
	limited, retry := int64(0), int64(-1)
	var ttl int64
	if diff < 0 {
		limited = 1
		if inc <= variance {
			retry = int64(math.Ceil(float64(-diff) / 1e6))
		}
		ttl = tat - nowUs
	} else {
		ttl = newTAT - nowUs
		if m.tats == nil {
			m.tats = map[string]int64{}
		}
		m.tats[key] = newTAT
	}
	var remaining int64
	if next := variance - ttl; next > -ei {
		remaining = next / ei
	}
	return [5]int64{limited, burst, remaining, retry, int64(math.Ceil(float64(ttl) / 1e6))}
}

// The GCRA command answers as Redis's own on random traffic over keys whose
// limits change, wherever the emission interval is a whole number of
// microseconds (Redis keeps microseconds, redcell nanoseconds).
func TestCommandAnswersAsRedisGCRA(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 88))
		type limit struct {
			burst, tokens int64
			period        float64
		}
		var limits []limit
		for len(limits) < 3 {
			l := limit{[]int64{0, 1, 4, 9, 99}[rng.IntN(5)], []int64{1, 2, 5, 10, 100, 1000}[rng.IntN(6)],
				[]float64{0.5, 1, 2, 10, 60, 3600}[rng.IntN(6)]}
			if ei := l.period * 1e6 / float64(l.tokens); ei == math.Trunc(ei) {
				limits = append(limits, l)
			}
		}
		model := redisGCRA{}
		tats := map[string]Instant{}
		nowUs := int64(t0) / 1000
		for step := range 300 {
			nowUs += []int64{0, 0, 1, 999, 1000, 250_000, 1_500_000, 60_000_000}[rng.IntN(8)]
			key := fmt.Sprint(rng.IntN(3))
			l := limits[0]
			if rng.IntN(8) == 0 {
				l = limits[rng.IntN(len(limits))]
			}
			count := []int64{1, 1, 1, 2, 3, l.burst + 1, l.burst + 2}[rng.IntN(7)]
			want := model.gcra(key, l.burst, l.tokens, l.period, count, nowUs)
			r, err := NewCommandRate(l.burst, l.tokens, l.period, count)
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			res, next, store, err := Decide(r, tats[key], Instant(nowUs*1000))
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if store {
				tats[key] = next
			}
			if got := res.IntsCeil(); got != want {
				t.Fatalf("seed %d step %d: key %s at +%v GCRA %d %d %v TOKENS %d = %v, Redis %v", seed, step, key,
					time.Duration(nowUs*1000-int64(t0)), l.burst, l.tokens, l.period, count, got, want)
			}
		}
	}
}
