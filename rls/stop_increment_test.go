package rls

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// stopReferenceNow is the second envoyproxy/ratelimit answered
// testdata/reference/stop/answers.jsonl at: 41 s into its hour.
var stopReferenceNow = time.Unix(1796364041, 0)

// With StopIncrementWhenOverLimit a request that one limit refuses spends
// none of the others, as envoyproxy/ratelimit (at referenceCommit, with
// Redis, STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT and
// LIMIT_RESPONSE_HEADERS_ENABLED set) answered the same requests over
// testdata/reference/stop/s.yaml: field by field, and b's count is 1
// lower after each refused request than without the setting.
func TestStopIncrementWhenOverLimitAsTheReference(t *testing.T) {
	answers := readReferenceAnswers(t, "testdata/reference/stop/answers.jsonl")
	type step struct {
		name string
		hits uint32
		ds   []*pbc.RateLimitDescriptor
	}
	steps := []step{
		{"a b 1", 0, []*pbc.RateLimitDescriptor{desc(E{"a", "1"}), desc(E{"b", "1"})}},
		{"a b 2 a over", 0, []*pbc.RateLimitDescriptor{desc(E{"a", "1"}), desc(E{"b", "1"})}},
		{"b alone", 0, []*pbc.RateLimitDescriptor{desc(E{"b", "1"})}},
		{"c b 3 hits", 3, []*pbc.RateLimitDescriptor{desc(E{"c", "1"}), desc(E{"b", "1"})}},
		{"c b 1 hit c over", 1, []*pbc.RateLimitDescriptor{desc(E{"c", "1"}), desc(E{"b", "1"})}},
		{"b alone again", 0, []*pbc.RateLimitDescriptor{desc(E{"b", "1"})}},
	}
	require.Len(t, answers, len(steps))
	rules := loadFile(t, "testdata/reference/stop/s.yaml")
	for _, stop := range []bool{true, false} {
		r := newRig(t, rules, Options{ResponseHeaders: true, StopIncrementWhenOverLimit: stop}, stopReferenceNow)
		var last *pb.RateLimitResponse
		for i, s := range steps {
			require.Equal(t, answers[i].Name, s.name)
			q := request("s", s.ds...)
			q.HitsAddend = s.hits
			last = r.call(t, q)
			if !stop {
				continue
			}
			want := &pb.RateLimitResponse{}
			require.NoError(t, protojson.Unmarshal(answers[i].Resp, want))
			if !proto.Equal(want, last) {
				t.Fatalf("%d %s:\n got %s\nwant %s (envoyproxy/ratelimit at %s)", i, s.name, protojson.Format(last), protojson.Format(want), referenceCommit)
			}
		}
		if !stop {
			require.Equal(t, uint32(2), last.Statuses[0].LimitRemaining, "without the setting, b counted the two refused requests too")
		}
	}
}

// readReferenceAnswers reads a file of the reference's answers, one JSON
// object a line.
func readReferenceAnswers(t *testing.T, path string) []referenceAnswer {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var answers []referenceAnswer
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a referenceAnswer
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
		answers = append(answers, a)
	}
	require.NoError(t, sc.Err())
	return answers
}
