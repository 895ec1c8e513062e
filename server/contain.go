package server

import (
	"errors"
	"time"

	"github.com/redcell/redcell/internal/contain"
)

// A panic while serving one connection is contained to it: the connection
// is answered an error and closed, the panic logged and counted
// (contain.Record), and every other connection, and the server, serve on.
// The two ways a connection is served each recover once around their work:
// a connection with a goroutine around its whole loop (serveConn), an event
// loop's connection around each batch (eventLoop.serve), so the hot path
// pays nothing per command. Locks a command holds when it panics are
// released by the deferred unlocks of the code that took them: the store's
// shard locks (storage), a transaction's (cmdExec).

// errPanicked is how a connection closed after a panic is logged.
var errPanicked = errors.New("closed after a panic while serving its command")

// contained runs serve (runConn, or runBatch) on c and contains a panic in
// it to c (containPanic), returning errPanicked; c is then closed.
func (s *Server) contained(c *conn, serve func(*Server, *conn) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.containPanic(c, v)
			err = errPanicked
		}
	}()
	return serve(s, c)
}

// containPanic records a panic recovered while c was being served, with the
// name of the command it ran (never its arguments: AUTH's hold a password),
// then answers c an error in place of the replies of its batch, which may
// end in half a reply, and closes it. Nothing of the batch is acknowledged:
// in durable mode its changes are made durable by the next sync, as any
// change is, but no reply says so.
func (s *Server) containPanic(c *conn, v any) {
	name := "none"
	if cl := c.cl; cl != nil {
		if cmd := cl.lastCmd.Load(); cmd != nil {
			name = cmd.name
		}
		if cl.tx.running != nil {
			name = cl.tx.running.name // inside EXEC
		}
	}
	contain.Record(s.cfg.Logger, "resp", name, v)
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
	if cl := c.cl; cl != nil {
		cl.batch.unsynced, cl.batch.closing = false, true
		cl.writeError(errInternal(name))
	}
	if c.nc != nil {
		// A client that reads nothing cannot hold the goroutine.
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	}
	_ = c.Close()
}
