package testkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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

// Program is a redcell to run as a child process: the binary built from
// this module (Binary), the test binary itself (Self), or a file
// (ProgramAt). The zero Program runs nothing.
type Program struct {
	path string
	self bool
}

// Path is the program's file, for a caller that runs it its own way (in a
// network namespace, say).
func (p Program) Path() string { return p.path }

// built is the redcell command, compiled once for every test that runs it.
var built struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// Binary is the redcell command built from this module, on the first call
// of the test binary; RemoveBinary removes it.
func Binary(t testing.TB) Program {
	t.Helper()
	SkipIfShort(t)
	built.once.Do(func() {
		// go test puts its own GOROOT/bin first in the test's PATH.
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go command on PATH: %w", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "redcell-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "redcell")
		// The test runs in its package's directory, inside the module.
		built.out, built.err = exec.Command(goTool, "build", "-o", built.path, "github.com/redcell/redcell").CombinedOutput()
	})
	require.NoError(t, built.err, "go build redcell:\n%s", built.out)
	return Program{path: built.path}
}

// RemoveBinary removes what Binary built. Call it from TestMain once m.Run
// has returned.
func RemoveBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// Self is the test binary run as redcell: for a package whose TestMain runs
// main when REDCELLTEST_CHILD=1, with the arguments in REDCELLTEST_ARGS
// separated by spaces (the root package, whose TestMain can also change
// what main uses, as its clock). An argument cannot hold a space.
func Self() Program { return Program{path: os.Args[0], self: true} }

// ProgramAt is the program at path, say a redcell built another way.
func ProgramAt(path string) Program { return Program{path: path} }

