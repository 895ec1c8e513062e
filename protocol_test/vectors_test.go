package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra/gcratest"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// The reference vectors are gcratest.All(), the same data gcra's own tests
// run: each a key, CL.THROTTLE's arguments (changed while the key is in use,
// for the reconfigured ones) and the steps, each at an offset from the
// vector's start, charging a quantity, and the five integers a user sees.

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sameInstant splits v's steps into runs at the same instant, which a
// pipeline or one redis-cli invocation can send together.
func sameInstant(v gcratest.Vector) [][]int {
	var out [][]int
	for i, s := range v.Steps {
		if i == 0 || s.At != v.Steps[i-1].At {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], i)
	}
	return out
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// batchThrottler sends the commands of one group at once and returns one
// reply (or error) per command.
type batchThrottler func(t *testing.T, cmds [][]string) ([][]int64, []error)

// runVectors plays every reference vector, each on a fresh server, through do,
// setting the manual clock before each group of same-instant steps.
func runVectors(t *testing.T, connect func(t *testing.T, ts *harness.TestServer) batchThrottler) {
	for _, v := range gcratest.All() {
		t.Run(v.Name, func(t *testing.T) {
			ts := harness.StartServer(t)
			do := connect(t, ts)
			for _, g := range sameInstant(v) {
				ts.Clock.Set(harness.T0.Add(v.Steps[g[0]].At))
				cmds := make([][]string, len(g))
				for j, i := range g {
					cmds[j] = v.Args(i)
				}
				got, errs := do(t, cmds)
				require.Len(t, got, len(g))
				for j, i := range g {
					s := v.Steps[i]
					if errs[j] != nil {
						t.Errorf("step %d: at %v %s = error %v want %v", i, s.At, strings.Join(cmds[j], " "), errs[j], s.Want)
						continue
					}
					if !equalInts(got[j], s.Want) {
						t.Errorf("step %d: at %v %s = %v want %v", i, s.At, strings.Join(cmds[j], " "), got[j], s.Want)
					}
				}
			}
		})
	}
}

func equalInts(got []int64, want [5]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func anyArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// goRedisOneByOne sends each command in its own round trip.
func goRedisOneByOne(opts ...func(*redis.Options)) func(t *testing.T, ts *harness.TestServer) batchThrottler {
	return func(t *testing.T, ts *harness.TestServer) batchThrottler {
		rdb := ts.GoRedis(t, opts...)
		return func(t *testing.T, cmds [][]string) ([][]int64, []error) {
			got, errs := make([][]int64, len(cmds)), make([]error, len(cmds))
			for i, c := range cmds {
				got[i], errs[i] = rdb.Do(harness.Ctx(t), anyArgs(c)...).Int64Slice()
			}
			return got, errs
		}
	}
}

func TestVectorsGoRedisRESP3(t *testing.T) {
	runVectors(t, goRedisOneByOne())
}

func TestVectorsGoRedisRESP2(t *testing.T) {
	runVectors(t, goRedisOneByOne(func(o *redis.Options) { o.Protocol = 2 }))
}

// Every group of same-instant steps goes out as one pipeline: one write, one
// read of all the replies.
func TestVectorsGoRedisPipeline(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			runVectors(t, func(t *testing.T, ts *harness.TestServer) batchThrottler {
				rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
				return func(t *testing.T, cmds [][]string) ([][]int64, []error) {
					pipe := rdb.Pipeline()
					results := make([]*redis.Cmd, len(cmds))
					for i, c := range cmds {
						results[i] = pipe.Do(harness.Ctx(t), anyArgs(c)...)
					}
					_, err := pipe.Exec(harness.Ctx(t))
					// Exec reports the first failed command; each is checked below.
					_ = err
					got, errs := make([][]int64, len(cmds)), make([]error, len(cmds))
					for i, r := range results {
						got[i], errs[i] = r.Int64Slice()
					}
					return got, errs
				}
			})
		})
	}
}

