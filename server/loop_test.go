package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// Served by event loops or by a goroutine per connection, a client sees the
// same bytes: each script runs on a fresh connection of each kind of server,
// on one fixed clock, and ends with QUIT or with what closes it. The
// scripts cross what makes a connection leave its loop mid-batch (an admin
// command, a refusal of its input, CLIENT KILL of itself).
func TestEventLoopsAnswerAsGoroutinesDo(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	cfg := func(loops int) Config { return Config{Now: func() time.Time { return at }, EventLoops: loops} }
	loopAddr, loopSrv := startServer(t, cfg(2))
	plainAddr, plainSrv := startServer(t, cfg(-1))
	if engine.HaveEventLoops {
		require.Equal(t, 2, loopSrv.eventLoops())
	}
	scripts := []string{
		"PING\r\nQUIT\r\n",
		// A pipeline that leaves the loop at SLOWLOG: the replies
		// before it, its own and those after it come in order.
		"CL.THROTTLE k 1 1 60\r\nCL.THROTTLE k 1 1 60\r\nCL.THROTTLE k 1 1 60\r\n" +
			"CONFIG GET maxclients\r\nSLOWLOG LEN\r\nCL.THROTTLE k 1 1 60\r\nECHO after\r\nQUIT\r\n",
		"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nSET x 1\r\nGET x\r\nTYPE x\r\nQUIT\r\n",
		"MULTI\r\nCL.THROTTLE t 0 1 1\r\nCL.THROTTLE t 0 1 1\r\nEXEC\r\nQUIT\r\n",
		"HELLO 3\r\nCL.THROTTLE r3 5 1 1\r\nQUIT\r\n",
		// Refused input: the commands before it are answered, then the
		// refusal, then the connection is closed.
		"PING\r\nECHO x\r\n*1\r\n$x\r\n",
		"PING\r\nQUIT\r\nPING\r\n",
		// CLIENT KILL of itself: nothing more is answered.
		"PING\r\nCLIENT KILL SKIPME no TYPE normal\r\nPING\r\n",
	}
	for i, script := range scripts {
		// The last script's connection is gone from each server first:
		// CLIENT KILL TYPE normal would count it.
		for _, srv := range []*Server{plainSrv, loopSrv} {
			require.Eventually(t, func() bool { return len(srv.connectedClients()) == 0 }, 10*time.Second, time.Millisecond)
		}
		want := testkit.Converse(t, plainAddr, script)
		require.NotEmpty(t, want, "script %d answers something", i)
		require.Equal(t, want, testkit.Converse(t, loopAddr, script), "script %d: %q", i, script)
	}
}

