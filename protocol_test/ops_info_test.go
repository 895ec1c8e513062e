package protocol_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// infoSection is one "# Name" block of an INFO reply, its fields in order.
type infoSection struct {
	name   string
	fields [][2]string
}

// parseInfo reads INFO text by Redis's rules, failing the test on anything
// else: CRLF line ends, "# Name" headers, "field:value" lines (the field a
// run of [a-z0-9_], or cmdstat_/latency_percentiles_usec_ and a command
// name, or errorstat_ and an error prefix), one blank line between sections
// and none elsewhere, a final CRLF.
func parseInfo(t *testing.T, text string) []infoSection {
	t.Helper()
	require.True(t, text == "" || strings.HasSuffix(text, "\r\n"), "ends in CRLF")
	require.NotContains(t, strings.ReplaceAll(text, "\r\n", ""), "\n", "every line ends in CRLF, no bare LF")
	require.NotContains(t, text, "\r\n\r\n\r\n", "one blank line between sections")
	field := regexp.MustCompile(`^([a-z0-9_]+|cmdstat_[a-z.|-]+|latency_percentiles_usec_[a-z.|-]+|errorstat_[A-Z]+):([^\r\n]*)$`)
	var out []infoSection
	lines := strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "# "):
			require.True(t, i == 0 || lines[i-1] == "", "line %d: a header follows a blank line", i)
			out = append(out, infoSection{name: line[2:]})
		case line == "":
			require.True(t, i+1 < len(lines) && strings.HasPrefix(lines[i+1], "# "), "line %d: a blank line only before a header", i)
		default:
			m := field.FindStringSubmatch(line)
			require.NotNil(t, m, "line %d: %q is not field:value", i, line)
			require.NotEmpty(t, out, "line %d: a field before any header", i)
			out[len(out)-1].fields = append(out[len(out)-1].fields, [2]string{m[1], m[2]})
		}
	}
	return out
}

func sectionNames(secs []infoSection) []string {
	var names []string
	for _, s := range secs {
		names = append(names, s.name)
	}
	return names
}

func sectionFields(secs []infoSection, name string) map[string]string {
	for _, s := range secs {
		if s.name == name {
			m := map[string]string{}
			for _, f := range s.fields {
				m[f[0]] = f[1]
			}
			return m
		}
	}
	return nil
}

// Redis 7's sections, in its order, and which INFO prints without arguments.
var (
	redisAllSections     = []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace"}
	redisDefaultSections = []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Errorstats", "Cluster", "Keyspace"}
)

