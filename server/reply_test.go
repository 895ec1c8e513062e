package server

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// fakeConn is a connection that keeps what the server writes (with redcon's
// writer), so handlers can be tested, and benchmarked, without a network.
// What it keeps is "sent": Flush sends nothing more. The needs a command
// asks (engine.Need) are kept, and cleared as the engine clears them.
type fakeConn struct {
	*redcon.Writer
	cl     *client // the client accepted on it (Server.acceptFake)
	closed bool
	addr   string // RemoteAddr; "" is 127.0.0.1:50000
	need   engine.Need
	killed atomic.Bool
	done   chan struct{}
}

var _ connection = (*fakeConn)(nil)

func newFakeConn() *fakeConn {
	return &fakeConn{Writer: redcon.NewWriter(nil), done: make(chan struct{})}
}

func (f *fakeConn) RemoteAddr() string {
	if f.addr != "" {
		return f.addr
	}
	return "127.0.0.1:50000"
}
func (f *fakeConn) LocalAddr() string                      { return "" }
func (f *fakeConn) Close() error                           { f.closed = true; f.need |= engine.NeedClose; return nil }
func (f *fakeConn) Abort()                                 { f.closed = true }
func (f *fakeConn) Flush() error                           { return nil }
func (f *fakeConn) Drop()                                  { f.SetBuffer(nil); f.closed = true }
func (f *fakeConn) NetConn() net.Conn                      { return nil }
func (f *fakeConn) DeferArray() int                        { return len(f.Buffer()) }
func (f *fakeConn) Need(n engine.Need)                     { f.need |= n }
func (f *fakeConn) Needs() engine.Need                     { return f.need }
func (f *fakeConn) OnLoop() bool                           { return false }
func (f *fakeConn) SetAuthenticated(bool)                  {}
func (f *fakeConn) SetIdleExempt(bool)                     {}
func (f *fakeConn) PeekKeys() (next, after []byte)         { return nil, nil }
func (f *fakeConn) Mute()                                  {}
func (f *fakeConn) Killed() bool                           { return f.killed.Load() }
func (f *fakeConn) Done() <-chan struct{}                  { return f.done }
func (f *fakeConn) WatchHangup() (<-chan struct{}, func()) { return nil, func() {} }

func (f *fakeConn) Kill() bool {
	if !f.killed.CompareAndSwap(false, true) {
		return false
	}
	if f.done != nil {
		close(f.done)
	}
	f.closed = true
	return true
}

func (f *fakeConn) WriteInts(v [5]int64) {
	var buf [128]byte
	f.WriteRaw(appendInts(buf[:0], v))
}

// StartOutbox reports that a fakeConn, without a network, cannot have an
// outbox: MONITOR and SUBSCRIBE are refused.
func (f *fakeConn) StartOutbox(int, func(*engine.Outbox), func(*engine.Outbox)) *engine.Outbox {
	return nil
}

func (f *fakeConn) SetDeferredArray(mark, n int) {
	out := f.Buffer()
	hdr := redcon.AppendArray(nil, n)
	f.SetBuffer(append(append(append([]byte(nil), out[:mark]...), hdr...), out[mark:]...))
}

// acceptFake accepts f as the engine accepts a connection (accept), and
// keeps its client in f.cl; it reports whether f was admitted.
func (s *Server) acceptFake(f *fakeConn) bool {
	c, refusal := s.accept(f)
	f.cl = c
	return refusal == ""
}

// client is the client accepted on f.
func (f *fakeConn) client() *client { return f.cl }

// handle runs one command read on its own on conn, at the clock's current
// reading: client.Run, as the engine calls it, with nothing around it, for
// the benchmarks of a command's cost.
func (s *Server) handle(conn *fakeConn, cmd redcon.Command) {
	conn.cl.Run(cmd.Args, s.now())
}

// run runs one command as the engine runs a batch's, at now, and clears
// the needs it asked as the engine would once it met them.
func (f *fakeConn) run(c *client, args [][]byte, now time.Time) time.Time {
	if f.need&engine.NeedClose != 0 || f.killed.Load() {
		return now // the engine runs nothing more of a closing connection
	}
	end := c.Run(args, now)
	f.need &^= engine.NeedGoroutine | engine.NeedGoroutineAfter | engine.NeedSync
	return end
}

