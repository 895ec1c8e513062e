package protocol_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// built is the redcell command, compiled once for every test that runs it.
var built struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// buildBinary returns the path of the redcell command built from this
// module, building it on the first call of the test run.
func buildBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		// go test puts its own GOROOT/bin first in the test's PATH.
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go command on PATH: %w", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "redcell-protocol-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "redcell")
		cmd := exec.Command(goTool, "build", "-o", built.path, "redcell")
		cmd.Dir = ".." // the module root
		built.out, built.err = cmd.CombinedOutput()
	})
	require.NoError(t, built.err, "go build redcell:\n%s", built.out)
	return built.path
}

// removeBuiltBinary removes what buildBinary built, once every test is done.
func removeBuiltBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// binaryServer is the built binary running as a child process, in a fresh
// directory, with the settings of its flags and env alone: the caller's
// REDCELL_ variables do not reach it. Its log (stderr) is kept, and read for
// the addresses it serves.
type binaryServer struct {
	endpoint          // the plain RESP listener
	TLSPort    int    // 0 without --tls-port
	MetricsURL string // empty without --metrics-addr

	t         *testing.T
	env, args []string
	cmd       *exec.Cmd
	done      chan struct{} // closed once the process has exited

	mu      sync.Mutex
	log     strings.Builder
	exitErr error
}

var (
	// "ready to accept connections" carries addr= and, with TLS, tls_addr=;
	// "serving metrics" carries metrics=; in text or JSON.
	binaryReady      = regexp.MustCompile(`ready to accept connections.*\baddr"?[=:]"?127\.0\.0\.1:(\d+)`)
	binaryTLSAddr    = regexp.MustCompile(`\btls_addr"?[=:]"?127\.0\.0\.1:(\d+)`)
	binaryMetricsURL = regexp.MustCompile(`serving metrics.*\bmetrics"?[=:]"?(http://127\.0\.0\.1:\d+/metrics)`)
)

// onLoopback is args after the flags that put a server on a free port of
// 127.0.0.1.
func onLoopback(args ...string) []string {
	return append([]string{"--bind", "127.0.0.1", "--port", "0"}, args...)
}

// startBinary runs the built binary with args and env, and returns once it
// accepts connections. When the test ends, a server still running is sent
// SIGTERM and must exit cleanly.
func startBinary(t *testing.T, env []string, args ...string) *binaryServer {
	t.Helper()
	p, err := launchBinary(t, env, args...)
	require.NoError(t, err)
	return p
}

// launchBinary is startBinary returning an error if the server exits before
// it is ready, say because a port it was given was taken.
func launchBinary(t *testing.T, env []string, args ...string) (*binaryServer, error) {
	t.Helper()
	p := &binaryServer{t: t, env: env, args: args}
	err := p.start(buildBinary(t))
	t.Cleanup(func() {
		if !p.running() {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if err := p.exitError(); err != nil {
				t.Errorf("redcell exited with %v; log:\n%s", err, p.Log())
			}
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			t.Errorf("redcell did not exit within 15s of SIGTERM; log:\n%s", p.Log())
		}
	})
	return p, err
}

func (p *binaryServer) start(bin string) error {
	t := p.t
	t.Helper()
	cmd := exec.Command(bin, p.args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDCELL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, p.env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p.cmd, p.done = cmd, make(chan struct{})
	ready, done := make(chan struct{}), p.done
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if m := binaryMetricsURL.FindStringSubmatch(line); m != nil {
				p.MetricsURL = m[1]
			}
			if m := binaryReady.FindStringSubmatch(line); m != nil && !signalled {
				port, _ := strconv.Atoi(m[1])
				p.endpoint = loopbackEndpoint(port)
				if m := binaryTLSAddr.FindStringSubmatch(line); m != nil {
					p.TLSPort, _ = strconv.Atoi(m[1])
				}
				signalled = true
				close(ready)
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
	select {
	case <-ready:
		return nil
	case <-done:
		return fmt.Errorf("redcell exited before listening: %v; log:\n%s", p.exitError(), p.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("redcell logged no readiness within 30s; log:\n%s", p.Log())
		return nil
	}
}

func (p *binaryServer) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *binaryServer) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Log returns what the process has written to stderr since it last
// started.
func (p *binaryServer) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends sig and waits for the process to exit, returning how it exited.
func (p *binaryServer) stop(sig syscall.Signal) error {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("redcell did not exit within 30s of %v; log:\n%s", sig, p.Log())
	}
	return p.exitError()
}

// restart starts the stopped process again with the same arguments, on the
// ports it had: clients reconnect to the same address.
func (p *binaryServer) restart() {
	p.t.Helper()
	args := setArg(append([]string(nil), p.args...), "--port", strconv.Itoa(p.Port))
	if p.TLSPort != 0 {
		args = setArg(args, "--tls-port", strconv.Itoa(p.TLSPort))
	}
	p.args = args
	p.mu.Lock()
	p.log.Reset()
	p.mu.Unlock()
	require.NoError(p.t, p.start(buildBinary(p.t)))
}

// setArg sets flag's value in args, appending it if absent.
func setArg(args []string, flag, value string) []string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			args[i+1] = value
			return args
		}
	}
	return append(args, flag, value)
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
