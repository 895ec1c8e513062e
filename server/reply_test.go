package server

import (
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// fakeConn is a connection that keeps what the server writes (with redcon's
// writer), so handlers can be tested, and benchmarked, without a network.
// What it keeps is "sent": flush sends nothing more.
type fakeConn struct {
	*redcon.Writer
	cl     *client
	closed bool
	addr   string // RemoteAddr; "" is 127.0.0.1:50000
}

var _ connection = (*fakeConn)(nil)

func newFakeConn() *fakeConn { return &fakeConn{Writer: redcon.NewWriter(nil)} }

func (f *fakeConn) RemoteAddr() string {
	if f.addr != "" {
		return f.addr
	}
	return "127.0.0.1:50000"
}
func (f *fakeConn) Close() error        { f.closed = true; return nil }
func (f *fakeConn) Abort()              { f.closed = true }
func (f *fakeConn) client() *client     { return f.cl }
func (f *fakeConn) setClient(c *client) { f.cl = c }
func (f *fakeConn) flush() error        { return nil }
func (f *fakeConn) drop()               { f.SetBuffer(nil); f.closed = true }
func (f *fakeConn) NetConn() net.Conn   { return nil }
func (f *fakeConn) DeferArray() int     { return len(f.Buffer()) }

func (f *fakeConn) WriteInts(v [5]int64) {
	var buf [128]byte
	f.WriteRaw(appendInts(buf[:0], v))
}

// refuseLater reports that a fakeConn has no goroutine of its own to send a
// refusal: the server closes it at once.
func (f *fakeConn) refuseLater(string) bool { return false }

// startOutbox reports that a fakeConn, without a network, cannot have an outbox:
// MONITOR and SUBSCRIBE are refused.
func (f *fakeConn) startOutbox(int) *outbox { return nil }

func (f *fakeConn) mute() {}

func (f *fakeConn) SetDeferredArray(mark, n int) {
	out := f.Buffer()
	hdr := redcon.AppendArray(nil, n)
	f.SetBuffer(append(append(append([]byte(nil), out[:mark]...), hdr...), out[mark:]...))
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
	require.True(t, srv.accept(conn))
	return &testClient{srv: srv, conn: conn, c: conn.client()}
}

// do runs one command through the server's dispatcher and returns the reply.
func (tc *testClient) do(args ...string) string {
	cmd := redcon.Command{Args: make([][]byte, len(args))}
	for i, a := range args {
		cmd.Args[i] = []byte(a)
	}
	tc.srv.handle(tc.conn, cmd)
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

// A decision's reply is encoded at once (appendInts), byte for byte what
// redcon's writers encode element by element, at every magnitude and sign.
func TestAppendIntsIsRedcons(t *testing.T) {
	values := []int64{0, 1, 2, 9, 10, 99, 100, 101, 998, 999, 1000, 12345, 1<<31 - 1, 1 << 32, math.MaxInt64, math.MaxInt64 - 1}
	for p := int64(10); p <= 1e18; p *= 10 {
		values = append(values, p-1, p, p+1) // each count of digits, at its edges
	}
	for _, n := range values[:len(values):len(values)] {
		values = append(values, -n)
	}
	values = append(values, math.MinInt64, math.MinInt64+1)
	for i := range values {
		var v [5]int64
		for j := range v {
			v[j] = values[(i+j)%len(values)]
		}
		want := redcon.AppendArray(nil, 5)
		for _, n := range v {
			want = redcon.AppendInt(want, n)
		}
		require.Equal(t, string(want), string(appendInts([]byte("x"), v))[1:], "%v", v)
	}
	out := make([]byte, 0, 256)
	require.Zero(t, testing.AllocsPerRun(10, func() {
		appendInts(out, [5]int64{math.MinInt64, math.MaxInt64, 1000, -2, 7})
	}), "numbers past the table do not allocate either")
}

// conn.WriteInts is held to the output limit as the writers it replaces:
// a reply that would pass MaxOutput is dropped and the connection closed,
// one that fits exactly is queued.
func TestWriteIntsKeepsTheOutputLimit(t *testing.T) {
	v := [5]int64{0, 101, 100, -1, 1}
	size := len(appendInts(nil, v))
	for _, c := range []struct {
		queued int
		closed bool
	}{{100 - size, false}, {100 - size + 1, true}} {
		srv := New(Config{Limits: Limits{MaxOutput: 100}}, storage.New(storage.Config{}))
		cn := newConn(srv, &scriptConn{})
		require.True(t, srv.accept(cn))
		cn.out = append(cn.out, make([]byte, c.queued)...)
		cn.WriteInts(v)
		require.Equal(t, c.closed, cn.closed, "%d bytes queued before", c.queued)
		if !c.closed {
			require.Equal(t, string(appendInts(nil, v)), string(cn.out[c.queued:]))
		}
	}
}

// appendInts appends the RESP array of the five integers v to b, as
// conn.WriteInts encodes it (putInts).
func appendInts(b []byte, v [5]int64) []byte {
	var buf [intsRoom]byte
	return append(b, buf[:putInts(&buf, v)]...)
}
