package server

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// scriptConn is a net.Conn that reads input in chunks of a fixed size and
// keeps what is written to it.
type scriptConn struct {
	net.Conn // nil: methods not defined here are not used
	in       []byte
	chunk    int
	written  bytes.Buffer
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error)      { return c.written.Write(p) }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }
func (c *scriptConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (c *scriptConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379}
}
func (c *scriptConn) Close() error { return nil }

// serveScript serves input, read chunk bytes at a time, on one connection
// of a fresh server on a fixed clock, and returns what the client was sent.
func serveScript(t testing.TB, input string, chunk int) string {
	t.Helper()
	srv := New(Config{Now: func() time.Time { return t0 }}, storage.New(storage.Config{Shards: 1}))
	sc := &scriptConn{in: []byte(input), chunk: chunk}
	srv.eng.ServeConn(sc)
	return sc.written.String()
}

// However the input is cut into reads, a command split across them,
// arguments longer than the read buffer (which then grows), the buffer's
// unparsed tail moved to its front, every command gets its reply, in order,
// and empty commands none.
func TestConnRepliesWhateverTheReads(t *testing.T) {
	var input, want strings.Builder
	for i, size := range []int{0, 1, 100, 4000, 5000, 20000, 70000, 3} {
		arg := strings.Repeat(string(rune('a'+i)), size)
		input.WriteString(testkit.Command("ECHO", arg))
		want.WriteString(testkit.Bulk(arg))
		input.WriteString(testkit.Command("CL.THROTTLE", "user:1", "2", "1", "60"))
		remaining := 2 - i
		if remaining >= 0 {
			fmt.Fprintf(&want, "*5\r\n:0\r\n:3\r\n:%d\r\n:-1\r\n:%d\r\n", remaining, 60*(i+1))
		} else {
			want.WriteString("*5\r\n:1\r\n:3\r\n:0\r\n:60\r\n:180\r\n")
		}
	}
	input.WriteString("*0\r\n*-1\r\nPING\r\n*-12\r\n") // empty commands are skipped
	want.WriteString("+PONG\r\n")
	for _, chunk := range []int{1, 7, 100, 4095, 4096, 16 << 10, 1 << 20} {
		got := serveScript(t, input.String(), chunk)
		require.Equal(t, want.String(), got, "reads of %d bytes", chunk)
	}
}

// QUIT's reply is sent and nothing after it runs, whatever was pipelined
// behind it.
func TestConnQuitEndsTheBatch(t *testing.T) {
	got := serveScript(t, "PING\r\nQUIT\r\nPING\r\n"+testkit.Command("CL.THROTTLE", "k", "1", "1", "1"), 1<<20)
	require.Equal(t, "+PONG\r\n+OK\r\n", got)
}

// loopConn is a net.Conn that reads the same batch every time and throws
// replies away: a client pipelining forever.
type loopConn struct {
	scriptConn
	batch   []byte
	written int
}

func (c *loopConn) Read(p []byte) (int, error)  { return copy(p, c.batch), nil }
func (c *loopConn) Write(p []byte) (int, error) { c.written += len(p); return len(p), nil }

// newLoopConn is a connection, on the real clock, whose every read is the
// same batch of 16 CL.THROTTLE on existing keys.
func newLoopConn(t testing.TB) (*engine.Stepper, *loopConn) {
	return newLoopConnOn(t, New(Config{}, storage.New(storage.Config{})))
}

// newLoopConnOn is newLoopConn on srv.
func newLoopConnOn(t testing.TB, srv *Server) (*engine.Stepper, *loopConn) {
	var batch strings.Builder
	for i := range 16 {
		batch.WriteString(testkit.Command("CL.THROTTLE", fmt.Sprintf("key:%d", i), "100", "10", "1"))
	}
	lc := &loopConn{batch: []byte(batch.String())}
	st, err := srv.eng.NewStepper(lc)
	require.NoError(t, err)
	require.NoError(t, st.Step())
	return st, lc
}

// A pipelined batch of decisions on existing keys allocates nothing: no
// copy of the command, no argument slice, no reply buffer.
func TestConnBatchAllocatesNothing(t *testing.T) {
	st, lc := newLoopConn(t)
	before := lc.written
	allocs := testing.AllocsPerRun(100, func() { serveBatch(t, st) })
	require.Zero(t, allocs, "allocations per batch of 16 CL.THROTTLE")
	require.Greater(t, lc.written, before, "replies were sent")
}

