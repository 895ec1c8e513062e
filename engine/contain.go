package engine

import (
	"errors"
	"time"

	"github.com/redcell/redcell/internal/contain"
)

// A panic while serving one connection is contained to it: the session
// records it and writes the error its client is answered
// (Session.Recovered), the engine sends that in place of the batch's
// replies and closes the connection, and every other connection serves on.
// The two ways a connection is served each recover once around their work:
// a connection with a goroutine around its whole loop (serveConn), an event
// loop's connection around each batch (eventLoop.serve), so the hot path
// pays nothing per command. Locks a command holds when it panics are
// released by the deferred unlocks of the code that took them.

// errPanicked is how a connection closed after a panic is logged.
var errPanicked = errors.New("closed after a panic while serving its command")

// contained runs serve (runConn, or runBatch) on c and contains a panic in
// it to c (containPanic), returning errPanicked; c is then closed.
func (e *Engine) contained(c *Conn, serve func(*Engine, *Conn) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			e.containPanic(c, v)
			err = errPanicked
		}
	}()
	return serve(e, c)
}

// containPanic answers c the session's error in place of its batch's
// replies, which may end in half a reply, and closes it. Nothing of the
// batch is acknowledged: in durable mode its changes are made durable by the
// next sync, as any change is, but no reply says so.
func (e *Engine) containPanic(c *Conn, v any) {
	if c.s == nil {
		contain.Record(e.logger, "resp", "none", v) // the engine's own, before any command
	}
	if c.closed {
		return
	}
	defer func() {
		// The error could not be sent (the panic left the connection's
		// writer broken): the connection closes all the same.
		if recover() != nil {
			c.closed = true
			if c.nc != nil {
				_ = c.nc.Close()
			}
		}
	}()
	c.out = c.out[:0]
	c.need = c.need&^NeedSync | NeedClose
	if c.s != nil {
		c.s.Recovered(v)
	}
	if c.nc != nil {
		// A client that reads nothing cannot hold the goroutine.
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	}
	_ = c.Close()
}
