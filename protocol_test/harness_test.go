// Package protocol_test checks redcell as its users meet it: the real server
// on a real TCP port, driven by go-redis, rueidis, redis-cli and raw RESP
// bytes, on a manual clock so that no test sleeps.
package protocol_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"redcell/server"
	"redcell/storage"
)

// t0 is the instant every test server's clock starts at.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// manualClock is a clock that moves only when a test moves it. It is safe
// for concurrent use: the server reads it from every connection.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock(start time.Time) *manualClock { return &manualClock{now: start} }

// Now returns the clock's current time; it is server.Config.Now.
func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// testServer is one in-process redcell listening on 127.0.0.1.
type testServer struct {
	Addr  string
	Port  int
	Clock *manualClock
	Store *storage.Store
	Srv   *server.Server
	Cfg   server.Config
}

type serverOption func(*server.Config)

// withPassword makes the server require AUTH with pass.
func withPassword(pass string) serverOption {
	return func(c *server.Config) { c.RequirePass = pass }
}

// startServer starts a server on a free port with a manual clock at t0 and
// closes it when the test ends, checking that Serve returned cleanly.
func startServer(t testing.TB, opts ...serverOption) *testServer {
	t.Helper()
	return startServerStore(t, storage.Config{}, opts...)
}

// startServerStore is startServer over a store built from scfg.
func startServerStore(t testing.TB, scfg storage.Config, opts ...serverOption) *testServer {
	t.Helper()
	clock := newManualClock(t0)
	store := storage.New(scfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := server.Config{Now: clock.Now, Bind: "127.0.0.1", Port: port, Dir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	srv := server.New(cfg, store)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		select {
		case err := <-served:
			require.NoError(t, err, "Serve")
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10s of Close")
		}
	})
	return &testServer{Addr: ln.Addr().String(), Port: port, Clock: clock, Store: store, Srv: srv, Cfg: cfg}
}

// goRedis returns a go-redis client for ts, default options unless changed
// by opts, closed when the test ends.
func (ts *testServer) goRedis(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: ts.Addr}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// rueidis returns a rueidis client with client-side caching off, as redcell
// requires, closed when the test ends.
func (ts *testServer) rueidis(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: []string{ts.Addr}, DisableCache: true}
	for _, f := range opts {
		f(&o)
	}
	c, err := rueidis.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// ctx is a context that ends with the test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// rawConn is one TCP connection speaking RESP by hand, for tests that must
// see the exact bytes or control exactly what is sent.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	rd   *bufio.Reader
}

func (ts *testServer) raw(t testing.TB) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", ts.Addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, rd: bufio.NewReaderSize(conn, 1<<16)}
}

// command encodes args as one RESP array of bulk strings.
func command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// write sends raw bytes.
func (c *rawConn) write(s string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(c.conn, s)
	require.NoError(c.t, err)
}

// do sends one command and returns its reply's raw bytes.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.write(command(args...))
	return c.read()
}

// read returns the raw bytes of the next reply.
func (c *rawConn) read() string {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	var b strings.Builder
	require.NoError(c.t, readReply(c.rd, &b), "reading a reply; got so far %q", b.String())
	return b.String()
}

// expectClosed asserts that the server closed the connection without
// sending anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	rest, err := io.ReadAll(c.rd)
	require.NoError(c.t, err, "the server should close the connection")
	require.Empty(c.t, string(rest), "bytes after the last expected reply")
}

// readReply copies one complete RESP2 or RESP3 reply from rd to out.
func readReply(rd *bufio.Reader, out *strings.Builder) error {
	line, err := rd.ReadString('\n')
	out.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		_, err = io.ReadFull(rd, buf)
		out.Write(buf)
		return err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readReply(rd, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// Expected replies, as bytes on the wire.

func ints(vs ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, ":%d\r\n", v)
	}
	return b.String()
}

func integer(n int64) string   { return fmt.Sprintf(":%d\r\n", n) }
func simple(s string) string   { return "+" + s + "\r\n" }
func errReply(s string) string { return "-" + s + "\r\n" }
func bulk(s string) string     { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

const (
	null2 = "$-1\r\n" // RESP2 null bulk string
	null3 = "_\r\n"   // RESP3 null
	ok    = "+OK\r\n"
)

func bulks(ss ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(ss))
	for _, s := range ss {
		b.WriteString(bulk(s))
	}
	return b.String()
}

// redisCLI returns the path of redis-cli. Without it the test is skipped,
// unless CI is set: CI must run every test.
func redisCLI(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		msg := "redis-cli not found in PATH: the redis-cli tests were skipped; install it with `apt-get install redis-tools` (Debian/Ubuntu) or `brew install redis`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this is a failure)")
		}
		t.Skip(msg)
	}
	return path
}

// cli runs redis-cli against port with args, feeding stdin, and returns
// what it printed. Its output is not a terminal, so it prints raw replies.
// Anything on stderr fails the test.
func cli(t testing.TB, port int, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runCLI(redisCLI(t), port, stdin, args...)
	require.NoError(t, err, "redis-cli %v (stderr %q)", args, stderr)
	require.Empty(t, stderr, "redis-cli %v stderr", args)
	return stdout
}

// runCLI runs redis-cli without touching the test, for use inside
// require.Eventually. An exit status reporting a command error is not an
// error: the error text is in stdout.
func runCLI(path string, port int, stdin string, args ...string) (stdout, stderr string, err error) {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, path, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil
	}
	return out.String(), errOut.String(), err
}

// deadline is how long a test waits for the server before failing.
func deadline() time.Time { return time.Now().Add(10 * time.Second) }

// readAll reads until the server closes the connection.
func readAll(c *rawConn) (string, error) {
	b, err := io.ReadAll(c.rd)
	return string(b), err
}
