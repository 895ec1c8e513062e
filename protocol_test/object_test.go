package protocol_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// STRLEN, MEMORY USAGE and OBJECT through go-redis's typed API, and the help
// texts byte for byte.
func TestStrlenMemoryObject(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	c := harness.Ctx(t)
	n, err := rdb.StrLen(c, "k").Result()
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = rdb.MemoryUsage(c, "k").Result()
	require.ErrorIs(t, err, redis.Nil)
	_, err = rdb.ObjectEncoding(c, "k").Result()
	require.ErrorIs(t, err, redis.Nil)

	require.NoError(t, rdb.Do(c, "CL.THROTTLE", "k", "4", "1", "10").Err())
	tat, err := rdb.Get(c, "k").Result()
	require.NoError(t, err)
	n, err = rdb.StrLen(c, "k").Result()
	require.NoError(t, err)
	require.Equal(t, int64(len(tat)), n, "the length of GET's value")
	require.Equal(t, int64(19), n)
	usage, err := rdb.MemoryUsage(c, "k").Result()
	require.NoError(t, err)
	require.Equal(t, int64(8*32), usage, "the whole table of its shard (8 slots of 32 bytes), where it is alone")
	usage, err = rdb.MemoryUsage(c, "k", 0).Result()
	require.NoError(t, err)
	require.Equal(t, int64(8*32), usage)
	enc, err := rdb.ObjectEncoding(c, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "int", enc)
	refs, err := rdb.ObjectRefCount(c, "k").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), refs)
	idle, err := rdb.ObjectIdleTime(c, "k").Result()
	require.NoError(t, err)
	require.Zero(t, idle)
	_, err = rdb.ObjectFreq(c, "k").Result()
	require.EqualError(t, err, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")

	raw := ts.Raw(t)
	require.Equal(t, testkit.Simples(
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP",
		"    Print this help.",
	), raw.Do("OBJECT", "HELP"))
	require.Equal(t, testkit.Simples(
		"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		"HELP",
		"    Print this help.",
	), raw.Do("MEMORY", "HELP"))

	// Cluster clients find the key of OBJECT's and MEMORY's subcommands.
	require.Contains(t, raw.Do("COMMAND", "INFO", "object|encoding"), testkit.Bulk("index")+testkit.Int(2))
	require.Contains(t, raw.Do("COMMAND", "INFO", "memory|usage"), testkit.Bulk("index")+testkit.Int(2))
	require.Equal(t, testkit.Bulks("k"), raw.Do("COMMAND", "GETKEYS", "STRLEN", "k"))
}

// redis-cli --bigkeys and --memkeys size every key without a warning: STRLEN
// gives the TAT's 19 digits, MEMORY USAGE what the key costs.
func TestRedisCLIBigkeysAndMemkeys(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	keys := []string{"user:1", "user:2", "a-key-too-long-to-be-stored-inline:1", "k"}
	for i, k := range keys {
		require.Equal(t, testkit.Ints(0, 5, 4, -1, int64(10*(i+1))), c.Do("CL.THROTTLE", k, "4", "1", strconv.Itoa(10*(i+1))))
	}
	ts.Clock.Advance(time.Second) // TATs stay 19 digits; nothing expires

	out := harness.CLI(t, ts.Port, "", "--bigkeys")
	require.NotContains(t, strings.ToLower(out), "error", out)
	require.NotContains(t, out, "Warning", out)
	require.Contains(t, out, "Sampled 4 keys in the keyspace!\n", out)
	require.Contains(t, out, fmt.Sprintf("Total key length in bytes is %d (avg len %.2f)\n", totalLen(keys), float64(totalLen(keys))/4), out)
	require.Regexp(t, `\nBiggest string found '"[^']+"' has 19 bytes\n`, out)
	require.Contains(t, out, "4 strings with 76 bytes (100.00% of keys, avg size 19.00)\n", out)

	var total int64
	sizes := map[string]int64{}
	for _, k := range keys {
		reply := c.Do("MEMORY", "USAGE", k)
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
		require.NoError(t, err, "MEMORY USAGE %s = %q", k, reply)
		sizes[k] = n
		total += n
	}
	var biggest int64
	for _, n := range sizes {
		biggest = max(biggest, n)
	}
	for _, args := range [][]string{{"--memkeys"}, {"--memkeys", "--memkeys-samples", "3"}} {
		out = harness.CLI(t, ts.Port, "", args...)
		require.NotContains(t, strings.ToLower(out), "error", out)
		require.NotContains(t, out, "Warning", out)
		require.Contains(t, out, "Sampled 4 keys in the keyspace!\n", out)
		require.Contains(t, out, fmt.Sprintf("4 strings with %d bytes (100.00%% of keys, avg size %.2f)\n", total, float64(total)/4), out)
		m := regexp.MustCompile(`\nBiggest string found '"([^']+)"' has (\d+) bytes\n`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		require.Equal(t, strconv.FormatInt(biggest, 10), m[2], out)
		require.Equal(t, biggest, sizes[m[1]], "the key named is one of the biggest: %s", out)
	}
}

func totalLen(keys []string) int {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	return n
}
