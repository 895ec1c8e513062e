package server

import (
	"github.com/redcell/redcell/internal/contain"
)

// The client is its connection's engine.Session: Run (dispatch.go) runs its
// commands; the engine tells it the rest of its connection's life here.

// Resume readies the goroutine the connection now has, having left its
// event loop: a tracking client's outbox starts, an answer owed late waits.
func (c *client) Resume() {
	if c.tracking.on {
		c.startTrackingOutbox()
	}
	c.waitLate()
}

// Pushed is told once the batch's replies went to the client's outbox: what
// tracking held for them follows (afterReplies).
func (c *client) Pushed() {
	if c.tracking.inBatch {
		c.afterReplies()
	}
}

// Recovered records a panic recovered while the client's command ran, with
// the command's name (never its arguments: AUTH's hold a password), and
// answers the error the engine sends in place of the batch's replies before
// it closes the connection. Inside EXEC the queued command that panicked is
// named.
func (c *client) Recovered(v any) {
	name := "none"
	if cmd := c.lastCmd.Load(); cmd != nil {
		name = cmd.name
	}
	if c.tx.running != nil {
		name = c.tx.running.name
	}
	contain.Record(c.srv.cfg.Logger, "resp", name, v)
	c.writeError(errInternal(name))
}

// Closed forgets the client, whose connection has ended.
func (c *client) Closed(err error) { c.srv.closed(c, err) }
