package protocol_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra/gcratest"
)

// The built binary, driven by redis-cli on the real clock: every step of
// every reference vector (gcratest) that happens at t=0, sent in one
// redis-cli invocation per vector, must print its five integers byte for
// byte. The real clock moves between the steps, but durations are rounded
// up to whole seconds, so any run shorter than about a second prints
// exactly the t=0 values.
func TestBuiltBinaryWithRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	srv := harness.StartBinary(t, nil, harness.OnLoopback()...)

	t.Run("vectors at t=0", func(t *testing.T) {
		for _, v := range gcratest.All() {
			v.Key = "bin:" + strings.ReplaceAll(v.Name, " ", "-")
			var stdin, want strings.Builder
			for i, s := range v.Steps {
				if s.At != 0 {
					break
				}
				stdin.WriteString(strings.Join(v.Args(i), " ") + "\n")
				want.WriteString(cliInts(s.Want))
			}
			require.Equal(t, want.String(), harness.CLI(t, srv.Port, stdin.String()), "vector %q", v.Name)
		}
	})

	t.Run("errors", func(t *testing.T) {
		var stdin, want strings.Builder
		for _, tc := range throttleErrorCases {
			if !oneLine(tc.args) {
				continue
			}
			if tc.want == errOutOfRange && tc.args[len(tc.args)-1] == "8" {
				continue // the new_tat overflow depends on the manual clock's now
			}
			stdin.WriteString("CL.THROTTLE " + strings.Join(tc.args, " ") + "\n")
			want.WriteString(tc.want + "\n\n")
		}
		require.Equal(t, want.String(), harness.CLI(t, srv.Port, stdin.String()))
		require.Equal(t, "0\n\n", harness.CLI(t, srv.Port, "EXISTS k\nGET k\n"), "no error created key k")
	})

	t.Run("RESP3 and the Redis surface", func(t *testing.T) {
		require.Equal(t, "0\n5\n4\n-1\n1\n", harness.CLI(t, srv.Port, "", "-3", "CL.THROTTLE", "resp3", "4", "1", "1"))
		require.Equal(t, "PONG\nhello\nOK\nstring\n1\n1\n0\n-2\n", harness.CLI(t, srv.Port,
			"PING\nECHO hello\nSELECT 0\nTYPE resp3\nEXISTS resp3\nDEL resp3\nEXISTS resp3\nTTL resp3\n"))
		require.Equal(t, "ERR DB index is out of range\n\n", harness.CLI(t, srv.Port, "", "SELECT", "1"))
		require.Equal(t, "ERR unknown command 'FOO', with args beginning with: 'a' 'b' \n\n", harness.CLI(t, srv.Port, "", "FOO", "a", "b"))
		info := harness.CLI(t, srv.Port, "", "INFO")
		for _, h := range []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Keyspace"} {
			require.Contains(t, info, "# "+h+"\r\n")
		}
		require.Contains(t, info, "\r\ntcp_port:"+strconv.Itoa(srv.Port)+"\r\n")
	})

	t.Run("requirepass", func(t *testing.T) {
		authed := harness.StartBinary(t, nil, harness.OnLoopback("--requirepass", password)...)
		require.Equal(t, errNoAuth+"\n\n", harness.CLI(t, authed.Port, "", "CL.THROTTLE", "k", "4", "1", "1"))
		require.Equal(t, "0\n5\n4\n-1\n1\n", harness.CLI(t, authed.Port, "", "-a", password, "--no-auth-warning", "CL.THROTTLE", "k", "4", "1", "1"))
		require.Equal(t, errWrongPass+"\n\n"+errNoAuth+"\n\nOK\nPONG\n", harness.CLI(t, authed.Port, "AUTH wrong\nPING\nAUTH "+password+"\nPING\n"))
	})

	// main runs the sweeper: a key nobody touches again is freed once its
	// TAT passes (DBSIZE counts keys not yet freed, as Redis's does).
	t.Run("active expiry", func(t *testing.T) {
		fresh := harness.StartBinary(t, nil, harness.OnLoopback()...)
		require.Equal(t, "0\n1\n0\n-1\n1\n1\n", harness.CLI(t, fresh.Port, "CL.THROTTLE gone-soon 0 1 1\nDBSIZE\n"))
		path := harness.RedisCLI(t)
		require.Eventually(t, func() bool {
			out, _, err := harness.RunCLI(path, fresh.Port, "", "DBSIZE")
			return err == nil && out == "0\n"
		}, 10*time.Second, 20*time.Millisecond)
		require.Contains(t, harness.CLI(t, fresh.Port, "", "INFO", "stats"), "\r\nexpired_keys:1\r\n")
	})

	t.Run("SIGTERM", func(t *testing.T) {
		stopping := harness.StartBinary(t, nil, harness.OnLoopback()...)
		require.Equal(t, "PONG\n", harness.CLI(t, stopping.Port, "", "PING"))
		require.NoError(t, stopping.Stop(syscall.SIGTERM), "clean exit on SIGTERM; log:\n%s", stopping.Log())
		require.Contains(t, stopping.Log(), "shutting down")
	})
}
