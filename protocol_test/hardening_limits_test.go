package protocol_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// One connection beyond maxclients is answered as Redis answers it and
// closed; the others carry on, INFO counts the refusal, and a freed slot
// takes the next client.
func TestMaxClients(t *testing.T) {
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{MaxClients: 5}))
	var conns []*testkit.Conn
	for i := 0; i < 5; i++ {
		c := ts.Raw(t)
		require.Equal(t, testkit.Ints(0, 5, int64(4-i), -1, int64(i+1)), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "client %d", i)
		conns = append(conns, c)
	}
	extra := ts.Raw(t)
	got, err := extra.ReadAll()
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", got)

	// Commands sent by a refused client are not run.
	refused := ts.Raw(t)
	refused.Write(testkit.Command("CL.THROTTLE", "k", "4", "1", "1"))
	got, _ = refused.ReadAll() // the server may reset: the command was unread
	require.True(t, got == "" || got == "-ERR max number of clients reached\r\n", "%q", got)

	info := conns[0].Do("INFO", "stats")
	require.Contains(t, info, "\r\nrejected_connections:2\r\n")
	require.Contains(t, conns[0].Do("INFO", "clients"), "\r\nconnected_clients:5\r\nmaxclients:5\r\n")
	require.Equal(t, testkit.Ints(1, 5, 0, 1, 5), conns[1].Do("CL.THROTTLE", "k", "4", "1", "1"), "the refused client's command did not run")

	require.NoError(t, conns[4].Conn.Close())
	require.Eventually(t, func() bool { return harness.AnswersPing(ts.Addr) }, 10*time.Second, 10*time.Millisecond, "a freed slot is taken again")
}

// A client whose replies pile up past the output limit is disconnected, as
// Redis disconnects it past client-output-buffer-limit, and costs the server
// nothing more; replies within the limit are unaffected.
func TestOutputBufferLimit(t *testing.T) {
	const limit = 64 << 10
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{MaxOutput: limit}))
	c := ts.Raw(t)
	commandReply := c.Do("COMMAND")
	require.Greater(t, len(commandReply), 4096, "COMMAND answers a lot for 9 bytes")
	require.Less(t, len(commandReply), limit)

	// 1000 COMMANDs in one write: their replies would take 5 MB.
	greedy := ts.Raw(t)
	greedy.Write(strings.Repeat("COMMAND\r\n", 1000))
	got, err := greedy.ReadAll()
	if err != nil {
		var op *net.OpError
		require.True(t, errors.As(err, &op), "a reset is fine: the server closed with requests unread: %v", err)
	}
	require.Less(t, len(got), 1000*len(commandReply), "the connection was closed before every reply was sent")
	require.Zero(t, len(got)%len(commandReply), "only whole replies were sent")

	require.Equal(t, commandReply, c.Do("COMMAND"), "other clients carry on")
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
}

// With the default limits, a deep pipeline of heavy replies read as it goes
// is served in full.
func TestDefaultOutputLimitServesDeepPipelines(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	one := c.Do("COMMAND")
	c.Write(strings.Repeat("COMMAND\r\n", 2000))
	for i := 0; i < 2000; i++ {
		require.Equal(t, one, c.Read(), "reply %d", i)
	}
}

// --timeout: a connection that sends nothing for the idle timeout is closed
// (as Redis's timeout), one that keeps talking is not, and one that stops
// reading its replies is closed as idle too.
func TestIdleTimeout(t *testing.T) {
	harness.SkipIfShortSleeps(t)
	// Long enough that a busy client's 50ms pings never look idle, even
	// when the race detector and other packages' tests share two cores (at
	// 300ms this failed once under such load).
	const idle = time.Second
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{IdleTimeout: idle}))

	quiet := ts.Raw(t)
	// Taken before the PING: the server counts from its reply, which the
	// client may receive some milliseconds later on a loaded machine.
	start := time.Now()
	require.Equal(t, testkit.Simple("PONG"), quiet.Do("PING"))
	got, err := quiet.ReadAll()
	require.NoError(t, err)
	require.Empty(t, got)
	require.GreaterOrEqual(t, time.Since(start), idle, "closed only once idle")

	// A client that pings every 50ms for two timeouts stays connected:
	// the pacing is the point here, not a wait for something to happen.
	busy := ts.Raw(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for until := time.Now().Add(2 * idle); time.Now().Before(until); <-tick.C {
		require.Equal(t, testkit.Simple("PONG"), busy.Do("PING"))
	}

	// A client that sends but never reads: its replies stop moving, and
	// the server gives up on it.
	stuck := ts.Raw(t)
	require.NoError(t, stuck.Conn.(*net.TCPConn).SetReadBuffer(4096))
	stuck.Write(strings.Repeat("COMMAND\r\n", 2000))
	info := ts.Raw(t)
	require.Eventually(t, func() bool {
		return strings.Contains(info.Do("INFO", "clients"), "\r\nconnected_clients:2\r\n") // busy and info
	}, 10*time.Second, 20*time.Millisecond)
}

