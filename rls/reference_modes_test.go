package rls

import (
	"os"
	"strings"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// modesReferenceNow is the second envoyproxy/ratelimit answered
// testdata/reference/modes/answers.jsonl at: 1617 s into its hour, 57 s
// into its minute.
var modesReferenceNow = time.Unix(1796362017, 0)

// modesRequests are the requests of testdata/reference/modes/answers.jsonl,
// in order, over the rules in testdata/reference/modes (md.yaml, g.yaml).
func modesRequests() []struct {
	name string
	req  *pb.RateLimitRequest
} {
	path := withHits(desc(E{"path", "/x"}), 2)
	over := withOverride(desc(E{"detailed", "d"}), 3, typev3.RateLimitUnit_MINUTE)
	r := func(domain string, hits uint32, ds ...*pbc.RateLimitDescriptor) *pb.RateLimitRequest {
		q := request(domain, ds...)
		q.HitsAddend = hits
		return q
	}
	return []struct {
		name string
		req  *pb.RateLimitRequest
	}{
		{"metadata 1", r("md", 0, desc(E{"user", "a"}), path)},
		{"metadata 2 user over", r("md", 1, desc(E{"user", "a"}), path)},
		{"metadata 3 path alone", r("md", 0, desc(E{"path", "/x"}))},
		{"metadata 4 override detailed vtm", r("md", 0, over, desc(E{"detailed", "d"}), desc(E{"route", "/api"}, E{"method", "GET"}))},
		{"shadow 1", r("g", 0, desc(E{"a", "1"}))},
		{"shadow 2 over", r("g", 0, desc(E{"a", "1"}))},
	}
}

// The dynamic metadata and the global shadow mode give the answers
// envoyproxy/ratelimit gave (at referenceCommit, with Redis, run with
// RESPONSE_DYNAMIC_METADATA, SHADOW_MODE and LIMIT_RESPONSE_HEADERS_ENABLED
// set), field by field: statuses, headers, and dynamic_metadata with the
// rules' metadata merged, a rule over its limit, a limit override, a
// detailed_metric rule and a value_to_metric one as it builds them; the
// shadow mode's OK over a status still OVER_LIMIT.
func TestDynamicMetadataAndShadowModeAsTheReference(t *testing.T) {
	answers := readReferenceAnswers(t, "testdata/reference/modes/answers.jsonl")
	reqs := modesRequests()
	require.Equal(t, len(reqs), len(answers))

	var files []File
	for _, name := range []string{"testdata/reference/modes/g.yaml", "testdata/reference/modes/md.yaml"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		files = append(files, File{Name: name, Data: data})
	}
	rules, err := Load(files, LoadOptions{})
	require.NoError(t, err)
	r := newRig(t, rules, Options{ResponseHeaders: true, ShadowMode: true, DynamicMetadata: true}, modesReferenceNow)
	for i, q := range reqs {
		require.Equal(t, answers[i].Name, q.name)
		want := &pb.RateLimitResponse{}
		require.NoError(t, protojson.Unmarshal(answers[i].Resp, want))
		got := r.call(t, q.req)
		normalizeLimitText(want)
		normalizeLimitText(got)
		if !proto.Equal(want, got) {
			t.Fatalf("%d %s:\n got %s\nwant %s (envoyproxy/ratelimit at %s)", i, q.name, protojson.Format(got), protojson.Format(want), referenceCommit)
		}
	}
}

// normalizeLimitText collapses the spaces of each descriptor's limit in
// resp's dynamic_metadata: protobuf's text form adds a space at random,
// fixed per binary, so that no one compares it byte for byte (the
// reference's build and this test binary differ).
func normalizeLimitText(resp *pb.RateLimitResponse) {
	for _, d := range resp.GetDynamicMetadata().GetFields()["descriptors"].GetListValue().GetValues() {
		if l, ok := d.GetStructValue().GetFields()["limit"]; ok {
			d.GetStructValue().Fields["limit"] = structpb.NewStringValue(strings.Join(strings.Fields(l.GetStringValue()), " "))
		}
	}
}
