package protocol_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"redcell/server"
)

// Helpers of the hardening tests: limits for the in-process server, and the
// built binary as a process that can be stopped, killed and restarted.

// withLimits sets the server's protocol and connection limits.
func withLimits(l server.Limits) serverOption {
	return func(c *server.Config) { c.Limits = l }
}

// redcellProc is the built binary running as a child process.
type redcellProc struct {
	t       *testing.T
	bin     string
	env     []string
	args    []string
	cmd     *exec.Cmd
	Port    int
	TLSPort int
	mu      sync.Mutex
	log     strings.Builder
	done    chan struct{}
	exitErr error
}

var (
	procAddr    = regexp.MustCompile(`\baddr=127\.0\.0\.1:(\d+)\b`)
	procTLSAddr = regexp.MustCompile(`\btls_addr=127\.0\.0\.1:(\d+)\b`)
)

// startProc runs bin with args, env added to the test's environment, and
// waits until it logs that it is ready. The process is killed when the test
// ends if it is still running.
func startProc(t *testing.T, bin string, env []string, args ...string) *redcellProc {
	t.Helper()
	p, err := launchProc(t, bin, env, args...)
	require.NoError(t, err)
	return p
}

// launchProc is startProc returning an error if the server exits before
// it is ready, say because its port was taken.
func launchProc(t *testing.T, bin string, env []string, args ...string) (*redcellProc, error) {
	t.Helper()
	p := &redcellProc{t: t, bin: bin, env: env, args: args}
	err := p.start()
	t.Cleanup(func() {
		if p.cmd != nil && p.running() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p, err
}

func (p *redcellProc) start() error {
	t := p.t
	t.Helper()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Dir = t.TempDir()
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	p.done = make(chan struct{})
	readyc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.Contains(line, "ready to accept connections") {
				select {
				case readyc <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := p.cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	select {
	case line := <-readyc:
		m := procAddr.FindStringSubmatch(line)
		require.NotNil(t, m, "no addr= in %q", line)
		p.Port, _ = strconv.Atoi(m[1])
		if m := procTLSAddr.FindStringSubmatch(line); m != nil {
			p.TLSPort, _ = strconv.Atoi(m[1])
		}
	case <-p.done:
		return fmt.Errorf("redcell exited before listening: %v; log:\n%s", p.exitError(), p.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("redcell logged no readiness within 30s; log:\n%s", p.Log())
	}
	return nil
}

func (p *redcellProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *redcellProc) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Log returns what the process has written to stderr.
func (p *redcellProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends sig and waits for the process to exit, returning how it exited.
func (p *redcellProc) stop(sig syscall.Signal) error {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		p.t.Fatalf("redcell did not exit within 30s of %v; log:\n%s", sig, p.Log())
	}
	return p.exitError()
}

// restart starts the process again with the same arguments, on the ports
// it had: clients reconnect to the same address.
func (p *redcellProc) restart() {
	p.t.Helper()
	args := append([]string(nil), p.args...)
	args = setArg(args, "--port", strconv.Itoa(p.Port))
	if p.TLSPort != 0 {
		args = setArg(args, "--tls-port", strconv.Itoa(p.TLSPort))
	}
	p.args = args
	p.mu.Lock()
	p.log.Reset()
	p.mu.Unlock()
	require.NoError(p.t, p.start())
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

// unusedPort returns a TCP port nothing listens on right now.
func unusedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// openFilesLimit is the process's soft limit on open files (Go raises it to
// the hard limit at start).
func openFilesLimit(t testing.TB) int {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur > 1<<20 {
		return 1 << 20
	}
	return int(lim.Cur)
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// dialRaw opens a raw RESP connection to 127.0.0.1:port.
func dialRaw(t testing.TB, port int) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, rd: bufio.NewReaderSize(conn, 1<<16)}
}
