// Package harness starts what redcell's end-to-end tests talk to: a server
// in this process on a manual clock (StartServer), the built binary as a
// child process (StartBinary), a real redis-server (StartRedisServer), and
// the tools a test needs (NeedTool, CLI); and opens clients to any of them
// (Endpoint). Two test packages share it: protocol_test (the server as
// users meet it) and protocol_test/availability (replication, Sentinel and
// cluster, which start many processes): go test runs the two side by side.
//
// It is for tests alone, as internal/testkit is.
package harness

import (
	"context"
	"crypto/tls"
	"net"
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

// T0 is the instant every test server's clock starts at.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// ManualClock is a clock that moves only when a test moves it. It is safe
// for concurrent use: the server reads it from every connection.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's current time; it is server.Config.Now.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Endpoint is where a server listens on 127.0.0.1: an in-process server,
// the built binary or a real redis-server. Its methods open clients to it,
// each closed when the test ends.
type Endpoint struct {
	Addr string // 127.0.0.1:Port
	Port int
}

func LoopbackEndpoint(port int) Endpoint {
	return Endpoint{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port}
}

// GoRedis returns a go-redis client, default options unless changed by opts.
func (e Endpoint) GoRedis(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: e.Addr}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Rueidis returns a Rueidis client with client-side caching off (the tests
// of caching itself turn it on).
func (e Endpoint) Rueidis(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
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

// Raw returns a connection speaking RESP by hand.
func (e Endpoint) Raw(t testing.TB) *testkit.Conn {
	t.Helper()
	return testkit.Dial(t, e.Addr)
}

// RawFrom is raw dialled from the local address ip (any of 127/8 on
// Linux), so that the server sees another client address. Where that
// cannot be done the test is skipped.
func (e Endpoint) RawFrom(t testing.TB, ip string) *testkit.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", e.Addr)
	if err != nil {
		t.Skipf("cannot dial from %s (loopback addresses beyond 127.0.0.1 are a Linux feature): %v", ip, err)
	}
	return testkit.NewConn(t, conn, 1<<16)
}

// TestServer is one in-process redcell listening on 127.0.0.1, on a manual
// clock.
type TestServer struct {
	Endpoint
	Clock *ManualClock
	Store *storage.Store
	Srv   *server.Server
	Cfg   server.Config
}

type ServerOption func(*server.Config)

// WithPassword makes the server require AUTH with pass.
func WithPassword(pass string) ServerOption {
	return func(c *server.Config) { c.RequirePass = pass }
}

// WithLimits sets the server's protocol and connection limits.
func WithLimits(l server.Limits) ServerOption {
	return func(c *server.Config) { c.Limits = l }
}

// StartServer starts a server on a free port with a manual clock at t0 and
// an in-memory store, and closes it when the test ends, checking that Serve
// returned cleanly.
func StartServer(t testing.TB, opts ...ServerOption) *TestServer {
	t.Helper()
	clock := NewManualClock(T0)
	store := storage.New(storage.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := server.Config{Now: clock.Now, Bind: "127.0.0.1", Port: port, Dir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	ts := &TestServer{Endpoint: LoopbackEndpoint(port), Clock: clock, Store: store, Srv: server.New(cfg, store), Cfg: cfg}
	ts.Serve(t, func() error { return ts.Srv.Serve(ln) })
	return ts
}

// ServeTLS serves TLS connections with cfg on another free port, beside
// the plain listener, and returns its address.
func (ts *TestServer) ServeTLS(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts.Serve(t, func() error { return ts.Srv.ServeTLS(ln, cfg) })
	return ln.Addr().String()
}

// Serve runs one of the server's accept loops until the test ends, then
// closes the server and checks that the loop returned cleanly.
func (ts *TestServer) Serve(t testing.TB, loop func() error) {
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

// Ctx is a context that ends with the test.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Deadline is how long a test waits for the server before failing.
func Deadline() time.Time { return time.Now().Add(10 * time.Second) }
