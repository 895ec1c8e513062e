package engine

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
//	o := c.StartOutbox(limit, fellBehind, nil) // on the connection's own goroutine, in its command
//	o.Hold()                              // if others will push before the command's reply is sent
//	o.Push(b)                             // from any goroutine, as often as there is something to send
//	o.Stop()                              // from any goroutine; the connection's end stops it too
//
// A command that starts an outbox must run off the event loops (NeedGoroutine),
// as MONITOR, an admin command, does: the outbox writes the socket through
// Go's netpoller.
type Outbox struct {
	c     *Conn     // whose connection it writes: killed when the outbox fails
	w     io.Writer // the connection, under the idle timeout (idleWriter)
	limit int       // the most bytes that may wait unwritten
	// fellBehind is told when a push would have passed limit, before the
	// connection is killed (StartOutbox).
	fellBehind func(o *Outbox)

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

// StartOutbox makes an outbox the connection's writer, or returns the one
// it has: the replies queued so far are its first bytes, and every later
// batch of replies is pushed to it. limit is its backlog
// (Limits.OutboxBacklog); fellBehind is told, from the goroutine that
// pushed, when a push would have passed it, before the connection is
// killed. published, if not nil, is given the new outbox before the
// replies so far are pushed to it: whoever pushes to the client must find
// the outbox by the time the client has read them (a tracking client's
// invalidations, which its CLIENT TRACKING reply promises from then on).
// It must be called on the connection's own goroutine, off an event loop;
// a connection without a network has no outbox: nil.
func (c *Conn) StartOutbox(limit int, fellBehind, published func(o *Outbox)) *Outbox {
	if c.outbox == nil && c.nc != nil {
		c.outbox = &Outbox{c: c, w: idleWriter{c.nc, c.idle}, limit: limit, fellBehind: fellBehind,
			wake: make(chan struct{}, 1), done: make(chan struct{})}
		go c.outbox.run()
		if published != nil {
			published(c.outbox)
		}
		_ = c.Flush() // the replies so far go first; a push does not fail
	}
	return c.outbox
}

// Limit is the outbox's backlog: the most it holds unwritten.
func (o *Outbox) Limit() int { return o.limit }

// Push queues a copy of b to be written, from any goroutine. It reports
// false, queueing nothing, once the outbox has stopped, or if b would put it
// beyond its backlog: then the client is disconnected.
func (o *Outbox) Push(b []byte) bool { return o.add(b, false) }

// pushReplies is push for the connection's own replies (conn.flush), on the
// client's goroutine: what others pushed while the outbox was held follows
// them.
func (o *Outbox) pushReplies(b []byte) bool { return o.add(b, true) }

// Hold keeps what others push from now on aside until the connection's
// next replies are pushed; it is called on the client's goroutine. A client
// that starts to be sent what others push (MONITOR, SUBSCRIBE) does so with
// its command's reply still among its unsent replies (and in a pipeline or
// inside EXEC, others after it): held, nothing pushed can reach it before
// that reply, as in Redis, where both go to one buffer.
func (o *Outbox) Hold() {
	o.mu.Lock()
	o.held = true
	o.mu.Unlock()
}

func (o *Outbox) add(b []byte, replies bool) bool {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return false
	}
	if len(o.queue)+len(o.aside)+len(b) > o.limit {
		o.stopped = true
		o.queue, o.aside = nil, nil
		o.mu.Unlock()
		if o.fellBehind != nil {
			o.fellBehind(o)
		}
		o.c.Kill()
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

// Stop ends the outbox, from any goroutine: the writer writes what is queued,
// then ends (wait). What was held aside is dropped.
func (o *Outbox) Stop() { o.stop() }

func (o *Outbox) stop() {
	o.mu.Lock()
	o.stopped = true
	o.aside = nil
	o.mu.Unlock()
	o.wakeWriter()
}

// wait returns once the writer has ended.
func (o *Outbox) wait() { <-o.done }

func (o *Outbox) wakeWriter() {
	select {
	case o.wake <- struct{}{}:
	default: // the writer has been woken already
	}
}

// run writes the queue to the connection as it fills, until the outbox stops
// or a write fails; a failed write disconnects the client.
func (o *Outbox) run() {
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
				o.c.Kill()
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

// endOutbox stops the connection's outbox, if any, once it has closed, and
// waits for its writer, whose writes fail on the closed connection.
func (c *Conn) endOutbox() {
	if o := c.outbox; o != nil {
		o.stop()
		o.wait()
	}
}