func TestVectorsRueidis(t *testing.T) {
	runVectors(t, func(t *testing.T, ts *harness.TestServer) batchThrottler {
		c := ts.Rueidis(t)
		return func(t *testing.T, cmds [][]string) ([][]int64, []error) {
			built := make(rueidis.Commands, len(cmds))
			for i, a := range cmds {
				built[i] = c.B().Arbitrary(a[0]).Keys(a[1]).Args(a[2:]...).Build()
			}
			got, errs := make([][]int64, len(cmds)), make([]error, len(cmds))
			for i, r := range c.DoMulti(harness.Ctx(t), built...) { // one pipeline
				got[i], errs[i] = r.AsIntSlice()
			}
			return got, errs
		}
	})
}

// The raw bytes on the wire: the same five integers under RESP2 and RESP3.
func TestVectorsRawBytes(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			for _, v := range gcratest.All() {
				t.Run(v.Name, func(t *testing.T) {
					ts := harness.StartServer(t)
					c := ts.Raw(t)
					require.Contains(t, c.Do("HELLO", proto), "proto\r\n:"+proto+"\r\n")
					steps := make([]testkit.Step, len(v.Steps))
					for i, s := range v.Steps {
						steps[i] = testkit.Step{At: s.At, Args: v.Args(i), Want: testkit.Ints(s.Want[:]...)}
					}
					testkit.RunSteps(t, steps, c.Do, func(at time.Duration) { ts.Clock.Set(harness.T0.Add(at)) })
				})
			}
		})
	}
}

// redis-cli prints each integer of the reply on its own line when its
// output is not a terminal; each same-instant group is one invocation with
// the commands on stdin.
func TestVectorsRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	for _, v := range gcratest.All() {
		t.Run(v.Name, func(t *testing.T) {
			ts := harness.StartServer(t)
			for _, g := range sameInstant(v) {
				ts.Clock.Set(harness.T0.Add(v.Steps[g[0]].At))
				var stdin, want strings.Builder
				for _, i := range g {
					stdin.WriteString(strings.Join(v.Args(i), " ") + "\n")
					want.WriteString(cliInts(v.Steps[i].Want))
				}
				got := harness.CLI(t, ts.Port, stdin.String())
				if got != want.String() {
					t.Errorf("steps %v at %v: redis-cli printed %q want %q", g, v.Steps[g[0]].At, got, want.String())
				}
			}
		})
	}
}

// cliInts is how redis-cli prints a CL.THROTTLE reply to a pipe.
func cliInts(want [5]int64) string {
	var b strings.Builder
	for _, n := range want {
		b.WriteString(itoa(n) + "\n")
	}
	return b.String()
}

// The stats INFO reports count decisions: after the 15-step table, 12
// allowed (the peek included) and 3 limited.
func TestInfoCountsDecisions(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	v := gcratest.SpecVectors[0]
	for i, s := range v.Steps {
		ts.Clock.Set(harness.T0.Add(s.At))
		require.NoError(t, rdb.Do(harness.Ctx(t), anyArgs(v.Args(i))...).Err())
	}
	info, err := rdb.Info(harness.Ctx(t), "stats").Result()
	require.NoError(t, err)
	require.Contains(t, info, "\r\nthrottle_allowed:12\r\n")
	require.Contains(t, info, "\r\nthrottle_limited:3\r\n")
}

