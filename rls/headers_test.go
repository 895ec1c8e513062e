package rls

import (
	"strconv"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// headers is an answer's RateLimit-* headers: limit, remaining, reset.
func headers(t *testing.T, resp *pb.RateLimitResponse) [3]string {
	t.Helper()
	got := map[string]string{}
	for _, h := range resp.ResponseHeadersToAdd {
		got[h.Key] = h.Value
	}
	require.Len(t, got, 3, "%v", got)
	return [3]string{got["RateLimit-Limit"], got["RateLimit-Remaining"], got["RateLimit-Reset"]}
}

// A GCRA rule's headers announce what can pass at once (burst+1), so that
// remaining never exceeds the limit; over the limit, remaining is 0 and the
// reset is when the next request passes; allowed, the reset is when the
// whole burst is back.
func TestGCRAHeadersAreCoherent(t *testing.T) {
	rules := loadString(t, "domain: h\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 20}\n")
	r := newRig(t, rules, Options{ResponseHeaders: true}, referenceNow)
	// 10 a second: a request takes 100 ms of the 2.1 s the burst spans.
	require.Equal(t, [3]string{"21", "20", "1"}, headers(t, r.call(t, request("h", desc(E{"user", "a"})))))
	for i := 2; i <= 21; i++ {
		resp := r.call(t, request("h", desc(E{"user", "a"})))
		require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "request %d", i)
		h := headers(t, resp)
		require.Equal(t, [3]string{"21", strconv.Itoa(21 - i), strconv.Itoa((i + 9) / 10)}, h, "request %d: the burst back in i*100 ms", i)
	}
	over := r.call(t, request("h", desc(E{"user", "a"})))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, over.OverallCode)
	require.Equal(t, [3]string{"21", "0", "1"}, headers(t, over), "the next one passes in 100 ms")

	// More hits than can ever pass at once: over, nothing remains for it,
	// and the reset is when the whole burst is back, the most it could get.
	r.clock.Add(3 * time.Second)
	big := r.call(t, request("h", withHits(desc(E{"user", "b"}), 30)))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, big.OverallCode)
	require.Equal(t, [3]string{"21", "0", "0"}, headers(t, big))
}

// A sliding-window rule's headers: the window's limit, what remains of it,
// and over it when the next request passes.
func TestSlidingWindowHeadersAreCoherent(t *testing.T) {
	rules := loadString(t, "domain: h\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window}\n")
	r := newRig(t, rules, Options{ResponseHeaders: true}, referenceNow)
	require.Equal(t, "2", headers(t, r.call(t, request("h", desc(E{"user", "a"}))))[0])
	second := headers(t, r.call(t, request("h", desc(E{"user", "a"}))))
	require.Equal(t, [2]string{"2", "0"}, [2]string{second[0], second[1]})
	over := r.call(t, request("h", desc(E{"user", "a"})))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, over.OverallCode)
	h := headers(t, over)
	require.Equal(t, [2]string{"2", "0"}, [2]string{h[0], h[1]})
	reset, err := strconv.Atoi(h[2])
	require.NoError(t, err)
	require.True(t, reset >= 1 && reset <= 60, "reset %d: when the next one passes, within the minute", reset)
}

// The headers' names and the near-limit share are the operator's, as the
// reference's LIMIT_*_HEADER and NEAR_LIMIT_RATIO make them.
func TestHeaderNamesAndNearLimitRatio(t *testing.T) {
	rules := loadString(t, "domain: h\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 10}\n")
	r := newRig(t, rules, Options{ResponseHeaders: true, LimitHeader: "X-Limit", RemainingHeader: "X-Left", ResetHeader: "X-Reset",
		NearLimitRatio: 0.5}, referenceNow)
	var resp *pb.RateLimitResponse
	for range 7 {
		resp = r.call(t, request("h", desc(E{"user", "a"})))
	}
	var names []string
	for _, h := range resp.ResponseHeadersToAdd {
		names = append(names, h.Key+"="+h.Value)
	}
	require.Equal(t, []string{"X-Limit=10", "X-Left=3", "X-Reset=1216"}, names)
	require.Equal(t, 2.0, testutil.ToFloat64(r.svc.metrics.nearLimit.WithLabelValues("h.user")), "hits 6 and 7 past half of 10")
}
