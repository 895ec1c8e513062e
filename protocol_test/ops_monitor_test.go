package protocol_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// line is a MONITOR line as Redis writes it, for arguments that need no
// escaping; quoted is the arguments already quoted.
func line(at time.Time, addr string, quoted string) string {
	return fmt.Sprintf("+%d.%06d [0 %s] %s\r\n", at.Unix(), at.Nanosecond()/1000, addr, quoted)
}

func quote(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = `"` + a + `"`
	}
	return strings.Join(q, " ")
}

// startMonitor sends MONITOR on a new connection and returns it once the
// server has answered, so that every command run after is fed to it.
func startMonitor(t *testing.T, ts *harness.TestServer) *testkit.Conn {
	t.Helper()
	m := ts.Raw(t)
	require.Equal(t, testkit.OK, m.Do("MONITOR"))
	return m
}

// startMonitorID is startMonitor returning the monitor's client id too.
func startMonitorID(t *testing.T, ts *harness.TestServer) (*testkit.Conn, int64) {
	t.Helper()
	m := ts.Raw(t)
	id := clientID(t, m)
	require.Equal(t, testkit.OK, m.Do("MONITOR"))
	return m, id
}

// Every command any client runs reaches every monitor, in the order they ran,
// in Redis's format at the server's clock, arguments quoted as Redis quotes
// them, credentials redacted; commands refused before running and admin
// commands are not shown.
func TestMonitor(t *testing.T) {
	ts := harness.StartServer(t)
	a, b := ts.Raw(t), ts.Raw(t)
	idA := clientID(t, a)
	m1, m2 := startMonitor(t, ts), startMonitor(t, ts)

	var want []string
	at := harness.T0
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), a.Do("CL.THROTTLE", "user 1", "4", "1", "1"))
	want = append(want, line(at, addrOf(a), quote("CL.THROTTLE", "user 1", "4", "1", "1")))

	ts.Clock.Advance(1500 * time.Microsecond)
	at = at.Add(1500 * time.Microsecond)
	require.Equal(t, testkit.Bulk("q\"b\\s\r\n\x01\xc3\xa9\t\x7f"), b.Do("echo", "q\"b\\s\r\n\x01\xc3\xa9\t\x7f"))
	want = append(want, line(at, addrOf(b), `"echo" "q\"b\\s\r\n\x01\xc3\xa9\t\x7f"`))

	require.Equal(t, testkit.Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), a.Do("AUTH", "secret"))
	want = append(want, line(at, addrOf(a), quote("AUTH", "(redacted)")))
	require.Equal(t, testkit.Err("WRONGPASS invalid username-password pair or user is disabled."), a.Do("auth", "alice", "secret"))
	want = append(want, line(at, addrOf(a), quote("auth", "(redacted)", "(redacted)")))
	require.True(t, strings.HasPrefix(b.Do("HELLO", "2", "SETNAME", "auth", "AUTH", "default", "secret"), "*14\r\n"))
	want = append(want, line(at, addrOf(b), quote("HELLO", "2", "SETNAME", "auth", "AUTH", "(redacted)", "(redacted)")))

	// Not shown: an unknown command, a wrong arity, admin commands.
	a.Do("NOSUCH", "x")
	a.Do("GET")
	require.Equal(t, testkit.Int(0), a.Do("CLIENT", "KILL", "ID", "999"))
	a.Do("CLIENT", "LIST")
	require.Equal(t, testkit.OK, b.Do("MONITOR"))
	require.Equal(t, testkit.Int(idA), a.Do("CLIENT", "ID"))
	want = append(want, line(at, addrOf(a), quote("CLIENT", "ID")))

	for _, m := range []*testkit.Conn{m1, m2} {
		for i, w := range want {
			require.Equal(t, w, m.Read(), "line %d", i)
		}
	}
}

