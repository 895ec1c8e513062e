package rls

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/redcell/redcell/storage"
)

// fuzzRules cover every algorithm, several limits on one descriptor,
// replaces, wildcards, shared thresholds, shadow and quota rules,
// unlimited, value_to_metric, detailed_metric and metadata.
const fuzzRules = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3, name: per-user}
    metadata: {team: a}
  - key: gcra
    rate_limits:
      - {unit: second, requests_per_unit: 5, algorithm: gcra, burst: 2}
      - {unit: hour, requests_per_unit: 9, algorithm: sliding_window, precision: 4}
  - key: path
    value: "/v1/*"
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 2, replaces: [{name: per-user}]}
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        detailed_metric: true
        rate_limit: {unit: hour, requests_per_unit: 4, algorithm: sliding_window}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: free
    rate_limit: {unlimited: true}
`

// FuzzShouldRateLimit sends the service any request a client can encode,
// under every global mode: it never panics, a request it answers has one
// status per descriptor and an overall code, and one it refuses is
// refused with a code Envoy reads (the request's fault, or the service's
// state), never INTERNAL.
func FuzzShouldRateLimit(f *testing.F) {
	seed := func(modes byte, req *pb.RateLimitRequest) {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(modes, b)
	}
	seed(0, request("api", desc(E{"user", "a"})))
	seed(0xff, request("api", desc(E{"user", "a"}), desc(E{"gcra", "b"}), withHits(desc(E{"path", "/v1/x"}), 3)))
	seed(0x15, request("api", desc(E{"route", "/r"}, E{"method", "GET"}), desc(E{"shadow", "s"}), desc(E{"quota", "q"})))
	seed(0x2a, request("api", withOverride(desc(E{"user", "b"}), 7, typev3.RateLimitUnit_HOUR), desc(E{"free", "f"})))
	big := request("api", desc(E{"gcra", "c"}))
	big.HitsAddend = 1 << 31
	big.Descriptors[0].HitsAddend = wrapperspb.UInt64(1 << 63)
	seed(0x08, big)
	seed(0, request("other"))
	rules, err := Load([]File{{Name: "fuzz.yaml", Data: []byte(fuzzRules)}}, LoadOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, modes byte, data []byte) {
		req := &pb.RateLimitRequest{}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		opts := Options{ResponseHeaders: modes&1 != 0, ShadowMode: modes&2 != 0, QuotaMode: modes&4 != 0,
			DynamicMetadata: modes&8 != 0, StopIncrementWhenOverLimit: modes&16 != 0}
		if modes&32 != 0 {
			opts.KeyPrefix = "p:"
		}
		clock := time.Unix(1796168384, 0)
		svc := NewService(rules, &Local{Store: storage.New(storage.Config{Shards: 2})}, func() time.Time { return clock }, opts, NewMetrics())
		for range 2 { // twice: the second decides on the state the first left
			resp, err := svc.ShouldRateLimit(context.Background(), req)
			if err != nil {
				switch status.Code(err) {
				case codes.Unknown, codes.InvalidArgument, codes.Unavailable, codes.ResourceExhausted:
				default:
					t.Fatalf("refused with %v: %v", status.Code(err), err)
				}
				return
			}
			if len(resp.Statuses) != len(req.Descriptors) {
				t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
			}
			if resp.OverallCode != pb.RateLimitResponse_OK && resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
				t.Fatalf("overall code %v", resp.OverallCode)
			}
			if opts.ShadowMode && resp.OverallCode != pb.RateLimitResponse_OK {
				t.Fatalf("shadow mode answered %v", resp.OverallCode)
			}
			if _, err := proto.Marshal(resp); err != nil {
				t.Fatalf("the answer does not encode: %v", err)
			}
			clock = clock.Add(time.Second)
		}
	})
}

// FuzzXDSResource: whatever bytes a management server sends as a
// RateLimitConfig, converting and loading them never panics, and a
// refusal names the resource (what the NACK's error_detail carries).
func FuzzXDSResource(f *testing.F) {
	for _, c := range []*rlsconf.RateLimitConfig{
		limitConfig("api-rules", "api", 3),
		{Name: "m", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{{Key: "k", Value: "v*",
			RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 2, Name: "n",
				Replaces: []*rlsconf.RateLimitReplace{{Name: "x"}}},
			Descriptors: []*rlsconf.RateLimitDescriptor{{Key: "c", ShadowMode: true, DetailedMetric: true}},
			Metadata:    &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNumberValue(1)}}}}},
	} {
		b, err := proto.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := xdsFiles([]*anypb.Any{{TypeUrl: RateLimitConfigType, Value: data}})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "resource 0: ") {
				t.Fatalf("not named: %v", err)
			}
			return
		}
		if _, err := Load(files, LoadOptions{MergeDomains: true}); err != nil && !strings.HasPrefix(err.Error(), files[0].Name) {
			t.Fatalf("refusal %q does not name the resource %q", err, files[0].Name)
		}
	})
}