// INFO parses as Redis's format in every section, selects sections as Redis
// does, and its figures are the ones the commands produced.
func TestInfoIsRedisFormat(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for i := range 3 {
		require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k"+strconv.Itoa(i), "4", "1", "1"))
	}
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 2), c.Do("CL.THROTTLE", "k0", "4", "1", "1"))
	require.Equal(t, testkit.Ints(1, 5, 3, -1, 2), c.Do("CL.THROTTLE", "k0", "4", "1", "1", "9"))
	require.Equal(t, testkit.Err("ERR count must be positive"), c.Do("CL.THROTTLE", "k0", "4", "-1", "1"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'get' command"), c.Do("GET"))
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"))
	ts.Clock.Advance(1500 * time.Millisecond) // k1, k2 expire; k0 has 0.5 s left

	everything := parseInfo(t, bulkBody(t, c.Do("INFO", "everything")))
	require.Equal(t, redisAllSections, sectionNames(everything))
	require.Equal(t, redisAllSections, sectionNames(parseInfo(t, bulkBody(t, c.Do("INFO", "all")))))
	require.Equal(t, redisDefaultSections, sectionNames(parseInfo(t, bulkBody(t, c.Do("INFO")))))
	require.Equal(t, redisDefaultSections, sectionNames(parseInfo(t, bulkBody(t, c.Do("INFO", "default")))))
	require.Equal(t, []string{"Stats", "Commandstats", "Keyspace"},
		sectionNames(parseInfo(t, bulkBody(t, c.Do("INFO", "keyspace", "COMMANDSTATS", "stats")))), "Redis's order, any case")
	require.Equal(t, "", bulkBody(t, c.Do("INFO", "nosuchsection")))

	stats := sectionFields(everything, "Stats")
	for field, want := range map[string]string{
		"total_commands_processed":   "7", // 6 CL.THROTTLE that ran (one failed) and GET absent; this INFO counts once it has run
		"total_connections_received": "1",
		"rejected_connections":       "0",
		"instantaneous_ops_per_sec":  stats["instantaneous_ops_per_sec"],
		"keyspace_hits":              "2", // k0 twice
		"keyspace_misses":            "4", // k0, k1, k2 fresh and GET absent
		"expired_keys":               "0", // nothing swept yet
		"evicted_keys":               "0",
		"total_error_replies":        "2",
		"throttle_allowed":           "4",
		"throttle_limited":           "1",
	} {
		require.Equal(t, want, stats[field], "Stats %s", field)
	}
	require.Regexp(t, `^\d+$`, stats["instantaneous_ops_per_sec"])

	commandstats := sectionFields(everything, "Commandstats")
	require.Equal(t, map[string]string{
		"cmdstat_cl.throttle": "calls=6,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1",
		"cmdstat_get":         "calls=1,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0",
	}, commandstats, "the manual clock measures no time: usec 0")
	require.Equal(t, map[string]string{"errorstat_ERR": "count=2"}, sectionFields(everything, "Errorstats"))
	latency := sectionFields(everything, "Latencystats")
	require.Equal(t, "p50=0.125,p99=0.247,p99.9=0.249", latency["latency_percentiles_usec_cl.throttle"],
		"every call took 0: interpolated inside the first bucket, (0, 250ns]")
	require.Equal(t, map[string]string{"db0": "keys=3,expires=3,avg_ttl=500"}, sectionFields(everything, "Keyspace"),
		"k1 and k2 are expired but not swept (counted, as Redis does); avg_ttl samples the live k0")
	require.Equal(t, map[string]string{"cluster_enabled": "0"}, sectionFields(everything, "Cluster"))
	require.Equal(t, "2", sectionFields(parseInfo(t, bulkBody(t, c.Do("INFO", "stats"))), "Stats")["total_error_replies"])
}

// Field by field, redcell's INFO uses the names Redis 7 uses: every field
// of Server, Clients, Memory, Persistence, Stats, Replication, CPU and
// Cluster is one a real redis-server prints too, except redcell's own,
// which say so in their names, and those of a later Redis than the one
// installed (laterRedisFields). Needs redis-server.
func TestInfoFieldsAreRedisFields(t *testing.T) {
	real := harness.StartRedisServer(t).GoRedis(t)
	require.NoError(t, real.Do(harness.Ctx(t), "SET", "k", "v", "EX", "100").Err())
	require.NoError(t, real.Get(harness.Ctx(t), "k").Err())
	redisInfo := parseInfo(t, real.Info(harness.Ctx(t), "everything").Val())

	ts := harness.StartServer(t)
	c := ts.Raw(t)
	c.Do("CL.THROTTLE", "k", "4", "1", "1")
	c.Do("GET", "k")
	ours := parseInfo(t, bulkBody(t, c.Do("INFO", "everything")))

	require.Equal(t, sectionNames(redisInfo), sectionNames(ours), "the same sections in the same order")
	redcellOnly := regexp.MustCompile(`^(redcell_|throttle_|go_version$|persistence_enabled$)`)
	for _, sec := range ours {
		theirs := sectionFields(redisInfo, sec.name)
		if pattern, ok := perLinePatterns[sec.name]; ok {
			// Per-command, per-error and per-db lines: the same shape as
			// Redis's own lines of the section.
			for _, f := range append(sec.fields, sectionFieldsList(redisInfo, sec.name)...) {
				require.Regexp(t, pattern, f[1], "%s %s", sec.name, f[0])
			}
			continue
		}
		for _, f := range sec.fields {
			if redcellOnly.MatchString(f[0]) || versionBefore(redisVersionOf(redisInfo), laterRedisFields[f[0]]) {
				continue
			}
			_, ok := theirs[f[0]]
			require.True(t, ok, "%s field %q is not one redis-server %s prints", sec.name, f[0], redisVersionOf(redisInfo))
		}
	}
}

// laterRedisFields are fields of a Redis later than 7.0, with the version
// that added them: a redis-server older than that does not print them.
var laterRedisFields = map[string]string{
	"pubsub_clients":            "7.4.0",
	"acl_access_denied_auth":    "7.2.0",
	"acl_access_denied_cmd":     "7.2.0",
	"acl_access_denied_key":     "7.2.0",
	"acl_access_denied_channel": "7.2.0",
}

// versionBefore reports whether version a is older than b, both dotted
// numbers; b empty is older than anything.
func versionBefore(a, b string) bool {
	if b == "" {
		return false
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// perLinePatterns are the value shapes of Redis 7's per-item sections.
var perLinePatterns = map[string]string{
	"Commandstats": `^calls=\d+,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=\d+,failed_calls=\d+$`,
	"Latencystats": `^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`,
	"Errorstats":   `^count=\d+$`,
	"Keyspace":     `^keys=\d+,expires=\d+,avg_ttl=\d+$`,
	"Modules":      `^$`, // no modules: no lines
}

func sectionFieldsList(secs []infoSection, name string) [][2]string {
	for _, s := range secs {
		if s.name == name {
			return s.fields
		}
	}
	return nil
}

func redisVersionOf(secs []infoSection) string { return sectionFields(secs, "Server")["redis_version"] }

// CONFIG GET answers the settings exporters and clients read, as Redis
// names and formats them.
func TestConfigGetForTools(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for _, want := range [][2]string{
		{"maxclients", "10000"},
		{"maxmemory", "0"},
		{"maxmemory-policy", "noeviction"},
		{"databases", "1"},
		{"timeout", "0"},
		{"save", ""},
		{"appendonly", "no"},
		{"appendfsync", "no"},
		{"slowlog-log-slower-than", "-1"},
		{"slowlog-max-len", "0"},
		{"latency-monitor-threshold", "0"},
		{"cluster-enabled", "no"},
		{"replica-priority", "100"},
		{"replica-read-only", "yes"},
		{"replicaof", ""},
		{"repl-backlog-size", "67108864"},
		{"port", strconv.Itoa(ts.Port)},
		{"bind", "127.0.0.1"},
	} {
		require.Equal(t, testkit.Bulks(want[0], want[1]), c.Do("CONFIG", "GET", want[0]), "CONFIG GET %s", want[0])
	}
	// Several at once and by pattern, as redis_exporter asks (CONFIG GET *).
	all := c.Do("CONFIG", "GET", "*")
	require.True(t, strings.HasPrefix(all, "*74\r\n"), "37 settings: %q", all)
	require.Equal(t, testkit.Bulks("slowlog-log-slower-than", "-1", "slowlog-max-len", "0"), c.Do("CONFIG", "GET", "slowlog*"))
	// The exporter's other questions get Redis's empty answers.
	require.Equal(t, "*0\r\n", c.Do("SLOWLOG", "GET", "1"))
	require.Equal(t, testkit.Int(0), c.Do("SLOWLOG", "LEN"))
	require.Equal(t, testkit.OK, c.Do("SLOWLOG", "RESET"))
	require.Equal(t, "*0\r\n", c.Do("LATENCY", "LATEST"))
	require.Equal(t, testkit.Err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP."), c.Do("SLOWLOG", "NOPE"))
	require.Equal(t, "*9\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"+
		"+GET [<count>]\r\n+    redcell keeps no slow log: always an empty list.\r\n+LEN\r\n+    Always 0.\r\n"+
		"+RESET\r\n+    Does nothing.\r\n+HELP\r\n+    Print this help.\r\n", c.Do("SLOWLOG", "HELP"))
	require.True(t, strings.HasPrefix(c.Do("LATENCY", "HELP"), "*9\r\n+LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+LATEST\r\n"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'latency|latest' command"), c.Do("LATENCY", "LATEST", "x"))
}