// serveBatch reads st's next batch and runs it, as an event loop does.
func serveBatch(tb testing.TB, st *engine.Stepper) {
	if err := st.Step(); err != nil {
		tb.Fatal(err)
	}
}

// benchBatches serves st's batches of 16 commands for b, reporting each
// command's time.
func benchBatches(b *testing.B, st *engine.Stepper) {
	b.ReportAllocs()
	for b.Loop() {
		serveBatch(b, st)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/command")
}

// BenchmarkConnBatch is one pipelined CL.THROTTLE through the reader, the
// decision and the reply encoding, without the network; an op
// is one command of a batch of 16.
func BenchmarkConnBatch(b *testing.B) {
	st, _ := newLoopConn(b)
	benchBatches(b, st)
}

// BenchmarkConnBatchPing is BenchmarkConnBatch with PING (as redis-benchmark's
// PING_MBULK sends it) in place of CL.THROTTLE: the protocol's floor, so that
// the two benchmarks' difference is what a decision costs beyond reading a
// command and writing a reply.
func BenchmarkConnBatchPing(b *testing.B) {
	srv := New(Config{}, storage.New(storage.Config{}))
	lc := &loopConn{batch: []byte(strings.Repeat(testkit.Command("PING"), 16))}
	st, err := srv.eng.NewStepper(lc)
	require.NoError(b, err)
	serveBatch(b, st)
	require.Equal(b, 16*len("+PONG\r\n"), lc.written)
	benchBatches(b, st)
}

// cycleConn is a net.Conn whose reads return its batches in turn, and that
// throws replies away: a client pipelining forever over many keys.
type cycleConn struct {
	scriptConn
	batches [][]byte
	next    int
}

func (c *cycleConn) Read(p []byte) (int, error) {
	b := c.batches[c.next]
	c.next = (c.next + 1) % len(c.batches)
	return copy(p, b), nil
}
func (c *cycleConn) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkConnBatchManyKeys is BenchmarkConnBatch on keys drawn at random
// among many, as redis-benchmark -r 100000 draws them: past a few tens of
// thousands of keys the table no longer fits in the caches, and a decision's
// lookup waits on memory unless the batch's keys were prefetched
// (Server.prefetchAhead). An op is one command.
func BenchmarkConnBatchManyKeys(b *testing.B) {
	for _, keys := range []int{1000, 10_000, 30_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchConnBatchKeys(b, keys) })
	}
}

func benchConnBatchKeys(b *testing.B, keys int) {
	srv := New(Config{}, storage.New(storage.Config{}))
	rate, err := gcra.NewRate(100, 10, 1, 1)
	require.NoError(b, err)
	now := gcra.InstantOf(time.Now())
	for i := range keys {
		_, err := srv.store.ThrottleSlot(fmt.Appendf(nil, "key:%012d", i), -1, rate, now)
		require.NoError(b, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cc := &cycleConn{batches: make([][]byte, 4096)}
	for i := range cc.batches {
		var batch []byte
		for range 16 {
			batch = append(batch, testkit.Command("CL.THROTTLE", fmt.Sprintf("key:%012d", rng.IntN(keys)), "100", "10", "1")...)
		}
		cc.batches[i] = batch
	}
	st, err := srv.eng.NewStepper(cc)
	require.NoError(b, err)
	// The setup's garbage is collected now, not by a cycle running beside
	// the batches: the loop allocates nothing, and a cycle's marking and
	// write barriers would be counted in its instructions (callgrind).
	runtime.GC()
	benchBatches(b, st)
}

// A command of many arguments is served (that the reader does not keep the
// room it needed for them is resp's TestReaderDoesNotKeepAHugeArgumentSlice).
func TestConnServesManyArguments(t *testing.T) {
	srv := New(Config{Now: func() time.Time { return t0 }}, storage.New(storage.Config{Shards: 1}))
	args := make([]string, 1000)
	for i := range args {
		args[i] = fmt.Sprintf("k%d", i)
	}
	input := testkit.Command(append([]string{"DEL"}, args...)...) + "PING\r\n"
	sc := &scriptConn{in: []byte(input), chunk: 1 << 20}
	srv.eng.ServeConn(sc)
	require.Equal(t, ":0\r\n+PONG\r\n", sc.written.String())
}
