// Package protocol_test checks redcell as its users meet it: the real server
// on a real TCP port, driven by go-redis, rueidis, redis-cli and raw RESP
// bytes, on a manual clock so that no test sleeps.
//
// The files go by who meets the server that way. clients_* are programs
// written with client libraries (redis-py, ioredis, an HTTP middleware);
// ops_* what operators use (INFO, /metrics, logs, the exporter, CLIENT and
// MONITOR, the built binary's flags); hardening_* hostile and heavy clients
// (limits, malformed RESP, floods, TLS, memory, faults under load); the rest
// the Redis command surface as applications call it. harness_* is what they
// share: the servers (this file: in process; harness_process_test.go: the
// built binary and a real redis-server) and the external tools
// (harness_tools_test.go); raw RESP, and the built binary's process, are
// the test kit's (redcell/internal/testkit), which every package's tests
// share.
package protocol_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m))
}

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

// endpoint is where a server listens on 127.0.0.1: an in-process server,
// the built binary or a real redis-server. Its methods open clients to it,
// each closed when the test ends.
type endpoint struct {
	Addr string // 127.0.0.1:Port
	Port int
}

func loopbackEndpoint(port int) endpoint {
	return endpoint{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port}
}

// goRedis returns a go-redis client, default options unless changed by opts.
func (e endpoint) goRedis(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: e.Addr}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// rueidis returns a rueidis client with client-side caching off (the tests
// of caching itself turn it on).
func (e endpoint) rueidis(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: []string{e.Addr}, DisableCache: true}
	for _, f := range opts {
		f(&o)
	}
	c, err := rueidis.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// raw returns a connection speaking RESP by hand.
func (e endpoint) raw(t testing.TB) *testkit.Conn {
	t.Helper()
	return testkit.Dial(t, e.Addr)
}

// rawFrom is raw dialled from the local address ip (any of 127/8 on
// Linux), so that the server sees another client address. Where that
// cannot be done the test is skipped.
func (e endpoint) rawFrom(t testing.TB, ip string) *testkit.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", e.Addr)
	if err != nil {
		t.Skipf("cannot dial from %s (loopback addresses beyond 127.0.0.1 are a Linux feature): %v", ip, err)
	}
	return testkit.NewConn(t, conn, 1<<16)
}

// testServer is one in-process redcell listening on 127.0.0.1, on a manual
// clock.
type testServer struct {
	endpoint
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

// withLimits sets the server's protocol and connection limits.
func withLimits(l server.Limits) serverOption {
	return func(c *server.Config) { c.Limits = l }
}

// startServer starts a server on a free port with a manual clock at t0 and
// an in-memory store, and closes it when the test ends, checking that Serve
// returned cleanly.
func startServer(t testing.TB, opts ...serverOption) *testServer {
	t.Helper()
	clock := newManualClock(t0)
	store := storage.New(storage.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := server.Config{Now: clock.Now, Bind: "127.0.0.1", Port: port, Dir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	ts := &testServer{endpoint: loopbackEndpoint(port), Clock: clock, Store: store, Srv: server.New(cfg, store), Cfg: cfg}
	ts.serve(t, func() error { return ts.Srv.Serve(ln) })
	return ts
}

// serveTLS serves TLS connections with cfg on another free port, beside
// the plain listener, and returns its address.
func (ts *testServer) serveTLS(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts.serve(t, func() error { return ts.Srv.ServeTLS(ln, cfg) })
	return ln.Addr().String()
}

// serve runs one of the server's accept loops until the test ends, then
// closes the server and checks that the loop returned cleanly.
func (ts *testServer) serve(t testing.TB, loop func() error) {
	served := make(chan error, 1)
	go func() { served <- loop() }()
	t.Cleanup(func() {
		require.NoError(t, ts.Srv.Close())
		select {
		case err := <-served:
			require.NoError(t, err, "Serve")
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10s of Close")
		}
	})
}

// ctx is a context that ends with the test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// deadline is how long a test waits for the server before failing.
func deadline() time.Time { return time.Now().Add(10 * time.Second) }
