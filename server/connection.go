package server

import (
	"net"

	"github.com/redcell/redcell/engine"
)

// connection is what a client needs of its connection: the engine's
// *engine.Conn (its reply writers, the needs a command asks of it, its
// closing and killing, where it comes from); tests use fakeConn, which has
// no network.
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

	// Need asks the engine for what the running command needs
	// (engine.Need); Needs is what the batch has asked; OnLoop reports
	// whether an event loop serves the connection.
	Need(n engine.Need)
	Needs() engine.Need
	OnLoop() bool
	// SetAuthenticated and SetIdleExempt say what the reader's limits and
	// the idle timeout apply to the connection from now on.
	SetAuthenticated(authed bool)
	SetIdleExempt(exempt bool)
	// PeekKeys returns the keys of the next two commands read and not yet
	// run, for prefetching.
	PeekKeys() (next, after []byte)

	// Close sends the replies queued so far and closes the connection;
	// Flush sends them now; Drop discards them and closes it; Mute
	// discards every later reply (a replica's link took the connection).
	Close() error
	Flush() error
	Drop()
	Mute()
	// Kill ends the connection from any goroutine (CLIENT KILL); Killed
	// reports whether it was; Done is closed by it. Abort closes the
	// socket only.
	Kill() bool
	Killed() bool
	Done() <-chan struct{}
	Abort()
	// WatchHangup tells a command waiting off the loops (CL.ACQUIRE's
	// BLOCK) when its client has closed its end (engine.Conn.WatchHangup).
	WatchHangup() (hungUp <-chan struct{}, stop func())
	// StartOutbox makes an outbox the connection's writer (engine.Outbox),
	// given to published before the replies so far go to it; nil for a
	// connection without a network.
	StartOutbox(limit int, fellBehind, published func(o *engine.Outbox)) *engine.Outbox

	RemoteAddr() string
	LocalAddr() string
	NetConn() net.Conn // nil without a network (tests), or on an event loop
}

var _ connection = (*engine.Conn)(nil)