// A connection waiting on its loop is closed by CLIENT KILL from another,
// at once: its client sees the end of the stream, and CLIENT LIST no longer
// shows it. A connection that leaves its loop for an admin command works on
// from its own goroutine.
func TestEventLoopConnectionsAreKilledAndLeave(t *testing.T) {
	addr, srv := startServer(t, Config{EventLoops: 1})
	idle := testkit.Dial(t, addr)
	id := idle.DoInline("CLIENT ID")
	if engine.HaveEventLoops {
		require.True(t, onLoop(t, srv, id), "a plain connection is served by the loop")
	}

	killer := testkit.Dial(t, addr)
	require.Equal(t, ":1\r\n", killer.DoInline("CLIENT KILL ID "+strings.TrimSuffix(strings.TrimPrefix(id, ":"), "\r\n")))
	require.NoError(t, idle.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := idle.Reader.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the killed client's connection ends")
	require.Eventually(t, func() bool {
		return !strings.Contains(killer.DoInline("CLIENT LIST"), "id="+strings.Trim(id, ":\r\n")+" ")
	}, 10*time.Second, 10*time.Millisecond)

	// SLOWLOG is an admin command: the connection leaves the loop for it
	// and keeps working.
	mover := testkit.Dial(t, addr)
	moverID := mover.DoInline("CLIENT ID")
	require.Equal(t, "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n", mover.DoInline("CONFIG GET maxclients"))
	require.True(t, onLoop(t, srv, moverID) || !engine.HaveEventLoops, "CONFIG GET runs on the loop")
	require.Equal(t, ":0\r\n", mover.DoInline("SLOWLOG LEN"))
	require.False(t, onLoop(t, srv, moverID), "left its loop")
	require.Equal(t, "+PONG\r\n", mover.DoInline("PING"))
	require.Equal(t, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:1\r\n", mover.DoInline("CL.THROTTLE m 1 1 1"))
}

// With a loop per listener, and its connections closed by Close, Serve
// returns and no loop goroutine is left behind.
func TestEventLoopsEndWithTheServer(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := New(Config{EventLoops: 2}, storage.New(storage.Config{Shards: 1}))
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		c := testkit.Dial(t, ln.Addr().String())
		require.Equal(t, "+PONG\r\n", c.DoInline("PING"))
		require.NoError(t, srv.Close())
		require.NoError(t, <-done)
		_, err = c.Reader.ReadByte()
		require.Error(t, err, "Close closed the loop's connection")
	}
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 10*time.Second, 10*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// onLoop reports whether an event loop serves the client whose CLIENT ID
// reply is id.
func onLoop(t *testing.T, srv *Server, id string) bool {
	t.Helper()
	for _, c := range srv.connectedClients() {
		if fmt.Sprintf(":%d\r\n", c.id) == id {
			return c.conn.OnLoop()
		}
	}
	t.Fatalf("no client %q", id)
	return false
}

// gatedPersistence is durable mode's disk for tests: each Sync announces
// itself (entered), then waits for the test to let it return (finish). Its
// flushes fail once a Sync has returned an error, as the flusher's do. When
// the test ends, every Sync returns at once, with an error.
type gatedPersistence struct {
	nopPersistence
	t       *testing.T
	entered chan struct{}
	release chan error
	ended   chan struct{}
	failing atomic.Bool
}

func newGatedPersistence(t *testing.T) *gatedPersistence {
	return &gatedPersistence{t: t, entered: make(chan struct{}, 16), release: make(chan error), ended: make(chan struct{})}
}

func (p *gatedPersistence) Sync() error {
	p.entered <- struct{}{}
	var err error
	select {
	case err = <-p.release:
	case <-p.ended:
		err = errors.New("the test has ended")
	}
	if err != nil {
		p.failing.Store(true)
	}
	return err
}

func (p *gatedPersistence) Failing() bool { return p.failing.Load() }

// awaitSync waits until a Sync has begun.
func (p *gatedPersistence) awaitSync() {
	p.t.Helper()
	select {
	case <-p.entered:
	case <-time.After(testkit.Timeout):
		p.t.Fatal("no sync began")
	}
}

// finish lets the Sync that has begun return err.
func (p *gatedPersistence) finish(err error) {
	p.t.Helper()
	select {
	case p.release <- err:
	case <-time.After(testkit.Timeout):
		p.t.Fatal("no sync to finish")
	}
}

// startDurable starts a durable-mode server with one event loop on p, and
// dials it: the connection is served by the loop.
func startDurable(t *testing.T, p *gatedPersistence) (string, *testkit.Conn) {
	t.Helper()
	if !engine.HaveEventLoops {
		t.Skip("no event loops on this platform")
	}
	return startDurableLoops(t, p, 1)
}

// startDurableLoops is startDurable with loops event loops (Config.EventLoops;
// -1 for a goroutine per connection).
func startDurableLoops(t *testing.T, p *gatedPersistence, loops int) (string, *testkit.Conn) {
	t.Helper()
	at := time.Unix(1_700_000_000, 0)
	addr, srv := startServer(t, Config{Now: func() time.Time { return at }, EventLoops: loops, DurableWrites: true, Persistence: p})
	t.Cleanup(func() { close(p.ended) }) // before the server's Close (cleanups run last first): its loop may wait in Sync
	c := testkit.Dial(t, addr)
	require.Equal(t, engine.HaveEventLoops && loops > 0, onLoop(t, srv, c.DoInline("CLIENT ID")), "a durable plain connection is served by a loop if there is one")
	return addr, c
}

// In durable mode on an event loop, a change's reply is written only once
// the sync that covers it has returned: while the sync is held, nothing
// arrives; a change made while a sync runs waits for the next one.
func TestEventLoopRepliesWaitForTheCommit(t *testing.T) {
	p := newGatedPersistence(t)
	addr, a := startDurable(t, p)
	b := testkit.Dial(t, addr)
	require.Equal(t, "+PONG\r\n", b.DoInline("PING"), "a command that changes nothing syncs nothing")

	a.Write(testkit.Command("CL.THROTTLE", "a", "1", "1", "60"))
	p.awaitSync()
	// The loop waits for the sync: b's change runs after it began, so it
	// is the next sync's.
	b.Write(testkit.Command("CL.THROTTLE", "b", "1", "1", "60"))
	noReply(t, a)
	p.finish(nil)
	require.Equal(t, testkit.Ints(0, 2, 1, -1, 60), a.Read(), "answered once synced")

	p.awaitSync()
	noReply(t, b)
	p.finish(nil)
	require.Equal(t, testkit.Ints(0, 2, 1, -1, 60), b.Read())
}

// noReply asserts that nothing has arrived on c: the server has not written
// to it. Written before a sync it waits on, a reply would be there already.
func noReply(t *testing.T, c *testkit.Conn) {
	t.Helper()
	require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	b, err := c.Reader.Peek(1)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a reply before the sync: %q, %v", b, err)
}

// In durable mode on an event loop, a change whose sync fails is not
// acknowledged: its connection is closed without the reply. From then on
// changes answer MISCONF, and what changes nothing is answered, as on a
// connection with its own goroutine.
func TestEventLoopFailingDiskGivesMisconf(t *testing.T) {
	p := newGatedPersistence(t)
	addr, c := startDurable(t, p)
	c.Write(testkit.Command("CL.THROTTLE", "k", "0", "1", "60"))
	p.awaitSync()
	p.finish(nil)
	require.Equal(t, testkit.Ints(0, 1, 0, -1, 60), c.Read())

	c.Write(testkit.Command("CL.THROTTLE", "lost", "0", "1", "60"))
	p.awaitSync()
	p.finish(errors.New("disk on fire"))
	c.ExpectClosed()

	c = testkit.Dial(t, addr)
	require.Equal(t, errReply(errMisconf), c.Do("CL.THROTTLE", "new", "0", "1", "60"))
	require.Equal(t, testkit.Ints(1, 1, 0, 60, 60), c.Do("CL.THROTTLE", "k", "0", "1", "60"), "a limited decision changes nothing")
	require.Equal(t, testkit.Ints(0, 1, 1, -1, 0), c.Do("CL.THROTTLE", "new", "0", "1", "60", "0"), "a peek changes nothing")
}

// In durable mode, QUIT after a change in the same pipeline sends the
// change's reply only once it is synced, served by a loop or by a goroutine.
func TestDurableQuitAfterAChangeWaitsForTheSync(t *testing.T) {
	for _, loops := range []int{1, -1} {
		t.Run(fmt.Sprintf("event loops %d", loops), func(t *testing.T) {
			p := newGatedPersistence(t)
			_, c := startDurableLoops(t, p, loops)
			c.Write("CL.THROTTLE q 0 1 60\r\nQUIT\r\n")
			p.awaitSync()
			noReply(t, c)
			p.finish(nil)
			require.Equal(t, testkit.Ints(0, 1, 0, -1, 60), c.Read())
			require.Equal(t, testkit.OK, c.Read())
			c.ExpectClosed()
		})
	}
}
