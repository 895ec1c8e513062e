package engine

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/resp"
)

// Conn is one client connection. Its loop (serveConn, or an event loop's
// serve) reads commands with a resp.Reader, which parses them in its read
// buffer and hands their arguments on as slices of it: serving a command
// copies nothing and allocates nothing. The arguments are valid until the
// command returns, so a handler that keeps one must copy it.
//
// Why not redcon's own Server loop: its reader allocates three times for
// every command (a copy of the raw command, the argument slice, the growing
// command list), which was a quarter of the server's CPU under a pipelined
// CL.THROTTLE load, plus the garbage collection it caused; and it trusts its
// input (docs/security.md, "Why redcell reads RESP itself").
//
// Replies are appended with redcon's encoders to out and written once per
// batch of commands read together, as redcon does.
//
// Its methods are for the connection's own goroutine (or event loop), the
// Session's commands, unless they say otherwise: Kill, Killed and Done are
// safe from any goroutine.
type Conn struct {
	e    *Engine
	nc   net.Conn // the socket, TLS or not
	rd   *resp.Reader
	addr string
	s    Session // set by accept; nil on a connection refused at accept

	// need is what the batch being run needs (Need).
	need Need
	// authed: the reader's limits are the authenticated client's
	// (SetAuthenticated). idleExempt: the idle timeout does not apply
	// (SetIdleExempt).
	authed, idleExempt bool

	// idle is Limits.IdleTimeout (0: none); readAt and cmdStart are kept
	// under it only (Conn.read).
	idle             time.Duration
	readAt, cmdStart int64
	handshook        bool // the TLS handshake, if any, has run (Conn.handshake)
	// refusal, set at accept, is the reply the connection's goroutine
	// sends before closing it, instead of serving it.
	refusal string

	out       []byte // replies not yet written
	maxOutput int64  // Limits.MaxOutput; <= 0: none
	// total is the engine's count of reply bytes waiting beyond each
	// client's allowance (Limits.MaxOutputTotal); counted is this
	// connection's share of it.
	total   *outputTotal
	counted int64
	// roomLeft is the reply size room accepts at a glance (setRoomLeft).
	roomLeft int64
	closed   bool
	// outbox, once started (StartOutbox), takes the replies instead of
	// the connection: its writer sends them in order with what others push.
	outbox *Outbox
	// muted: replies are discarded (Mute).
	muted bool

	// An event loop's connection (eventLoop) has its socket as fd,
	// outside Go's netpoller, and no nc; loop is its loop. modeMu guards
	// the two against Abort while the connection leaves its loop.
	// pending is a command to run first once it has left.
	modeMu  sync.Mutex
	loop    *eventLoop
	fd      int
	pending [][]byte
	// release, when set, is called once the connection has ended (the
	// listener's tracking).
	release func()

	// killed is set, once, by Kill; done is closed with it, which wakes
	// whatever the connection's command waits on.
	killed atomic.Bool
	done   chan struct{}
}

// errLeaveLoop is runBatch's answer when its connection must leave its
// event loop for a goroutine of its own (eventLoop).
var errLeaveLoop = errors.New("the connection leaves its event loop")

// outKeepCap is the largest reply buffer kept between batches.
const outKeepCap = 64 << 10

func newConn(e *Engine, nc net.Conn) *Conn {
	lim := &e.limits
	c := &Conn{
		e:         e,
		nc:        nc,
		fd:        -1,
		addr:      nc.RemoteAddr().String(),
		idle:      lim.IdleTimeout,
		maxOutput: lim.MaxOutput,
		total:     &e.outputs,
		done:      make(chan struct{}),
	}
	// The reader reads through c (Read): from nc, or from the socket
	// itself while an event loop serves c.
	c.rd = resp.NewReader(c, resp.Limits{
		MaxBulkLen:   lim.MaxBulkLen,
		MaxArgs:      lim.MaxArgs,
		MaxInlineLen: lim.MaxInlineLen,
		MaxQueryLen:  lim.MaxQueryLen,
	})
	c.setRoomLeft()
	return c
}

// Read reads input for c's resp.Reader.
func (c *Conn) Read(p []byte) (int, error) {
	if c.loop != nil {
		return rawRead(c.fd, p)
	}
	return c.nc.Read(p)
}

// Need asks the engine for what the command being run needs (Need's
// constants), for the rest of its batch. It is the one way a command asks
// the engine for something.
func (c *Conn) Need(n Need) { c.need |= n }

