package server

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/redcell/redcell/resp"
)

// connection is what the server needs of a client connection: the reply
// writers, its sending and closing, where it comes from, and the client
// served on it. conn is the real one; tests use fakeConn, which has no
// network.
type connection interface {
	WriteError(msg string)
	WriteString(s string)
	WriteBulk(b []byte)
	WriteBulkString(s string)
	WriteInt64(n int64)
	WriteArray(n int)
	WriteNull()
	WriteRaw(b []byte)
	// WriteInts writes an array of five integers, a decision's reply, as
	// WriteArray(5) then five WriteInt64 would, in one step.
	WriteInts(v [5]int64)
	// DeferArray marks where an array header goes whose length is known
	// only once its elements are written; SetDeferredArray writes it there.
	DeferArray() (mark int)
	SetDeferredArray(mark, n int)
	// Close sends the replies queued so far and closes the connection.
	Close() error
	// Abort closes the connection from any goroutine (CLIENT KILL): the
	// command it is running, if any, ends without its replies.
	Abort()
	RemoteAddr() string
	NetConn() net.Conn // nil without a network (tests)

	// client is the client accept attached with setClient; nil before.
	client() *client
	setClient(cl *client)
	// flush sends the replies queued so far, now.
	flush() error
	// drop discards the queued replies and closes the connection: nothing
	// of the batch is sent.
	drop()
	// refuseLater arranges for the connection's own goroutine to answer
	// reply as an error and close the connection, before it reads anything
	// (reject). It reports false if the connection has no such goroutine:
	// the caller closes it.
	refuseLater(reply string) bool
	// startOutbox hands the connection's writing over to an outbox, or
	// returns the one it has: the replies queued so far are the outbox's
	// first bytes, and every later batch goes to it in turn. limit is the
	// outbox's backlog. Only a connection with a network (NetConn) can
	// have one: others return nil.
	startOutbox(limit int) *outbox
	// mute discards every later reply: the connection is a replica's,
	// whose writing package replication took over after PSYNC.
	mute()
}

// conn is one client connection. Its loop (serveConn) reads commands with a
// resp.Reader, which parses them in its read buffer and hands their
// arguments on as slices of it: serving a command copies nothing and
// allocates nothing. The arguments are valid until the command returns, so
// a handler that keeps one must copy it (every handler converts to a string
// or appends to a reply).
//
// Why not redcon's own Server loop: its reader allocates three times for
// every command (a copy of the raw command, the argument slice, the growing
// command list), which was a quarter of the server's CPU under a pipelined
// CL.THROTTLE load, plus the garbage collection it caused; and it trusts its
// input (README, "Why redcell reads RESP itself").
//
// Replies are appended with redcon's encoders to out and written once per
// batch of commands read together, as redcon does.
type conn struct {
	srv  *Server
	nc   net.Conn // the socket, TLS or not
	rd   *resp.Reader
	addr string
	cl   *client // set by accept; nil on a connection refused at accept

	// idle is Limits.IdleTimeout (0: none); readAt and cmdStart are kept
	// under it only (conn.read).
	idle             time.Duration
	readAt, cmdStart int64
	handshook        bool // the TLS handshake, if any, has run (conn.handshake)
	// refusal, set by reject, is the reply the connection's goroutine sends
	// before closing it, instead of serving it.
	refusal string

	out       []byte // replies not yet written
	maxOutput int64  // Limits.MaxOutput; <= 0: none
	// total is the server's count of reply bytes waiting beyond each
	// client's allowance (Limits.MaxOutputTotal); counted is this
	// connection's share of it.
	total   *outputTotal
	counted int64
	// roomLeft is the reply size room accepts at a glance (setRoomLeft).
	roomLeft int64
	closed   bool
	// outbox, once started (client.startOutbox), takes the replies instead of
	// the connection: its writer sends them in order with what others push.
	outbox *outbox
	// muted: replies are discarded (mute).
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
}

var _ connection = (*conn)(nil)

// errLeaveLoop is runBatch's answer when its connection must leave its
// event loop for a goroutine of its own (eventLoop).
var errLeaveLoop = errors.New("the connection leaves its event loop")

// outKeepCap is the largest reply buffer kept between batches.
const outKeepCap = 64 << 10