// take returns what was written since the last call and forgets it.
func (f *fakeConn) take() string {
	out := string(f.Buffer())
	f.SetBuffer(nil)
	return out
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testClient is one connection to a fresh Server on a fixed clock.
type testClient struct {
	srv  *Server
	conn *fakeConn
	c    *client
}

func newTestClient(t testing.TB, cfg Config) *testClient {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	srv := New(cfg, storage.New(storage.Config{}))
	conn := newFakeConn()
	require.True(t, srv.acceptFake(conn))
	return &testClient{srv: srv, conn: conn, c: conn.cl}
}

// do runs one command through the server's dispatcher and returns the reply.
func (tc *testClient) do(args ...string) string {
	cmd := redcon.Command{Args: make([][]byte, len(args))}
	for i, a := range args {
		cmd.Args[i] = []byte(a)
	}
	tc.conn.run(tc.c, cmd.Args, tc.srv.now())
	return tc.conn.take()
}

func TestRepliesFollowTheProtocol(t *testing.T) {
	tc := newTestClient(t, Config{})
	c := tc.c
	for _, resp := range []int{2, 3} {
		c.session.resp = resp
		c.writeNull()
		c.writeMap(2)
		c.writeSet(3)
		c.writeVerbatim("a:1\r\n")
		got := tc.conn.take()
		if resp == 2 {
			require.Equal(t, "$-1\r\n*4\r\n*3\r\n$5\r\na:1\r\n\r\n", got)
		} else {
			require.Equal(t, "_\r\n%2\r\n~3\r\n=9\r\ntxt:a:1\r\n\r\n", got)
		}
	}
}

// An error text must stay on one line: CR and LF become spaces, as Redis
// does for errors that echo user input.
func TestWriteErrorKeepsOneLine(t *testing.T) {
	tc := newTestClient(t, Config{})
	tc.c.writeError(commandError("ERR bad\r\nthing\rhere\n"))
	require.Equal(t, "-ERR bad  thing here \r\n", tc.conn.take())
}

func redconCommand(args [][]byte) redcon.Command { return redcon.Command{Args: args} }

// runSteps runs steps in order (testkit.RunSteps) on one connection to a
// fresh server whose clock each step sets to t0 and its At, and returns
// the client for further checks.
func runSteps(t *testing.T, cfg Config, steps []testkit.Step) *testClient {
	t.Helper()
	var now atomic.Int64
	cfg.Now = func() time.Time { return time.Unix(0, now.Load()) }
	tc := newTestClient(t, cfg)
	testkit.RunSteps(t, steps, tc.do, func(at time.Duration) { now.Store(t0.Add(at).UnixNano()) })
	return tc
}

// errReply is the wire form of an error reply.
func errReply(e replyError) string { return "-" + e.text + "\r\n" }

// appendInts appends the RESP array of the five integers v to b, as the
// engine's WriteInts encodes it.
func appendInts(b []byte, v [5]int64) []byte { return engine.AppendInts(b, v) }

// closing reports whether the client's batch asked its connection to close
// (engine.NeedClose).
func (c *client) closing() bool { return c.conn.Needs()&engine.NeedClose != 0 }

// servePipe serves one end of a net.Pipe on srv, as the engine serves a
// connection (engine.Engine.ServeConn), and returns the other end, the
// client the server made of it, and a channel closed once serving ended.
// The pipe has no buffer: what the server writes waits until the test
// reads it.
func servePipe(t *testing.T, srv *Server) (net.Conn, *client, chan struct{}) {
	t.Helper()
	known := map[*client]bool{}
	for _, c := range srv.connectedClients() {
		known[c] = true
	}
	end, server := net.Pipe()
	served := make(chan struct{})
	go func() { srv.eng.ServeConn(server); close(served) }()
	var cl *client
	require.Eventually(t, func() bool {
		for _, c := range srv.connectedClients() {
			if !known[c] {
				cl = c
				return true
			}
		}
		return false
	}, testkit.Timeout, time.Millisecond, "the pipe's client")
	return end, cl, served
}
