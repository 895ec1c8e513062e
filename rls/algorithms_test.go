package rls

import (
	"math/rand/v2"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

const algorithmRules = `domain: alg
descriptors:
  - key: g
    rate_limit: {unit: minute, requests_per_unit: 6, algorithm: gcra, burst: 2}
  - key: s
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window}
  - key: s4
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window, precision: 4}
  - key: many
    rate_limits:
      - {unit: second, requests_per_unit: 2, algorithm: gcra, burst: 4}
      - {unit: minute, requests_per_unit: 8}
`

// A gcra rule answers as CL.THROTTLE key burst requests_per_unit unit hits,
// and a sliding_window rule as CL.WINDOW key requests_per_unit unit hits
// PRECISION p: a random trace of calls, each answered by the service and by
// the engine on a store of its own, compared call by call (the code,
// limit_remaining, and duration_until_reset as reset_after in whole
// seconds).
func TestAlgorithmsDecideAsTheEngines(t *testing.T) {
	r := newRig(t, loadString(t, algorithmRules), Options{}, referenceNow)
	engine := storage.New(storage.Config{Shards: 2})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 600 {
		r.clock.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
		now := gcra.InstantOf(r.clock.Now())
		hits := uint64(rng.IntN(4))
		var res gcra.Result
		var key string
		switch i % 3 {
		case 0:
			key = "g"
			rate, err := gcra.NewRate(2, 6, 60, int64(hits))
			require.NoError(t, err)
			res, err = engine.Throttle([]byte("g"), rate, now)
			require.NoError(t, err)
		case 1, 2:
			key = map[int]string{1: "s", 2: "s4"}[i%3]
			spec, err := window.NewSpec(3, 60, int64(hits), map[string]int64{"s": 0, "s4": 4}[key], window.DefaultLogMax)
			require.NoError(t, err)
			res, _, err = engine.Window([]byte(key), spec, now, false)
			require.NoError(t, err)
		}
		st := r.call(t, request("alg", withHits(desc(E{key, "v"}), hits))).Statuses[0]
		wantCode := pb.RateLimitResponse_OK
		if res.Limited {
			wantCode = pb.RateLimitResponse_OVER_LIMIT
		}
		require.Equal(t, wantCode, st.Code, "call %d %s hits %d", i, key, hits)
		require.Equal(t, uint32(res.Remaining), st.LimitRemaining, "call %d %s hits %d", i, key, hits)
		require.Equal(t, time.Duration(gcra.Seconds(res.ResetAfter))*time.Second, st.DurationUntilReset.AsDuration(), "call %d %s", i, key)
	}
}

// Several limits on one descriptor: each decides on its own key, and the
// strictest answers (over the limit first, then the fewest remaining).
func TestSeveralLimitsTheStrictestAnswers(t *testing.T) {
	r := newRig(t, loadString(t, algorithmRules), Options{}, referenceNow) // 16 s before a minute ends
	type want struct {
		code      pb.RateLimitResponse_Code
		rpu       uint32
		unit      pb.RateLimitResponse_RateLimit_Unit
		remaining uint32
	}
	gcraLimit, minute := pb.RateLimitResponse_RateLimit_SECOND, pb.RateLimitResponse_RateLimit_MINUTE
	ok, over := pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
	for i, w := range []struct {
		after time.Duration
		want  want
	}{
		{0, want{ok, 2, gcraLimit, 4}}, // the bucket of 5 binds before the minute's 8
		{0, want{ok, 2, gcraLimit, 3}},
		{0, want{ok, 2, gcraLimit, 2}},
		{0, want{ok, 2, gcraLimit, 1}},
		{0, want{ok, 2, gcraLimit, 0}},
		{0, want{over, 2, gcraLimit, 0}},              // the bucket is empty; the minute counts it all the same (6)
		{3 * time.Second, want{ok, 8, minute, 1}},     // refilled; the minute's 7th
		{0, want{ok, 8, minute, 0}},                   // the 8th
		{0, want{over, 8, minute, 0}},                 // the minute is over, the bucket still has 3
		{13 * time.Second, want{ok, 2, gcraLimit, 4}}, // a new minute (1 counted, 7 left); the bucket, full again, has 4 left
	} {
		r.clock.Add(w.after)
		st := r.call(t, request("alg", desc(E{"many", "v"}))).Statuses[0]
		got := want{st.Code, st.CurrentLimit.RequestsPerUnit, st.CurrentLimit.Unit, st.LimitRemaining}
		require.Equal(t, w.want, got, "call %d", i)
	}
	// Each limit keeps its own key.
	_, kind, ok2 := r.store.Get([]byte("alg_many_v_second_gcra"), gcra.InstantOf(r.clock.Now()))
	require.True(t, ok2)
	require.Equal(t, storage.KindTAT, kind)
	kind, _, ok2 = r.store.Value([]byte("alg_many_v_minute"), gcra.InstantOf(r.clock.Now()))
	require.True(t, ok2)
	require.Equal(t, storage.KindWindow, kind)
}