func newConn(s *Server, nc net.Conn) *conn {
	lim := &s.limits
	c := &conn{
		srv:       s,
		nc:        nc,
		fd:        -1,
		addr:      nc.RemoteAddr().String(),
		idle:      lim.IdleTimeout,
		maxOutput: lim.MaxOutput,
		total:     &s.outputTotal,
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
func (c *conn) Read(p []byte) (int, error) {
	if c.loop != nil {
		return rawRead(c.fd, p)
	}
	return c.nc.Read(p)
}

// serveConn runs c's commands until it closes or fails, then reports it
// closed. Each round reads what the client sent, runs every whole command
// in it, waits for durability if one of them changed state in durable mode,
// and writes all their replies at once (runBatch).
func (s *Server) serveConn(c *conn) {
	err := s.contained(c, (*Server).runConn)
	_ = c.nc.Close()
	if err == io.EOF {
		err = nil
	}
	c.ended(err)
}

// ended reports c closed, after its goroutine or its loop has closed it.
func (c *conn) ended(err error) {
	c.uncount()
	c.srv.closed(c, err)
	if c.release != nil {
		c.release()
	}
}

func (s *Server) runConn(c *conn) error {
	if c.refusal != "" {
		return c.refuse(c.refusal, errRejected)
	}
	if cl := c.cl; cl != nil && cl.tracking.on {
		// It left its event loop for tracking (CLIENT TRACKING), whose
		// reply its outbox sends first.
		cl.startTrackingOutbox()
	}
	if cl := c.cl; cl != nil {
		cl.waitLate() // it left its event loop to answer a wrong password late
	}
	// What is buffered is run first: nothing for a new connection, and
	// for one that left its event loop mid-batch, the rest of the batch.
	if err := s.runBatch(c); err != nil || c.closed {
		return err
	}
	for {
		if err := c.read(); err != nil {
			return err
		}
		if err := s.runBatch(c); err != nil || c.closed {
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
func (s *Server) runBatch(c *conn) error {
	cl := c.cl // set by accept; a rejected conn is refused before it reads
	now := s.now()
	var refused error
	args := c.pending
	c.pending = nil
	for !c.closed {
		if args == nil {
			var err error
			if args, err = c.rd.Next(cl.session.authed); err != nil {
				refused = err
				break
			}
			if args == nil {
				break
			}
		}
		if !s.timed {
			now = s.now()
		}
		if last := cl.lastCmd.Load(); last != nil && last.prefetchKey && !cl.gated && s.store.Prefetching() {
			s.prefetchAhead(c.rd)
		}
		now = s.dispatch(cl, args, now)
		if cl.batch.leaveLoop {
			// The command needs a goroutine of its own (dispatch): it
			// runs there, and the rest of the batch after it; or it ran,
			// and the rest of the batch runs there (leaveAfter).
			cl.batch.leaveLoop = false
			if cl.batch.leaveAfter {
				cl.batch.leaveAfter, args = false, nil
			}
			c.pending = args
			return errLeaveLoop
		}
		args = nil
	}
	if c.closed {
		return nil
	}
	if cl.killed.Load() {
		// CLIENT KILL, perhaps of itself: no reply goes out, as when the
		// socket closes under a connection with its own goroutine.
		c.drop()
		return nil
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
	if cl.batch.unsynced {
		s.syncBeforeReply(cl)
		if c.closed {
			return nil
		}
	}
	if err := c.flush(); err != nil || refused == nil {
		return err
	}
	return c.refuseInput(refused)
}

// flush writes the queued replies, or hands them to the outbox, which also
// lets through what it held aside while they were queued (outbox.hold).
func (c *conn) flush() error {
	var err error
	switch {
	case c.muted:
		c.out = c.out[:0]
		return nil
	case c.outbox != nil:
		c.outbox.pushReplies(c.out)
		if c.cl.tracking.inBatch {
			c.cl.afterReplies() // what waited for these replies follows them
		}
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

// drop discards the queued replies and closes the connection: nothing of
// this batch is sent.
func (c *conn) drop() {
	c.out = nil
	c.uncount()
	c.closed = true
	if c.loop == nil { // a loop closes its own sockets
		_ = c.nc.Close()
	}
}

// Close sends the queued replies and closes the connection; the rest of the
// batch is not run.
func (c *conn) Close() error {
	if c.closed {
		return nil
	}
	if c.cl != nil && c.cl.batch.unsynced {
		// QUIT, or CLIENT KILL of itself, after a change in the same
		// batch (durable mode): the replies go out now, not after the
		// batch, so the change is synced now.
		c.srv.syncBeforeReply(c.cl)
		if c.closed {
			return nil
		}
	}
	_ = c.flush()
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

// Abort closes the connection from any goroutine.
func (c *conn) Abort() {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	switch {
	case c.loop != nil:
		c.loop.kill(c)
	case c.nc != nil:
		_ = c.nc.Close() // net.Conn's Close is safe beside its Read and Write
	}
}

func (c *conn) mute()                { c.muted = true }
func (c *conn) RemoteAddr() string   { return c.addr }
func (c *conn) NetConn() net.Conn    { return c.nc }
func (c *conn) client() *client      { return c.cl }
func (c *conn) setClient(cl *client) { c.cl = cl }