// Command returns the command that runs p with args, its environment the
// caller's without its REDCELL_ variables, so that only env sets any, and
// env. The caller may set its other fields before running it.
func (p Program) Command(env []string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if p.self {
		cmd = exec.Command(p.path, "-test.run=^$")
		env = append([]string{"REDCELLTEST_CHILD=1", "REDCELLTEST_ARGS=" + strings.Join(args, " ")}, env...)
	} else {
		cmd = exec.Command(p.path, args...)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDCELL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// RunTimeout bounds a Run.
const RunTimeout = 2 * time.Minute

// Run runs p with env and args (Command) to its end and returns what it
// wrote to stdout and stderr, interleaved, and its exit status. A program
// that cannot start, or still runs after RunTimeout, fails the test.
func (p Program) Run(t testing.TB, env []string, args ...string) (output string, status int) {
	t.Helper()
	cmd := p.Command(env, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the same writer
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(RunTimeout):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s %q still ran after %v:\n%s", p.path, args, RunTimeout, out.String())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err, "running %s %q", p.path, args)
	return out.String(), 0
}

// Process is a redcell running as a child process, in a fresh working
// directory, on the ports its ready line names. Its log (stderr) is kept.
// When the test ends a process still running is sent SIGTERM and must exit
// with status 0 within StopTimeout.
//
// Its methods are for the test's own goroutine. The addresses are set once
// Start returns, and again by Restart.
type Process struct {
	Addr       string // the plain RESP listener, 127.0.0.1:Port
	Port       int
	TLSPort    int    // 0 without --tls-port
	MetricsURL string // "" without --metrics-addr

	t         *testing.T
	prog      Program
	env, args []string
	cmd       *exec.Cmd
	done      chan struct{} // closed once the process has exited

	mu      sync.Mutex
	log     strings.Builder
	ready   bool
	exitErr error
	// panics are the "panic recovered" lines the process logged, over all
	// its starts: each fails the test when it ends (Launch), as a
	// recovered panic in the test's own process does (Main).
	panics []string
}

// Timeouts of a Process: how long it may take to log that it is ready, and
// to exit once signalled.
const (
	ReadyTimeout = 30 * time.Second
	StopTimeout  = 30 * time.Second
)

var (
	// "ready to accept connections" carries addr= and, with TLS, tls_addr=;
	// "serving metrics" carries metrics=; in text or JSON.
	readyLine  = regexp.MustCompile(`ready to accept connections.*\baddr"?[=:]"?127\.0\.0\.1:(\d+)`)
	tlsAddr    = regexp.MustCompile(`\btls_addr"?[=:]"?127\.0\.0\.1:(\d+)`)
	metricsURL = regexp.MustCompile(`serving metrics.*\bmetrics"?[=:]"?(http://127\.0\.0\.1:\d+/metrics)`)
)

// ReadyPort is the port of the plain listener a log line says redcell is
// ready on, if line is that line ("ready to accept connections", in text or
// JSON, on 127.0.0.1).
func ReadyPort(line string) (int, bool) {
	m := readyLine.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	port, err := strconv.Atoi(m[1])
	return port, err == nil
}

// Start runs prog with env and args (Program.Command) and returns once it
// logs that it is ready. args must put it on 127.0.0.1 (redcell's default)
// and a free port: --port 0.
func Start(t *testing.T, prog Program, env []string, args ...string) *Process {
	t.Helper()
	p, err := Launch(t, prog, env, args...)
	require.NoError(t, err)
	return p
}

// Launch is Start returning an error if the process exits before it is
// ready, say because a port it was given was taken.
func Launch(t *testing.T, prog Program, env []string, args ...string) (*Process, error) {
	t.Helper()
	SkipIfShort(t)
	p := &Process{t: t, prog: prog, env: env, args: args}
	err := p.start()
	t.Cleanup(func() {
		p.stopAtEnd()
		p.mu.Lock()
		panics := p.panics
		p.mu.Unlock()
		for _, line := range panics {
			t.Errorf("redcell recovered a panic, a bug even when contained:\n%s", line)
		}
	})
	return p, err
}

// stopAtEnd stops a process still running when its test ends with SIGTERM,
// which it must obey cleanly.
func (p *Process) stopAtEnd() {
	t := p.t
	if p.done == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if err := p.exitError(); err != nil {
			t.Errorf("redcell exited with %v on SIGTERM at the end of the test; log:\n%s", err, p.Log())
		}
	case <-time.After(StopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("redcell did not exit within %v of SIGTERM at the end of the test; log:\n%s", StopTimeout, p.Log())
	}
}

func (p *Process) start() error {
	t := p.t
	t.Helper()
	cmd := p.prog.Command(p.env, p.args...)
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p.mu.Lock()
	p.ready = false
	p.mu.Unlock()
	p.cmd, p.done = cmd, make(chan struct{})
	go p.readLog(cmd, stderr, p.done)
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.ready || p.Exited()
	}, ReadyTimeout, 5*time.Millisecond, "redcell logged no readiness within %v; log:\n%s", ReadyTimeout, logOf{p})
	p.mu.Lock()
	ready := p.ready
	p.mu.Unlock()
	if !ready {
		return fmt.Errorf("redcell exited before it was ready: %v; log:\n%s", p.exitError(), p.Log())
	}
	return nil
}

// readLog keeps what the process writes to stderr and the addresses it
// logs, until it exits.
func (p *Process) readLog(cmd *exec.Cmd, stderr io.Reader, done chan struct{}) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.log.WriteString(line + "\n")
		if strings.Contains(line, "panic recovered") {
			p.panics = append(p.panics, line)
		}
		if m := metricsURL.FindStringSubmatch(line); m != nil {
			p.MetricsURL = m[1]
		}
		if port, ok := ReadyPort(line); ok && !p.ready {
			p.Addr, p.Port = "127.0.0.1:"+strconv.Itoa(port), port
			if m := tlsAddr.FindStringSubmatch(line); m != nil {
				p.TLSPort, _ = strconv.Atoi(m[1])
			}
			p.ready = true
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stderr)
	err := cmd.Wait()
	p.mu.Lock()
	p.exitErr = err
	p.mu.Unlock()
	close(done)
}

// logOf prints a process's log when a failure message is written, not when
// it is built.
type logOf struct{ p *Process }

func (l logOf) String() string { return l.p.Log() }

// Log returns what the process has written to stderr since it last
// started.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *Process) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Signal sends sig to the process, which must still run, and does not wait.
func (p *Process) Signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// Stop sends sig and waits for the process to exit (Wait), returning how it
// exited.
func (p *Process) Stop(sig os.Signal) error {
	p.t.Helper()
	p.Signal(sig)
	return p.Wait()
}

// Wait waits for the process to exit and returns how: nil for status 0, an
// *exec.ExitError otherwise. A process still running after StopTimeout is
// killed, and fails the test.
func (p *Process) Wait() error {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(StopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("redcell did not exit within %v; log:\n%s", StopTimeout, p.Log())
	}
	return p.exitError()
}

// ExitCode waits for the process to exit (Wait) and returns its exit
// status, -1 if a signal ended it.
func (p *Process) ExitCode() int {
	p.t.Helper()
	_ = p.Wait()
	return p.cmd.ProcessState.ExitCode()
}

// Restart starts the exited process again with the same arguments and
// environment, on the ports it had, so that clients reconnect to the same
// addresses, and returns once it is ready. Its log starts afresh.
func (p *Process) Restart() {
	p.t.Helper()
	require.True(p.t, p.Exited(), "Restart of a process still running")
	args := setArg(append([]string(nil), p.args...), "--port", strconv.Itoa(p.Port))
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
