package protocol_test

import (
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// binaryServer is the built binary running as a child process
// (testkit.Process), in a fresh directory, with the settings of its flags
// and env alone: the caller's REDCELL_ variables do not reach it. Its log
// (stderr) is kept. When the test ends a server still running is sent
// SIGTERM and must exit cleanly.
type binaryServer struct {
	endpoint          // the plain RESP listener
	TLSPort    int    // 0 without --tls-port
	MetricsURL string // empty without --metrics-addr

	proc *testkit.Process
}

// onLoopback is args after the flags that put a server on a free port of
// 127.0.0.1.
func onLoopback(args ...string) []string {
	return append([]string{"--bind", "127.0.0.1", "--port", "0"}, args...)
}

// startBinary runs the built binary with args and env, and returns once it
// accepts connections.
func startBinary(t *testing.T, env []string, args ...string) *binaryServer {
	t.Helper()
	return newBinaryServer(testkit.Start(t, testkit.Binary(t), env, args...))
}

// launchBinary is startBinary returning an error if the server exits before
// it is ready, say because a port it was given was taken.
func launchBinary(t *testing.T, env []string, args ...string) (*binaryServer, error) {
	t.Helper()
	p, err := testkit.Launch(t, testkit.Binary(t), env, args...)
	return newBinaryServer(p), err
}

func newBinaryServer(p *testkit.Process) *binaryServer {
	return &binaryServer{endpoint: loopbackEndpoint(p.Port), TLSPort: p.TLSPort, MetricsURL: p.MetricsURL, proc: p}
}

// Log returns what the process has written to stderr since it last
// started.
func (p *binaryServer) Log() string { return p.proc.Log() }

// pid is the process's id.
func (p *binaryServer) pid() int { return p.proc.Pid() }

// stop sends sig and waits for the process to exit, returning how it exited.
func (p *binaryServer) stop(sig syscall.Signal) error { return p.proc.Stop(sig) }

// restart starts the stopped process again with the same arguments, on the
// ports it had: clients reconnect to the same address.
func (p *binaryServer) restart() {
	p.proc.Restart()
	*p = *newBinaryServer(p.proc)
}

// startRedisServer runs a real redis-server, persistence off, in a fresh
// directory, with args after its own, until the test ends, and returns once
// it answers PING. Without redis-server the test is unavailable.
func startRedisServer(t *testing.T, args ...string) endpoint {
	t.Helper()
	path := needTool(t, "`apt-get install redis-server` (Debian/Ubuntu) or `brew install redis`", "redis-server")
	for attempt := 1; ; attempt++ { // the free port may be taken before redis-server binds it
		e := loopbackEndpoint(freePort(t))
		cmd := exec.Command(path, append([]string{"--port", strconv.Itoa(e.Port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
		var log lockedBuffer
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
				return answersPing(e.Addr)
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

// answersPing reports whether a server at addr answers PING with PONG on a
// fresh connection.
func answersPing(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	return pongs(conn, time.Second)
}

// pongs reports whether conn answers PING with PONG within d.
func pongs(conn net.Conn, d time.Duration) bool {
	_ = conn.SetDeadline(time.Now().Add(d))
	defer conn.SetDeadline(time.Time{})
	buf := make([]byte, 7)
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return false
	}
	_, err := io.ReadFull(conn, buf)
	return err == nil && string(buf) == "+PONG\r\n"
}

// freePort returns a port of 127.0.0.1 nothing listens on at the moment,
// for a server that must be given its port (redis-server, --tls-port, an
// exporter); redcell's plain listener is better started on --port 0.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// lockedBuffer collects a child process's output, or a server's log, safely
// for the goroutines that write it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