// Edge cases of CL.THROTTLE that follow from the math, one server and
// one connection, each on its own key.
func TestThrottleEdgeCases(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)

	// quantity > limit on an existing key: limited, retry_after -1, the key
	// as it was.
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "big", "4", "1", "1"))
	require.Equal(t, testkit.Ints(1, 5, 4, -1, 1), c.Do("CL.THROTTLE", "big", "4", "1", "1", "6"))
	require.Equal(t, testkit.Ints(1, 5, 4, -1, 1), c.Do("CL.THROTTLE", "big", "4", "1", "1", "1000000"))
	require.Equal(t, testkit.Ints(0, 5, 0, -1, 5), c.Do("CL.THROTTLE", "big", "4", "1", "1", "4"), "exactly the rest of the burst")

	// Only count/period matters: 15 30 60 and 15 1 2 answer alike, call by call.
	for i := 0; i < 20; i++ {
		a := c.Do("CL.THROTTLE", "ratio-a", "15", "30", "60")
		b := c.Do("CL.THROTTLE", "ratio-b", "15", "1", "2")
		require.Equal(t, a, b, "call %d", i)
		ts.Clock.Advance(700 * time.Millisecond)
	}

	// Where redis-cell reports remaining > limit (6024 for k 6000 6000 1),
	// redcell stays within the limit: ei truncates to 166666 ns, and a
	// reset_after under a millisecond is 0 s.
	require.Equal(t, testkit.Ints(0, 6001, 6000, -1, 0), c.Do("CL.THROTTLE", "fast", "6000", "6000", "1"))
	// Two million a second: ei = 500 ns; reset_after 500 ns is below the
	// millisecond that rounds up.
	require.Equal(t, testkit.Ints(0, 11, 10, -1, 0), c.Do("CL.THROTTLE", "faster", "10", "2000000", "1"))
	for i := 0; i < 11; i++ {
		c.Do("CL.THROTTLE", "faster", "10", "2000000", "1")
	}
	require.Equal(t, testkit.Ints(1, 11, 0, 0, 0), c.Do("CL.THROTTLE", "faster", "10", "2000000", "1"), "limited with under a millisecond to wait")

	// A TAT further ahead than the calling limit's tolerance (left there by
	// a larger burst) is obeyed as redis-cell obeys it, and a limited call
	// or a peek leaves it where it is.
	for i := 0; i < 10; i++ {
		c.Do("CL.THROTTLE", "lowered", "9", "1", "1")
	}
	require.Equal(t, testkit.Ints(1, 5, 0, 6, 10), c.Do("CL.THROTTLE", "lowered", "4", "1", "1"))
	require.Equal(t, testkit.Ints(1, 5, 0, 5, 10), c.Do("CL.THROTTLE", "lowered", "4", "1", "1", "0"))
	require.Equal(t, testkit.Int(10000), c.Do("PTTL", "lowered"), "the TAT is where the larger burst left it")

}

// Keys are binary-safe and any length up to --max-key-len: empty, CRLF,
// NUL, invalid UTF-8 and long keys are separate limiters, listed and deleted
// like any other.
func TestBinaryAndLongKeys(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	keys := []string{"", "a\r\nb", "\x00", "\xff\xfe", "sp ace"}
	for _, n := range []int{15, 16, 23, 24, 31, 32, 33, 64, 1000, server.DefaultMaxKeyLen} {
		keys = append(keys, strings.Repeat("k", n))
	}
	for _, k := range keys {
		require.Equal(t, testkit.Ints(0, 2, 1, -1, 1), c.Do("CL.THROTTLE", k, "1", "2", "1"), "key %.20q (%d bytes)", k, len(k))
		require.Equal(t, testkit.Ints(0, 2, 0, -1, 1), c.Do("CL.THROTTLE", k, "1", "2", "1"), "key %.20q (%d bytes)", k, len(k))
		require.Equal(t, testkit.Int(1), c.Do("EXISTS", k), "key %.20q", k)
	}
	require.Equal(t, testkit.Int(int64(len(keys))), c.Do("DBSIZE"))
	require.Equal(t, testkit.Bulks(strings.Repeat("k", server.DefaultMaxKeyLen)), c.Do("KEYS", strings.Repeat("k", 1001)+"*"))
	for _, k := range keys {
		require.Equal(t, testkit.Int(1), c.Do("DEL", k), "key %.20q", k)
	}
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
}