// The built binary takes each limit as a flag, refuses as Redis refuses,
// keeps the password out of its arguments, and will not listen beyond the
// loopback without a password.
func TestLimitsOnTheBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := testkit.Binary(t)

	t.Run("limit flags", func(t *testing.T) {
		p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory",
			"--proto-max-bulk-len", "1kb", "--max-args", "4", "--max-inline-len", "100",
			"--query-buffer-limit", "2kb", "--maxclients", "3", "--timeout", "60")...)
		for _, c := range []struct{ name, raw, want string }{
			{"bulk", "*2\r\n$4\r\nECHO\r\n$1025\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
			{"args", "*5\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
			{"inline", strings.Repeat("x", 101), "-ERR Protocol error: too big inline request\r\n"},
			{"query", "*4\r\n$4\r\nECHO\r\n" + strings.Repeat("$1000\r\n"+strings.Repeat("q", 1000)+"\r\n", 2) + "$1000\r\n", ""},
			{"within", "*2\r\n$4\r\nECHO\r\n$1024\r\n" + strings.Repeat("w", 1024) + "\r\nQUIT\r\n", testkit.Bulk(strings.Repeat("w", 1024)) + testkit.OK},
		} {
			require.Equal(t, c.want, testkit.Converse(t, p.Addr, c.raw), c.name)
		}
		// The connections above are closed; the server may not have counted
		// them out yet when the client sees the close.
		c := admitted(t, p.Addr)
		require.Eventually(t, func() bool {
			return strings.Contains(c.Do("INFO", "clients"), "\r\nconnected_clients:1\r\nmaxclients:3\r\n")
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, testkit.Bulks("timeout", "60"), c.Do("CONFIG", "GET", "timeout"))
		admitted(t, p.Addr)
		admitted(t, p.Addr)
		require.Equal(t, "-ERR max number of clients reached\r\n", testkit.Converse(t, p.Addr, "PING\r\n"))
	})

	t.Run("password from a file or the environment, not in ps", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "pass")
		require.NoError(t, os.WriteFile(file, []byte("file-secret\n"), 0o600))
		for _, c := range []struct {
			env  []string
			args []string
			pass string
		}{
			{nil, []string{"--requirepass-file", file}, "file-secret"},
			{[]string{"REDCELL_REQUIREPASS=env-secret"}, nil, "env-secret"},
		} {
			p := harness.StartBinary(t, c.env, append(harness.OnLoopback("--in-memory"), c.args...)...)
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/cmdline")
			if err == nil {
				require.NotContains(t, string(cmdline), c.pass, "ps shows no password")
			}
			require.Equal(t, errNoAuth+"\n\n", harness.CLI(t, p.Port, "", "PING"))
			require.Equal(t, "OK\nPONG\n", harness.CLI(t, p.Port, "AUTH "+c.pass+"\nPING\n"))
			require.NotContains(t, p.Log(), c.pass, "nor does the log")
		}
	})

	t.Run("protected mode", func(t *testing.T) {
		for _, bind := range []string{"0.0.0.0", "::"} {
			out, status := bin.Run(t, []string{"REDCELL_REQUIREPASS="}, "--bind", bind, "--port", "0", "--in-memory") // an empty password is none
			require.Equal(t, 2, status, "refused to start:\n%s", out)
			require.Contains(t, out, "redcell: --bind "+bind+": protected mode refuses to listen on an address other than the loopback without a password.")
			require.Contains(t, out, "--protected-mode no")
			require.NotContains(t, out, "ready to accept connections")
		}
	})

	t.Run("SIGTERM with clients connected", func(t *testing.T) {
		p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory", "--timeout", "0")...)
		for i := 0; i < 20; i++ {
			p.Raw(t).Write("*2\r\n$4\r\nECHO\r\n$10\r\n01234") // half a command
		}
		require.NoError(t, p.Stop(syscall.SIGTERM), "log:\n%s", p.Log())
	})
}

// admitted returns a connection to addr the server has taken in: it
// answered PING.
func admitted(t testing.TB, addr string) *testkit.Conn {
	t.Helper()
	var c *testkit.Conn
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return false
		}
		if !harness.Pongs(conn, 5*time.Second) {
			conn.Close()
			return false
		}
		c = testkit.NewConn(t, conn, 1<<16)
		return true
	}, 10*time.Second, 10*time.Millisecond)
	return c
}
