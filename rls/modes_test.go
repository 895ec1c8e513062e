package rls

import (
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

const metadataRules = `domain: md
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1}
    metadata: {team: alpha, tier: {name: gold, level: 2}}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 5}
    metadata: {team: beta, tier: {name: silver, region: eu}, flag: true, tags: [a, 1]}
  - key: detailed
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 5}
    metadata: {dropped: true}
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 10}
        metadata: {dropped: true}
  - key: page
    value: /v1/*
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: page
    value: /v2/*
    rate_limit: {unit: minute, requests_per_unit: 10}
`

// jsonOf is a Struct as JSON, as Envoy's access log would print it.
func jsonOf(t *testing.T, s *structpb.Struct) string {
	t.Helper()
	b, err := protojson.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// With RESPONSE_DYNAMIC_METADATA the answer's dynamic_metadata is the
// reference's: the domain, each descriptor's entries and hits_addend, the
// request's hits_addend, and the metadata of the rules that passed, merged
// (the first descriptor's value wins, structs merged key by key); a rule
// over its limit brings none.
func TestDynamicMetadata(t *testing.T) {
	r := newRig(t, loadString(t, metadataRules), Options{DynamicMetadata: true}, referenceNow)
	req := request("md", desc(E{"user", "a"}), withHits(desc(E{"path", "/x"}), 2))
	resp := r.call(t, req)
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	require.JSONEq(t, `{
		"domain": "md",
		"descriptors": [{"entries": ["user=a"]}, {"entries": ["path=/x"], "hitsAddend": 2}],
		"metadata": {"team": "alpha", "tier": {"name": "gold", "level": 2, "region": "eu"}, "flag": true, "tags": ["a", 1]}
	}`, jsonOf(t, resp.DynamicMetadata))

	req.HitsAddend = 1
	resp = r.call(t, req)
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode)
	require.JSONEq(t, `{
		"domain": "md",
		"descriptors": [{"entries": ["user=a"]}, {"entries": ["path=/x"], "hitsAddend": 2}],
		"hitsAddend": 1,
		"metadata": {"team": "beta", "tier": {"name": "silver", "region": "eu"}, "flag": true, "tags": ["a", 1]}
	}`, jsonOf(t, resp.DynamicMetadata), "user is over its limit: its rule's metadata is left out")

	// A second answer merges anew: the rules' metadata was not changed by
	// the first merge (the reference's merge writes into its rules').
	resp = r.call(t, request("md", desc(E{"path", "/x"})))
	require.JSONEq(t, `{"domain": "md", "descriptors": [{"entries": ["path=/x"]}],
		"metadata": {"team": "beta", "tier": {"name": "silver", "region": "eu"}, "flag": true, "tags": ["a", 1]}}`, jsonOf(t, resp.DynamicMetadata))

	// A limit override is written as protobuf text; a detailed_metric
	// rule ending its branch, and one renamed by value_to_metric, lose
	// their metadata, as in the reference, which rebuilds them without it.
	over := withOverride(desc(E{"detailed", "d"}), 3, typev3.RateLimitUnit_MINUTE)
	resp = r.call(t, request("md", over, desc(E{"detailed", "d"}), desc(E{"route", "/api"}, E{"method", "GET"})))
	md := resp.DynamicMetadata.AsMap()
	require.Equal(t, []any{"detailed=d"}, md["descriptors"].([]any)[0].(map[string]any)["entries"])
	require.Equal(t, strings.Join(strings.Fields(over.Limit.String()), " "), "requests_per_unit:3 unit:MINUTE")
	require.Equal(t, "requests_per_unit:3 unit:MINUTE", strings.Join(strings.Fields(md["descriptors"].([]any)[0].(map[string]any)["limit"].(string)), " "))
	require.NotContains(t, md, "metadata")

	r = newRig(t, loadString(t, metadataRules), Options{}, referenceNow)
	require.Nil(t, r.call(t, req).DynamicMetadata, "off by default")
}

// value_to_metric names a rule's stats by the request's value at the
// levels that have it and matched by their key alone or by a wildcard;
// detailed_metric by every value.
func TestValueToMetricStatsKeys(t *testing.T) {
	rules := loadString(t, metadataRules)
	for _, tc := range []struct {
		entries []Entry
		want    string
	}{
		{[]Entry{{"route", "/api"}, {"method", "GET"}}, "md.route_/api.method"},
		{[]Entry{{"route", ""}, {"method", "GET"}}, "md.route.method"},
		{[]Entry{{"page", "/v1/users"}}, "md.page_/v1/users"},
		{[]Entry{{"page", "/v2/users"}}, "md.page_/v2/*"},
		{[]Entry{{"user", "a"}}, "md.user"},
		{[]Entry{{"detailed", "d"}}, "md.detailed_d"},
	} {
		require.Equal(t, tc.want, rules.Lookup("md", tc.entries).StatsKey, "%v", tc.entries)
	}
	r := newRig(t, rules, Options{}, referenceNow)
	r.call(t, request("md", desc(E{"route", "/api"}, E{"method", "GET"})))
	m := r.svc.metrics
	require.Equal(t, 1.0, testutil.ToFloat64(m.totalHits.WithLabelValues("md.route_/api.method")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.totalHits.WithLabelValues("md.route.method")))
}

// The global shadow mode answers OK where the rules say OVER_LIMIT, leaves
// each descriptor's status and the headers as decided, and counts it; the
// global quota mode answers OVER_LIMIT only when every descriptor is over
// (one that matches no rule counts, as in the reference, and is never
// over).
func TestGlobalShadowAndQuotaModes(t *testing.T) {
	rules := loadString(t, "domain: g\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1}\n  - key: b\n    rate_limit: {unit: hour, requests_per_unit: 1}\n")
	r := newRig(t, rules, Options{ShadowMode: true, ResponseHeaders: true}, referenceNow)
	r.call(t, request("g", desc(E{"a", "1"})))
	resp := r.call(t, request("g", desc(E{"a", "1"})))
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.Statuses[0].Code, "the status stays as decided")
	require.Equal(t, "0", resp.ResponseHeadersToAdd[1].Value, "RateLimit-Remaining")
	require.Equal(t, 1.0, testutil.ToFloat64(r.svc.metrics.globalShadowMode))
	require.Equal(t, 1.0, testutil.ToFloat64(r.svc.metrics.overLimit.WithLabelValues("g.a")))

	q := newRig(t, rules, Options{QuotaMode: true}, referenceNow)
	q.call(t, request("g", desc(E{"a", "1"}), desc(E{"b", "1"})))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, q.call(t, request("g", desc(E{"a", "1"}), desc(E{"b", "1"}))).OverallCode, "all over")
	q.call(t, request("g", desc(E{"a", "2"})))
	require.Equal(t, pb.RateLimitResponse_OK, q.call(t, request("g", desc(E{"a", "2"}), desc(E{"b", "2"}))).OverallCode, "one within")
	require.Equal(t, pb.RateLimitResponse_OK, q.call(t, request("g", desc(E{"a", "1"}), desc(E{"none", "x"}))).OverallCode,
		"a descriptor without a rule is a quota descriptor that is never over")
}
