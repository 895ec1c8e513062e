package protocol_test

import (
	"encoding/json"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// The built binary takes its settings from REDCELL_* variables, with flags
// winning; logs JSON when asked, with the start-up settings first; and logs
// client errors at debug level only, so that a hostile client cannot flood
// the log at the default level.
func TestBuiltBinaryEnvironmentAndLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := testkit.Binary(t)

	t.Run("environment, JSON, debug", func(t *testing.T) {
		srv := harness.StartBinary(t, []string{
			"REDCELL_BIND=127.0.0.1",
			"REDCELL_PORT=1", // the flag below wins
			"REDCELL_IN_MEMORY=true",
			"REDCELL_METRICS_ADDR=127.0.0.1:0",
			"REDCELL_LOG_FORMAT=json",
			"REDCELL_LOG_LEVEL=debug",
			"REDCELL_REQUIREPASS=" + password,
		}, "--port", "0")
		require.NotEmpty(t, srv.MetricsURL, "REDCELL_METRICS_ADDR turned metrics on")
		require.Equal(t, 0.0, scrapeMetrics(t, srv.MetricsURL).value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "allowed"))
		require.Equal(t, errNoAuth+"\n\n", harness.CLI(t, srv.Port, "", "PING"), "REDCELL_REQUIREPASS set the password")
		require.Equal(t, "OK\nERR max_burst is not an integer or out of range\n\n", harness.CLI(t, srv.Port, "AUTH "+password+"\nCL.THROTTLE k x 1 1\n"))

		require.Eventually(t, func() bool { return strings.Contains(srv.Log(), `"reply":"ERR max_burst`) },
			10*time.Second, 10*time.Millisecond, "a debug record of the client error; log:\n%s", srv.Log())
		var records []map[string]any
		for _, line := range readLogLines(srv.Log()) {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), "every log line is JSON: %q", line)
			records = append(records, rec)
		}

		start := records[0]
		require.Equal(t, "starting redcell", start["msg"])
		require.Equal(t, "INFO", start["level"])
		require.Equal(t, server.Version, start["version"])
		require.Equal(t, runtime.Version(), start["go"])
		require.Equal(t, 0.0, start["port"], "the flag won over REDCELL_PORT")
		require.Equal(t, true, start["in_memory"])
		require.Equal(t, "127.0.0.1:0", start["metrics_addr"])
		require.Equal(t, "DEBUG", start["log_level"])
		require.Equal(t, true, start["require_pass"], "whether a password is set, never the password")
		require.NotContains(t, srv.Log(), password)

		var replies []any
		for _, r := range records {
			if r["msg"] == "error reply" {
				require.Equal(t, "DEBUG", r["level"])
				replies = append(replies, r["reply"])
			}
		}
		// redis-cli's own COMMAND DOCS before AUTH was refused too.
		require.Equal(t, "ERR max_burst is not an integer or out of range", replies[len(replies)-1])
		for _, r := range replies[:len(replies)-1] {
			require.Equal(t, errNoAuth, r)
		}
		require.NotNil(t, findRecord(records, "ready to accept connections"))
	})

	t.Run("no flood at the default level", func(t *testing.T) {
		srv := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory")...)
		before := srv.Log()
		var stdin strings.Builder
		for i := range 2000 {
			stdin.WriteString("CL.THROTTLE k" + strconv.Itoa(i) + " -1 1 1\nNOSUCH\n")
		}
		out := harness.CLI(t, srv.Port, stdin.String())
		require.Equal(t, 4000, strings.Count(out, "ERR "), "every command was answered with an error")
		require.Equal(t, "PONG\n", harness.CLI(t, srv.Port, "", "PING"))
		require.Equal(t, before, srv.Log(), "4000 error replies logged nothing at info level")
	})

	t.Run("version, help and a bad flag", func(t *testing.T) {
		out, status := bin.Run(t, nil, "--version")
		require.Zero(t, status, out)
		require.Regexp(t, `^redcell `+regexp.QuoteMeta(server.Version)+` \(commit ([0-9a-f]+(-dirty)?|unknown), go1\.[0-9.]+, .*\)\n$`, out)

		out, status = bin.Run(t, nil, "--help")
		require.Zero(t, status, "--help exits 0")
		require.True(t, strings.HasPrefix(out, "NAME\n    redcell - "), "%s", out)

		out, status = bin.Run(t, nil, "--bogus")
		require.Equal(t, 2, status)
		require.Equal(t, "redcell: unknown flag --bogus\nTry 'redcell --help'.\n", out)
	})
}

// readLogLines returns the non-empty lines of a log.
func readLogLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func findRecord(records []map[string]any, msg string) map[string]any {
	for _, r := range records {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}