// A monitor's own commands are answered, then shown; it may not touch keys
// (refused as Redis refuses it, and not shown); a second MONITOR is ignored
// without a reply; QUIT is answered before the connection closes (its own
// line, which Redis would send after, is not).
func TestMonitorOwnCommands(t *testing.T) {
	ts := harness.StartServer(t)
	m := startMonitor(t, ts)
	require.Equal(t, testkit.Simple("PONG"), m.Do("PING"))
	require.Equal(t, line(harness.T0, addrOf(m), quote("PING")), m.Read())
	require.Equal(t, testkit.Err("ERR Replica can't interact with the keyspace"), m.Do("GET", "k"))
	require.Equal(t, testkit.Err("ERR Replica can't interact with the keyspace"), m.Do("CL.THROTTLE", "k", "1", "1", "1"))
	m.Write(testkit.Command("MONITOR") + testkit.Command("ECHO", "x"))
	require.Equal(t, testkit.Bulk("x"), m.Read(), "MONITOR again: no reply")
	require.Equal(t, line(harness.T0, addrOf(m), quote("ECHO", "x")), m.Read())
	other := ts.Raw(t)
	require.Equal(t, testkit.Int(0), other.Do("EXISTS", "k"), "the monitor's CL.THROTTLE did not run")
	require.Equal(t, line(harness.T0, addrOf(other), quote("EXISTS", "k")), m.Read())
	require.Equal(t, testkit.OK, m.Do("QUIT"))
	m.ExpectClosed()
}

// A monitor is not idle while it only reads: the timeout spares it, as
// Redis's spares it.
func TestMonitorOutlivesTheIdleTimeout(t *testing.T) {
	harness.SkipIfShortSleeps(t)
	const idle = time.Second
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{IdleTimeout: idle}))
	m := startMonitor(t, ts)
	c := ts.Raw(t)
	tick := time.NewTicker(idle / 10)
	defer tick.Stop()
	for until := time.Now().Add(2 * idle); time.Now().Before(until); <-tick.C {
		require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
		require.Equal(t, line(harness.T0, addrOf(c), quote("PING")), m.Read())
	}
}

// A monitor that stops reading is disconnected once the lines it has left
// unread pass the output buffer limit, rather than growing the server's
// memory with every command; the other clients carry on.
func TestMonitorThatDoesNotReadIsDisconnected(t *testing.T) {
	var log testkit.LockedBuffer
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{MaxOutput: 64 << 10}), func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	m, idM := startMonitorID(t, ts)
	require.NoError(t, m.Conn.(*net.TCPConn).SetReadBuffer(4096)) // so that the server's queue fills soon
	c := ts.Raw(t)
	arg := strings.Repeat("x", 8<<10)
	batch := strings.Repeat(testkit.Command("ECHO", arg), 64)
	require.Eventually(t, func() bool {
		c.Write(batch)
		for i := 0; i < 64; i++ {
			require.Equal(t, testkit.Bulk(arg), c.Read())
		}
		return !strings.Contains(c.Do("CLIENT", "LIST"), "id="+strconv.FormatInt(idM, 10)+" ")
	}, 30*time.Second, time.Millisecond, "the monitor was disconnected")
	// Its connection is closed: what the kernel still holds for it drains
	// at the pace of its tiny window, so the test does not read it.
	require.Eventually(t, func() bool {
		return strings.Contains(c.Do("INFO", "clients"), "\r\nconnected_clients:1\r\n")
	}, 10*time.Second, time.Millisecond)
	require.Contains(t, log.String(), `msg="monitor closed for falling behind: its unread lines passed the output buffer limit"`)
	require.Contains(t, log.String(), " id="+strconv.FormatInt(idM, 10)+" limit=65536")
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
}

// redis-cli monitor prints every command, as from Redis.
func TestRedisCLIMonitor(t *testing.T) {
	path := harness.RedisCLI(t)
	ts := harness.StartServer(t)
	cmd := exec.Command(path, "-h", "127.0.0.1", "-p", strconv.Itoa(ts.Port), "monitor")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewReader(out)
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "OK\n", first)

	c := ts.Raw(t)
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "user:1", "4", "1", "1"))
	got, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d.000000 [0 %s] %s\n", harness.T0.Unix(), addrOf(c), quote("CL.THROTTLE", "user:1", "4", "1", "1")), got)
}
