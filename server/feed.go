package server

import (
	"io"
	"sync"
)

// A feed is how a connection is written once other goroutines write to it
// too: a monitor's lines (monitor.go), and whatever else streams to a
// client. What is pushed queues in memory and a goroutine of the
// feed's own writes it to the connection, in the order it was pushed, so
// that whoever pushes never waits on a client that reads slowly. Once a
// connection has a feed its own replies go through it too (conn.flush), so
// that they and what others push reach the client in one order, written by
// one goroutine.
//
// A feed holds at most its backlog unwritten: the push that would pass it
// disconnects the client instead, as Redis's client-output-buffer-limit
// does for pubsub and replica clients. A client's replies grow only with
// what it asks for, but a feed grows with what others do, so without a
// bound one client that stopped reading would make the server's memory grow
// at the rate others push. The writer holds one taken batch besides, so a
// feed costs at most twice its backlog.
//
// Use, for anything that streams to a connection:
//
//	f := c.startFeed() // on the client's own goroutine, in its command's handler
//	f.hold()           // if others will push before the command's reply is sent
//	f.push(b)          // from any goroutine, as often as there is something to send
//	f.stop()           // from any goroutine; the connection's end stops it too
//
// A command that starts a feed must run off the event loops, as MONITOR,
// an admin command, does: the feed writes the socket through Go's
// netpoller.
type feed struct {
	c     *client   // whose connection it writes: disconnected when the feed fails
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

// feedBacklog is the most a feed may leave unwritten before its client is
// disconnected: Limits.MaxOutput, the bound on any client's unsent replies
// (32 MiB by default, some 200 000 MONITOR lines of a CL.THROTTLE). With no
// output limit configured feeds still get DefaultMaxOutput.
func (s *Server) feedBacklog() int {
	if s.limits.MaxOutput > 0 {
		return int(s.limits.MaxOutput)
	}
	return DefaultMaxOutput
}

// newFeed starts a feed writing to w for c, and its writer.
func newFeed(c *client, w io.Writer, limit int) *feed {
	f := &feed{c: c, w: w, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go f.run()
	return f
}

// startFeed returns the client's feed, starting it on first use: the
// replies queued so far are its first bytes, and every later batch of
// replies is pushed to it. Its backlog is Server.feedBacklog. It must be
// called by the client's own goroutine, off an event loop; it returns nil
// for a connection that cannot be fed (one without a network, in tests).
func (c *client) startFeed() *feed {
	if c.feed == nil {
		c.feed = c.conn.startFeed(c.srv.feedBacklog())
	}
	return c.feed
}

// startFeed makes a feed the connection's writer (connection.startFeed).
func (c *conn) startFeed(limit int) *feed {
	if c.feed == nil && c.nc != nil {
		c.feed = newFeed(c.cl, idleWriter{c.nc, c.idle}, limit)
		_ = c.flush() // the replies so far go first; a push does not fail
	}
	return c.feed
}

// push queues a copy of b to be written, from any goroutine. It reports
// false, queueing nothing, once the feed has stopped, or if b would put it
// beyond its backlog: then the client is disconnected.
func (f *feed) push(b []byte) bool { return f.add(b, false) }

// pushReplies is push for the connection's own replies (conn.flush), on the
// client's goroutine: what others pushed while the feed was held follows
// them.
func (f *feed) pushReplies(b []byte) bool { return f.add(b, true) }

// hold keeps what others push from now on aside until the connection's
// next replies are pushed; it is called on the client's goroutine. A client
// that starts to be sent what others push (MONITOR, SUBSCRIBE) does so with
// its command's reply still among its unsent replies (and in a pipeline or
// inside EXEC, others after it): held, nothing pushed can reach it before
// that reply, as in Redis, where both go to one buffer.
func (f *feed) hold() {
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
}

func (f *feed) add(b []byte, replies bool) bool {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return false
	}
	if len(f.queue)+len(f.aside)+len(b) > f.limit {
		f.stopped = true
		f.queue, f.aside = nil, nil
		f.mu.Unlock()
		f.c.fellBehind(f)
		f.wakeWriter() // to end
		return false
	}
	switch {
	case replies:
		f.queue = append(f.queue, b...)
		f.queue = append(f.queue, f.aside...)
		f.aside, f.held = nil, false
	case f.held:
		f.aside = append(f.aside, b...)
		f.mu.Unlock()
		return true
	default:
		f.queue = append(f.queue, b...)
	}
	empty := len(f.queue) == 0
	f.mu.Unlock()
	if !empty {
		f.wakeWriter()
	}
	return true
}

// stop ends the feed, from any goroutine: the writer writes what is queued,
// then ends (wait). What was held aside is dropped.
func (f *feed) stop() {
	f.mu.Lock()
	f.stopped = true
	f.aside = nil
	f.mu.Unlock()
	f.wakeWriter()
}

// wait returns once the writer has ended.
func (f *feed) wait() { <-f.done }

func (f *feed) wakeWriter() {
	select {
	case f.wake <- struct{}{}:
	default: // the writer has been woken already
	}
}

// run writes the queue to the connection as it fills, until the feed stops
// or a write fails; a failed write disconnects the client.
func (f *feed) run() {
	defer close(f.done)
	var batch []byte
	for range f.wake {
		f.mu.Lock()
		batch, f.queue = f.queue, batch[:0]
		stopped := f.stopped
		f.mu.Unlock()
		if len(batch) > 0 {
			if _, err := f.w.Write(batch); err != nil {
				f.mu.Lock()
				f.stopped = true
				f.queue, f.aside = nil, nil
				f.mu.Unlock()
				f.c.kill()
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

// fellBehind disconnects a client whose feed f would have held more than
// its backlog unwritten.
func (c *client) fellBehind(f *feed) {
	log := c.srv.cfg.Logger
	if c.monitoring.Load() {
		log.Warn("monitor closed for falling behind: its unread lines passed the output buffer limit",
			"addr", c.addr, "id", c.id, "limit", f.limit)
		c.srv.removeMonitor(f)
	} else {
		log.Warn("client closed for falling behind: what its feed holds unread passed the output buffer limit",
			"addr", c.addr, "id", c.id, "limit", f.limit)
	}
	c.kill()
}

// endFeed stops the client's feed, if any, once its connection has closed,
// and waits for its writer, whose writes fail on the closed connection.
func (c *client) endFeed() {
	if f := c.feed; f != nil {
		f.stop()
		f.wait()
	}
}
