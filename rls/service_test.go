package rls

import (
	"context"
	"testing"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

const twoAnHour = "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n"

// An override whose unit is UNKNOWN, which makes the reference panic and
// exit, is refused with the reason; the service goes on.
func TestOverrideWithAnUnknownUnitIsRefused(t *testing.T) {
	r := newRig(t, loadString(t, twoAnHour), Options{}, referenceNow)
	_, err := r.client.ShouldRateLimit(context.Background(), request("api", withOverride(desc(E{"user", "a"}), 5, typev3.RateLimitUnit_UNKNOWN)))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "descriptor 0: the limit override's unit 0 is not second, minute, hour, day, week, month or year", status.Convert(err).Message())
	require.Equal(t, uint32(1), r.call(t, request("api", desc(E{"user", "a"}))).Statuses[0].LimitRemaining)
}

// Without --rls-response-headers no header is added.
func TestNoHeadersByDefault(t *testing.T) {
	r := newRig(t, loadString(t, twoAnHour), Options{}, referenceNow)
	require.Empty(t, r.call(t, request("api", desc(E{"user", "a"}))).ResponseHeadersToAdd)
}

// The reference's stats per rule: three hits on a limit of 2 are three
// total, two within, one near (past 80%: the second), one over.
func TestMetricsPerRule(t *testing.T) {
	store := storage.New(storage.Config{Shards: 2})
	clock := &manualClock{t: referenceNow}
	m := NewMetrics()
	r := startRig(t, NewService(loadString(t, twoAnHour), &Local{Store: store}, clock.Now, Options{}, m), store, clock)
	for range 3 {
		r.call(t, request("api", desc(E{"user", "a"})))
	}
	for name, want := range map[string]float64{"total_hits": 3, "within_limit": 2, "near_limit": 1, "over_limit": 1, "shadow_mode": 0} {
		var got float64
		switch name {
		case "total_hits":
			got = testutil.ToFloat64(m.totalHits.WithLabelValues("api.user"))
		case "within_limit":
			got = testutil.ToFloat64(m.withinLimit.WithLabelValues("api.user"))
		case "near_limit":
			got = testutil.ToFloat64(m.nearLimit.WithLabelValues("api.user"))
		case "over_limit":
			got = testutil.ToFloat64(m.overLimit.WithLabelValues("api.user"))
		case "shadow_mode":
			got = testutil.ToFloat64(m.shadowMode.WithLabelValues("api.user"))
		}
		require.Equal(t, want, got, name)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(m.requests.WithLabelValues("OK")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues("OVER_LIMIT")))
}

// The RLS's decisions feed CL.TOP from the store, as the RESP front's do:
// three hits on a limit of 2 are one limited decision on the rule's key
// (the reference's fixed window, decided over its count).
func TestRLSDecisionsFeedTheTop(t *testing.T) {
	store := storage.New(storage.Config{Shards: 2})
	clock := &manualClock{t: referenceNow}
	r := startRig(t, NewService(loadString(t, twoAnHour), &Local{Store: store}, clock.Now, Options{}, NewMetrics()), store, clock)
	for range 3 {
		r.call(t, request("api", desc(E{"user", "a"})))
	}
	top := store.Top(10, gcra.InstantOf(clock.Now()))
	require.Len(t, top, 1)
	require.Equal(t, int64(1), top[0].Limited)
	require.Contains(t, top[0].Key, "api_user_a", "the reference's key for the rule")
}