// Needs is what the batch being run has asked for (Need).
func (c *Conn) Needs() Need { return c.need }

// OnLoop reports whether an event loop serves the connection: a command
// that may block must ask NeedGoroutine first. It is safe from any
// goroutine.
func (c *Conn) OnLoop() bool {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	return c.loop != nil
}

// SetAuthenticated says whether the client has authenticated: until it has,
// Redis 7's unauthenticated limits apply to what it may send (at most 10
// arguments of at most 16 KiB).
func (c *Conn) SetAuthenticated(authed bool) { c.authed = authed }

// SetIdleExempt says whether the idle timeout spares the connection: a
// monitor's or a subscriber's, as Redis's, which only read.
func (c *Conn) SetIdleExempt(exempt bool) { c.idleExempt = exempt }

// PeekKeys returns the keys of the next two commands waiting in the read
// buffer, nil where there is none (resp.Reader.PeekKeys), so that the
// memory they will read can be readied while this one runs.
func (c *Conn) PeekKeys() (next, after []byte) { return c.rd.PeekKeys() }

// serveConn runs c's commands until it closes or fails, then reports it
// closed. Each round reads what the client sent, runs every whole command
// in it, waits for durability if one of them asked (NeedSync), and writes
// all their replies at once (runBatch). A panic is contained to c
// (contained).
func (e *Engine) serveConn(c *Conn) {
	err := e.contained(c, (*Engine).runConn)
	_ = c.nc.Close()
	if err == io.EOF {
		err = nil
	}
	c.ended(err)
}

// ended reports c closed, after its goroutine or its loop has closed it.
func (c *Conn) ended(err error) {
	c.uncount()
	if c.s != nil {
		c.s.Closed(err)
	}
	c.endOutbox()
	if c.release != nil {
		c.release()
	}
}

func (e *Engine) runConn(c *Conn) error {
	if c.refusal != "" {
		return c.refuse(c.refusal, errRejected)
	}
	// It may have left its event loop: the session readies what the
	// goroutine it now has does (an outbox, an answer that waits).
	c.s.Resume()
	// What is buffered is run first: nothing for a new connection, and
	// for one that left its event loop mid-batch, the rest of the batch.
	if err := e.runBatch(c); err != nil || c.closed {
		return err
	}
	for {
		if err := c.read(); err != nil {
			return err
		}
		if err := e.runBatch(c); err != nil || c.closed {
			return err
		}
	}
}

// runBatch runs every whole command read so far and sends their replies.
// The clock is read once at the start and then once as each command ends,
// and that reading is the next command's now: on the real clock a command
// costs one clock read. An injected clock is read for every command.
//
// Input the reader refuses ends the batch: the commands before it run and
// are answered, then the refusal is sent and the connection closed, as
// Redis answers what it read before a protocol error.
func (e *Engine) runBatch(c *Conn) error {
	now := e.cfg.Now()
	var refused error
	args := c.pending
	c.pending = nil
	for !c.closed {
		if args == nil {
			var err error
			if args, err = c.rd.Next(c.authed); err != nil {
				refused = err
				break
			}
			if args == nil {
				break
			}
		}
		if !e.cfg.Timed {
			now = e.cfg.Now()
		}
		now = c.s.Run(args, now)
		if c.need&^NeedSync != 0 { // one test a command for what is rare
			if c.need&NeedClose != 0 {
				break // the rest of the batch is not run
			}
			leave := c.loop != nil
			if leave {
				// The command needs a goroutine of its own: it runs
				// there, and the rest of the batch after it; or it
				// ran, and the rest of the batch runs there
				// (NeedGoroutineAfter).
				if c.need&NeedGoroutine == 0 {
					args = nil
				}
				c.pending = args
			}
			c.need &^= NeedGoroutine | NeedGoroutineAfter // off a loop there is nothing to leave
			if leave {
				return errLeaveLoop
			}
		}
		args = nil
	}
	if c.closed {
		return nil
	}
	if c.killed.Load() {
		// Kill, perhaps of itself: no reply goes out, as when the socket
		// closes under a connection with its own goroutine.
		c.Drop()
		return nil
	}
	if c.need&NeedClose != 0 {
		return c.Close() // its replies so far, then the end
	}
	if refused != nil && c.loop != nil {
		return errLeaveLoop // the refusal is sent from a goroutine (refuse)
	}
	if c.loop != nil {
		// Written once the loop has run every connection epoll woke it
		// for, as Redis writes replies before it sleeps again: the
		// clients' wake-ups come together too. In durable mode the loop
		// first syncs once for every change of the round (eventLoop.commit).
		c.loop.queueFlush(c)
		return nil
	}
	if c.need&NeedSync != 0 {
		e.syncBeforeReply(c)
		if c.closed {
			return nil
		}
	}
	if err := c.Flush(); err != nil || refused == nil {
		return err
	}
	return c.refuseInput(refused)
}

