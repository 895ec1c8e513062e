package server

import "github.com/redcell/redcell/engine"

// startOutbox returns the client's outbox, starting it on first use
// (engine.Conn.StartOutbox): the replies queued so far are its first bytes,
// and every later batch of replies is pushed to it. Its backlog is the
// engine's (engine.Limits.OutboxBacklog). It must be called by the client's
// own goroutine, off an event loop; it returns nil for a connection that
// cannot have one (one without a network, in tests).
func (c *client) startOutbox() *engine.Outbox {
	if c.outbox == nil {
		// Published for invalidations (tracking) before the replies so
		// far go out, held so that what is pushed meanwhile follows them:
		// a client told +OK to CLIENT TRACKING (or to a SUBSCRIBE a
		// redirection names) is sent every change after it, after it.
		// Stored after, a change made between the client reading its
		// reply and the store found no outbox, and its invalidation was
		// dropped (TestTrackingModesAsRedis, once under load).
		c.outbox = c.conn.StartOutbox(c.srv.limits.engine().OutboxBacklog(), c.fellBehind,
			func(o *engine.Outbox) {
				o.Hold()
				c.tracking.outbox.Store(o)
			})
	}
	return c.outbox
}

// fellBehind is told when a push would have put more than o's backlog
// unwritten: the engine then disconnects the client.
func (c *client) fellBehind(o *engine.Outbox) {
	log := c.srv.cfg.Logger
	if c.monitor.on.Load() {
		log.Warn("monitor closed for falling behind: its unread lines passed the output buffer limit",
			"addr", c.ident.addr, "id", c.id, "limit", o.Limit())
		c.srv.removeMonitor(o)
	} else {
		log.Warn("client closed for falling behind: what its feed holds unread passed the output buffer limit",
			"addr", c.ident.addr, "id", c.id, "limit", o.Limit())
	}
}
