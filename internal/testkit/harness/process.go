package harness

import (
	"io"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// BinaryServer is the built binary running as a child process
// (testkit.Process), in a fresh directory, with the settings of its flags
// and env alone: the caller's REDCELL_ variables do not reach it. Its log
// (stderr) is kept. When the test ends a server still running is sent
// SIGTERM and must exit cleanly.
type BinaryServer struct {
	Endpoint          // the plain RESP listener
	TLSPort    int    // 0 without --tls-port
	MetricsURL string // empty without --metrics-addr

	Proc *testkit.Process
}

// OnLoopback is args after the flags that put a server on a free port of
// 127.0.0.1.
func OnLoopback(args ...string) []string {
	return append([]string{"--bind", "127.0.0.1", "--port", "0"}, args...)
}

// StartBinary runs the built binary with args and env, and returns once it
// accepts connections.
func StartBinary(t *testing.T, env []string, args ...string) *BinaryServer {
	t.Helper()
	return NewBinaryServer(testkit.Start(t, testkit.Binary(t), env, args...))
}

// LaunchBinary is startBinary returning an error if the server exits before
// it is ready, say because a port it was given was taken.
func LaunchBinary(t *testing.T, env []string, args ...string) (*BinaryServer, error) {
	t.Helper()
	p, err := testkit.Launch(t, testkit.Binary(t), env, args...)
	return NewBinaryServer(p), err
}

func NewBinaryServer(p *testkit.Process) *BinaryServer {
	return &BinaryServer{Endpoint: LoopbackEndpoint(p.Port), TLSPort: p.TLSPort, MetricsURL: p.MetricsURL, Proc: p}
}

// Log returns what the process has written to stderr since it last
// started.
func (p *BinaryServer) Log() string { return p.Proc.Log() }

// Pid is the process's id.
func (p *BinaryServer) Pid() int { return p.Proc.Pid() }

// Stop sends sig and waits for the process to exit, returning how it exited.
func (p *BinaryServer) Stop(sig syscall.Signal) error { return p.Proc.Stop(sig) }

// Restart starts the stopped process again with the same arguments, on the
// ports it had: clients reconnect to the same address.
func (p *BinaryServer) Restart() {
	p.Proc.Restart()
	*p = *NewBinaryServer(p.Proc)
}

// StartRedisServer runs a real redis-server, persistence off, in a fresh
// directory, with args after its own, until the test ends, and returns once
// it answers PING. Without redis-server the test is unavailable.
func StartRedisServer(t *testing.T, args ...string) Endpoint {
	t.Helper()
	path := NeedTool(t, "`apt-get install redis-server` (Debian/Ubuntu) or `brew install redis`", "redis-server")
	for attempt := 1; ; attempt++ { // the free port may be taken before redis-server binds it
		e := LoopbackEndpoint(FreePort(t))
		cmd := exec.Command(path, append([]string{"--port", strconv.Itoa(e.Port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
		var log testkit.LockedBuffer
		cmd.Stdout, cmd.Stderr = &log, &log
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		require.Eventually(t, func() bool {
			select {
			case <-exited:
				return true
			default:
				return AnswersPing(e.Addr)
			}
		}, 10*time.Second, 10*time.Millisecond, "redis-server on port %d; its log:\n%s", e.Port, &log)
		select {
		case <-exited:
			require.Less(t, attempt, 3, "redis-server exited; its log:\n%s", log.String())
		default:
			return e
		}
	}
}

// AnswersPing reports whether a server at addr answers PING with PONG on a
// fresh connection.
func AnswersPing(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	return Pongs(conn, time.Second)
}

// Pongs reports whether conn answers PING with PONG within d.
func Pongs(conn net.Conn, d time.Duration) bool {
	_ = conn.SetDeadline(time.Now().Add(d))
	defer conn.SetDeadline(time.Time{})
	buf := make([]byte, 7)
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return false
	}
	_, err := io.ReadFull(conn, buf)
	return err == nil && string(buf) == "+PONG\r\n"
}

// FreePort returns a port of 127.0.0.1 nothing listens on at the moment,
// for a server that must be given its port (redis-server, --tls-port, an
// exporter); redcell's plain listener is better started on --port 0.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}
