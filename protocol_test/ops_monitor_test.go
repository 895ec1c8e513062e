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

	"github.com/stretchr/testify/require"

	"redcell/server"
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
func startMonitor(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	m := ts.raw(t)
	require.Equal(t, ok, m.do("MONITOR"))
	return m
}

// startMonitorID is startMonitor returning the monitor's client id too.
func startMonitorID(t *testing.T, ts *testServer) (*rawConn, int64) {
	t.Helper()
	m := ts.raw(t)
	id := clientID(t, m)
	require.Equal(t, ok, m.do("MONITOR"))
	return m, id
}

// Every command any client runs reaches every monitor, in the order they ran,
// in Redis's format at the server's clock, arguments quoted as Redis quotes
// them, credentials redacted; commands refused before running and admin
// commands are not shown.
func TestMonitor(t *testing.T) {
	ts := startServer(t)
	a, b := ts.raw(t), ts.raw(t)
	idA := clientID(t, a)
	m1, m2 := startMonitor(t, ts), startMonitor(t, ts)

	var want []string
	at := t0
	require.Equal(t, ints(0, 5, 4, -1, 1), a.do("CL.THROTTLE", "user 1", "4", "1", "1"))
	want = append(want, line(at, addrOf(a), quote("CL.THROTTLE", "user 1", "4", "1", "1")))

	ts.Clock.Advance(1500 * time.Microsecond)
	at = at.Add(1500 * time.Microsecond)
	require.Equal(t, bulk("q\"b\\s\r\n\x01\xc3\xa9\t\x7f"), b.do("echo", "q\"b\\s\r\n\x01\xc3\xa9\t\x7f"))
	want = append(want, line(at, addrOf(b), `"echo" "q\"b\\s\r\n\x01\xc3\xa9\t\x7f"`))

	require.Equal(t, errReply("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), a.do("AUTH", "secret"))
	want = append(want, line(at, addrOf(a), quote("AUTH", "(redacted)")))
	require.Equal(t, errReply("WRONGPASS invalid username-password pair or user is disabled."), a.do("auth", "alice", "secret"))
	want = append(want, line(at, addrOf(a), quote("auth", "(redacted)", "(redacted)")))
	require.True(t, strings.HasPrefix(b.do("HELLO", "2", "SETNAME", "auth", "AUTH", "default", "secret"), "*14\r\n"))
	want = append(want, line(at, addrOf(b), quote("HELLO", "2", "SETNAME", "auth", "AUTH", "(redacted)", "(redacted)")))

	// Not shown: an unknown command, a wrong arity, admin commands.
	a.do("NOSUCH", "x")
	a.do("GET")
	require.Equal(t, integer(0), a.do("CLIENT", "KILL", "ID", "999"))
	a.do("CLIENT", "LIST")
	require.Equal(t, ok, b.do("MONITOR"))
	require.Equal(t, integer(idA), a.do("CLIENT", "ID"))
	want = append(want, line(at, addrOf(a), quote("CLIENT", "ID")))

	for _, m := range []*rawConn{m1, m2} {
		for i, w := range want {
			require.Equal(t, w, m.read(), "line %d", i)
		}
	}
}

// A monitor's own commands are answered, then shown; it may not touch keys
// (refused as Redis refuses it, and not shown); a second MONITOR is ignored
// without a reply; QUIT is answered before the connection closes (its own
// line, which Redis would send after, is not).
func TestMonitorOwnCommands(t *testing.T) {
	ts := startServer(t)
	m := startMonitor(t, ts)
	require.Equal(t, simple("PONG"), m.do("PING"))
	require.Equal(t, line(t0, addrOf(m), quote("PING")), m.read())
	require.Equal(t, errReply("ERR Replica can't interact with the keyspace"), m.do("GET", "k"))
	require.Equal(t, errReply("ERR Replica can't interact with the keyspace"), m.do("CL.THROTTLE", "k", "1", "1", "1"))
	m.write(command("MONITOR") + command("ECHO", "x"))
	require.Equal(t, bulk("x"), m.read(), "MONITOR again: no reply")
	require.Equal(t, line(t0, addrOf(m), quote("ECHO", "x")), m.read())
	other := ts.raw(t)
	require.Equal(t, integer(0), other.do("EXISTS", "k"), "the monitor's CL.THROTTLE did not run")
	require.Equal(t, line(t0, addrOf(other), quote("EXISTS", "k")), m.read())
	require.Equal(t, ok, m.do("QUIT"))
	m.expectClosed()
}

// A monitor is not idle while it only reads: the timeout spares it, as
// Redis's spares it.
func TestMonitorOutlivesTheIdleTimeout(t *testing.T) {
	const idle = time.Second
	ts := startServer(t, withLimits(server.Limits{IdleTimeout: idle}))
	m := startMonitor(t, ts)
	c := ts.raw(t)
	tick := time.NewTicker(idle / 10)
	defer tick.Stop()
	for until := time.Now().Add(2 * idle); time.Now().Before(until); <-tick.C {
		require.Equal(t, simple("PONG"), c.do("PING"))
		require.Equal(t, line(t0, addrOf(c), quote("PING")), m.read())
	}
}

// A monitor that stops reading is disconnected once the lines it has left
// unread pass the output buffer limit, rather than growing the server's
// memory with every command; the other clients carry on.
func TestMonitorThatDoesNotReadIsDisconnected(t *testing.T) {
	var log lockedBuffer
	ts := startServer(t, withLimits(server.Limits{MaxOutput: 64 << 10}), func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	m, idM := startMonitorID(t, ts)
	require.NoError(t, m.conn.(*net.TCPConn).SetReadBuffer(4096)) // so that the server's queue fills soon
	c := ts.raw(t)
	arg := strings.Repeat("x", 8<<10)
	batch := strings.Repeat(command("ECHO", arg), 64)
	require.Eventually(t, func() bool {
		c.write(batch)
		for i := 0; i < 64; i++ {
			require.Equal(t, bulk(arg), c.read())
		}
		return !strings.Contains(c.do("CLIENT", "LIST"), "id="+strconv.FormatInt(idM, 10)+" ")
	}, 30*time.Second, time.Millisecond, "the monitor was disconnected")
	// Its connection is closed: what the kernel still holds for it drains
	// at the pace of its tiny window, so the test does not read it.
	require.Eventually(t, func() bool {
		return strings.Contains(c.do("INFO", "clients"), "\r\nconnected_clients:1\r\n")
	}, 10*time.Second, time.Millisecond)
	require.Contains(t, log.String(), `msg="monitor closed for falling behind: its unread lines passed the output buffer limit"`)
	require.Contains(t, log.String(), " id="+strconv.FormatInt(idM, 10)+" limit=65536")
	require.Equal(t, simple("PONG"), c.do("PING"))
}

// redis-cli monitor prints every command, as from Redis.
func TestRedisCLIMonitor(t *testing.T) {
	path := redisCLI(t)
	ts := startServer(t)
	cmd := exec.Command(path, "-h", "127.0.0.1", "-p", strconv.Itoa(ts.Port), "monitor")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewReader(out)
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "OK\n", first)

	c := ts.raw(t)
	require.Equal(t, ints(0, 5, 4, -1, 1), c.do("CL.THROTTLE", "user:1", "4", "1", "1"))
	got, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d.000000 [0 %s] %s\n", t0.Unix(), addrOf(c), quote("CL.THROTTLE", "user:1", "4", "1", "1")), got)
}