// syncBeforeReply runs in durable mode after the last command of a batch
// that changed state, before the batch's replies are sent (runBatch, on a
// connection with its own goroutine; an event loop syncs once a round
// instead, eventLoop.commit): it waits for the group commit that covers the
// changes. If that fails the replies are dropped and the connection closed,
// so nothing unpersisted is acknowledged.
func (e *Engine) syncBeforeReply(c *Conn) {
	c.need &^= NeedSync
	if err := e.cfg.Sync(); err != nil {
		e.logger.Error("durable write failed; closing the connection unacknowledged", "err", err)
		c.need |= NeedClose
		c.Drop()
	}
}

// Flush writes the queued replies, or hands them to the outbox, which also
// lets through what it held aside while they were queued (Outbox.Hold).
func (c *Conn) Flush() error {
	var err error
	switch {
	case c.muted:
		c.out = c.out[:0]
		return nil
	case c.outbox != nil:
		c.outbox.pushReplies(c.out)
		c.s.Pushed() // what waited for these replies follows them
	case len(c.out) == 0:
		return nil
	default:
		var n int
		n, err = c.write(c.out)
		if err == errLeaveLoop {
			// The socket did not take it all: the rest is written from
			// the goroutine the connection leaves for.
			c.out = c.out[:copy(c.out, c.out[n:])]
			return err
		}
	}
	c.uncount()
	if cap(c.out) > outKeepCap {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err
}

// Drop discards the queued replies and closes the connection: nothing of
// this batch is sent.
func (c *Conn) Drop() {
	c.out = nil
	c.uncount()
	c.closed = true
	if c.loop == nil { // a loop closes its own sockets
		_ = c.nc.Close()
	}
}

// Close sends the queued replies and closes the connection; the rest of the
// batch is not run.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.need |= NeedClose
	if c.need&NeedSync != 0 {
		// QUIT, or CLIENT KILL of itself, after a change in the same
		// batch (durable mode): the replies go out now, not after the
		// batch, so the change is synced now.
		c.e.syncBeforeReply(c)
		if c.closed {
			return nil
		}
	}
	_ = c.Flush()
	c.closed = true
	if c.outbox != nil {
		// With an outbox, the connection's replies are written by it: let
		// it send them (QUIT's +OK) before the connection closes under it.
		c.outbox.stop()
		c.outbox.wait()
	}
	if c.loop != nil {
		return nil // its loop closes the socket once the batch ends
	}
	return c.nc.Close()
}

// Abort closes the connection from any goroutine: the command it is
// running, if any, ends without its replies.
func (c *Conn) Abort() {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	switch {
	case c.loop != nil:
		c.loop.kill(c)
	case c.nc != nil:
		_ = c.nc.Close() // net.Conn's Close is safe beside its Read and Write
	}
}

// Kill ends the connection from any goroutine, as CLIENT KILL does: it
// closes the socket, so the connection's loop ends after the command it is
// running, if any, without its replies; and what the command waits on
// through Done is woken. It reports false if the connection was killed
// already.
func (c *Conn) Kill() bool {
	if !c.killed.CompareAndSwap(false, true) {
		return false
	}
	close(c.done)
	c.Abort()
	return true
}

// Killed reports whether Kill was called, from any goroutine.
func (c *Conn) Killed() bool { return c.killed.Load() }

// Done is closed by Kill: a command that waits (a pause, a late answer)
// waits on it too.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Mute discards every later reply: the connection is a replica's, whose
// writing package replication took over after PSYNC.
func (c *Conn) Mute() { c.muted = true }

// RemoteAddr is the client's address, as host:port.
func (c *Conn) RemoteAddr() string { return c.addr }

// NetConn is the connection's socket, TLS or not; nil while an event loop
// serves it, as the loop holds the socket itself.
func (c *Conn) NetConn() net.Conn { return c.nc }

// LocalAddr is the address the client connected to.
func (c *Conn) LocalAddr() string {
	if c.nc != nil {
		return c.nc.LocalAddr().String()
	}
	return ""
}
