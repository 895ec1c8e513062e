package server

import (
	"io"
	"sync"
)

// An outbox is how a connection is written once other goroutines write to
// it too: a monitor's lines (Server.feedMonitors), a subscriber's messages
// (pubsub), whatever else streams to a client. What is pushed queues in
// memory and a goroutine of the outbox's own writes it to the connection, in
// the order it was pushed, so that whoever pushes never waits on a client
// that reads slowly. Once a connection has an outbox its own replies go
// through it too (conn.flush), so that they and what others push reach the
// client in one order, written by one goroutine. (Not replication's feed,
// storage.Store.TakeFeed: that is a log of changed keys, this a writer.)
//
// An outbox holds at most its backlog unwritten: the push that would pass it
// disconnects the client instead, as Redis's client-output-buffer-limit
// does for pubsub and replica clients. A client's replies grow only with
// what it asks for, but an outbox grows with what others do, so without a
// bound one client that stopped reading would make the server's memory grow
// at the rate others push. The writer holds one taken batch besides, so an
// outbox costs at most twice its backlog.
//
// Use, for anything that streams to a connection:
//
//	o := c.startOutbox() // on the client's own goroutine, in its command's handler
//	o.hold()             // if others will push before the command's reply is sent
//	o.push(b)            // from any goroutine, as often as there is something to send
//	o.stop()             // from any goroutine; the connection's end stops it too
//
// A command that starts an outbox must run off the event loops, as MONITOR,
// an admin command, does: the outbox writes the socket through Go's
// netpoller.
type outbox struct {
	c     *client   // whose connection it writes: disconnected when the outbox fails
	w     io.Writer // the connection, under the idle timeout (idleWriter)
	limit int       // the most bytes that may wait unwritten

	mu    sync.Mutex
	queue []byte // pushed and not yet taken by the writer
	// aside is what others pushed while held: it goes after the
	// connection's next replies (hold).
	aside   []byte
	held    bool
	stopped bool // nothing more is queued; the writer ends once queue is written
	wake    chan struct{}
	done    chan struct{} // closed when the writer has ended
}

// outboxBacklog is the most an outbox may leave unwritten before its client is
// disconnected: Limits.MaxOutput, the bound on any client's unsent replies
// (32 MiB by default, some 200 000 MONITOR lines of a CL.THROTTLE). With no
// output limit configured outboxes still get DefaultMaxOutput.
func (s *Server) outboxBacklog() int {
	if s.limits.MaxOutput > 0 {
		return int(s.limits.MaxOutput)
	}
	return DefaultMaxOutput
}

// newOutbox starts an outbox writing to w for c, and its writer.
func newOutbox(c *client, w io.Writer, limit int) *outbox {
	o := &outbox{c: c, w: w, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

// startOutbox returns the client's outbox, starting it on first use: the
// replies queued so far are its first bytes, and every later batch of
// replies is pushed to it. Its backlog is Server.outboxBacklog. It must be
// called by the client's own goroutine, off an event loop; it returns nil
// for a connection that cannot have one (one without a network, in tests).
func (c *client) startOutbox() *outbox {
	if c.outbox == nil {
		c.outbox = c.conn.startOutbox(c.srv.outboxBacklog())
		if c.outbox != nil {
			c.tracking.outbox.Store(c.outbox) // for invalidations (tracking)
		}
	}
	return c.outbox
}

// startOutbox makes an outbox the connection's writer (connection.startOutbox).
func (c *conn) startOutbox(limit int) *outbox {
	if c.outbox == nil && c.nc != nil {
		c.outbox = newOutbox(c.cl, idleWriter{c.nc, c.idle}, limit)
		_ = c.flush() // the replies so far go first; a push does not fail
	}
	return c.outbox
}

// push queues a copy of b to be written, from any goroutine. It reports
// false, queueing nothing, once the outbox has stopped, or if b would put it
// beyond its backlog: then the client is disconnected.
func (o *outbox) push(b []byte) bool { return o.add(b, false) }

// pushReplies is push for the connection's own replies (conn.flush), on the
// client's goroutine: what others pushed while the outbox was held follows
// them.
func (o *outbox) pushReplies(b []byte) bool { return o.add(b, true) }

// hold keeps what others push from now on aside until the connection's
// next replies are pushed; it is called on the client's goroutine. A client
// that starts to be sent what others push (MONITOR, SUBSCRIBE) does so with
// its command's reply still among its unsent replies (and in a pipeline or
// inside EXEC, others after it): held, nothing pushed can reach it before
// that reply, as in Redis, where both go to one buffer.
func (o *outbox) hold() {
	o.mu.Lock()
	o.held = true
	o.mu.Unlock()
}

func (o *outbox) add(b []byte, replies bool) bool {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return false
	}
	if len(o.queue)+len(o.aside)+len(b) > o.limit {
		o.stopped = true
		o.queue, o.aside = nil, nil
		o.mu.Unlock()
		o.c.fellBehind(o)
		o.wakeWriter() // to end
		return false
	}
	switch {
	case replies:
		o.queue = append(o.queue, b...)
		o.queue = append(o.queue, o.aside...)
		o.aside, o.held = nil, false
	case o.held:
		o.aside = append(o.aside, b...)
		o.mu.Unlock()
		return true
	default:
		o.queue = append(o.queue, b...)
	}
	empty := len(o.queue) == 0
	o.mu.Unlock()
	if !empty {
		o.wakeWriter()
	}
	return true
}

// stop ends the outbox, from any goroutine: the writer writes what is queued,
// then ends (wait). What was held aside is dropped.
func (o *outbox) stop() {
	o.mu.Lock()
	o.stopped = true
	o.aside = nil
	o.mu.Unlock()
	o.wakeWriter()
}

// wait returns once the writer has ended.
func (o *outbox) wait() { <-o.done }

func (o *outbox) wakeWriter() {
	select {
	case o.wake <- struct{}{}:
	default: // the writer has been woken already
	}
}

// run writes the queue to the connection as it fills, until the outbox stops
// or a write fails; a failed write disconnects the client.
func (o *outbox) run() {
	defer close(o.done)
	var batch []byte
	for range o.wake {
		o.mu.Lock()
		batch, o.queue = o.queue, batch[:0]
		stopped := o.stopped
		o.mu.Unlock()
		if len(batch) > 0 {
			if _, err := o.w.Write(batch); err != nil {
				o.mu.Lock()
				o.stopped = true
				o.queue, o.aside = nil, nil
				o.mu.Unlock()
				o.c.kill()
				return
			}
		}
		if stopped {
			return
		}
		if cap(batch) > 64<<10 {
			batch = nil // a burst's buffer is not kept
		}
	}
}

// fellBehind disconnects a client whose outbox o would have held more than
// its backlog unwritten.
func (c *client) fellBehind(o *outbox) {
	log := c.srv.cfg.Logger
	if c.monitor.on.Load() {
		log.Warn("monitor closed for falling behind: its unread lines passed the output buffer limit",
			"addr", c.ident.addr, "id", c.id, "limit", o.limit)
		c.srv.removeMonitor(o)
	} else {
		log.Warn("client closed for falling behind: what its feed holds unread passed the output buffer limit",
			"addr", c.ident.addr, "id", c.id, "limit", o.limit)
	}
	c.kill()
}

// endOutbox stops the client's outbox, if any, once its connection has closed,
// and waits for its writer, whose writes fail on the closed connection.
func (c *client) endOutbox() {
	if o := c.outbox; o != nil {
		o.stop()
		o.wait()
	}
}
