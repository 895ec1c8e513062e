// Package engine is redcell's connection engine: it accepts connections,
// reads their RESP commands, hands each to the connection's Session, and
// writes the replies back, as fast as a machine allows and whatever a client
// sends. It knows nothing of commands: package server is its Handler, and a
// server's client is each connection's Session.
//
// # One CL.THROTTLE, from the socket to the reply
//
// A plain TCP connection is served by an event loop (eventLoop), one per two
// CPUs, as Redis serves its clients: epoll says the socket is readable; the
// loop reads what arrived into the connection's resp.Reader (Conn.rd), which
// parses each whole command in its buffer without copying it; runBatch reads
// the clock once and calls Session.Run for each command, with the arguments
// as slices of the read buffer and that clock reading. The server looks the
// command up, admits it, decides it under one shard lock of the store, and
// appends the reply to the connection's output (Conn.WriteInts) and returns
// the clock reading it took when the command ended, the next command's now.
// Once every ready connection of the round has run its batch, the loop writes
// each one's replies with one write(2) (eventLoop.flushAll), after one sync of
// the round's changes in durable mode (eventLoop.commit).
//
// # What a command may ask of the engine
//
// A command asks through its Conn, and only in these ways:
//
//   - Need: what its batch needs (Need's constants): to run on a goroutine of
//     its own because it may block (NeedGoroutine), or the rest of the
//     batch to (NeedGoroutineAfter); its replies to wait for a sync
//     (NeedSync); the connection to close once its replies are sent
//     (NeedClose).
//   - the reply writers (WriteInts and the rest), and StartOutbox for a
//     connection others write to too (a subscriber, a monitor).
//   - SetAuthenticated, SetIdleExempt: what the reader and the idle timeout
//     apply to the connection from now on.
//   - Kill, from any goroutine (CLIENT KILL).
//
// Everything else is the engine's: event loops or goroutines, the read
// buffer and its limits (Limits), output limits, the idle timeout, TLS
// handshakes, and containment: a panic in a Session's Run is recovered on its
// connection alone (Session.Recovered), never the process.
package engine

import (
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"
)

// Handler is what an Engine serves connections for: the server.
type Handler interface {
	// Accept is called for each new connection before it is served. It
	// returns the Session that serves the connection's commands, or a
	// refusal: an error reply's text, which the connection's goroutine
	// sends before it closes the connection (maxclients, protected mode),
	// so that the accept loop never waits on a client.
	Accept(c *Conn) (s Session, refusal string)
}

// Session serves one connection's commands: a server's client. Its methods
// are called on the connection's goroutine or event loop, one at a time.
type Session interface {
	// Run runs one command of the connection's batch at now, the clock
	// reading taken when the command before it ended (or the batch began),
	// and returns the reading taken when it ends: on the real clock a
	// command costs one clock read. args are valid until Run returns.
	Run(args [][]byte, now time.Time) time.Time
	// Resume is called when the connection starts on a goroutine of its
	// own, having left its event loop (Need), before the rest of its batch
	// runs there.
	Resume()
	// Pushed is called once the batch's replies went to the connection's
	// outbox (StartOutbox): what waited for them may follow.
	Pushed()
	// Recovered is called when the engine recovered a panic while serving
	// the connection: it records it and writes the error the client is
	// answered instead of its batch's replies; the engine then sends it
	// and closes the connection.
	Recovered(v any)
	// Closed is called once, when the connection has ended, with why (nil
	// for a client that closed it).
	Closed(err error)
}

// Need is what a command asks of the engine for its batch (Conn.Need).
type Need uint8

const (
	// NeedGoroutine: the command about to run may block (an admin
	// command, a pause, MONITOR): on an event loop it is not run, and the
	// connection leaves the loop for a goroutine of its own, which runs it
	// and the rest of the batch, and serves the connection from then on.
	NeedGoroutine Need = 1 << iota
	// NeedGoroutineAfter: the command ran, and the rest of the batch, and
	// the connection from then on, must leave the event loop (CLIENT
	// TRACKING, an answer that waits).
	NeedGoroutineAfter
	// NeedSync: the command changed state in durable mode: the batch's
	// replies wait for Config.Sync, and are never sent if it fails.
	NeedSync
	// NeedClose: run nothing more of the batch; close the connection once
	// the replies so far are sent (QUIT, SHUTDOWN, a killed client).
	NeedClose
)

// Config is an Engine's settings.
type Config struct {
	// Limits bound what one client may send and leave unread.
	Limits Limits
	// EventLoops is how many event loops serve plain TCP and Unix
	// connections; 0 (or a platform without epoll) serves each by a
	// goroutine of its own, as TLS connections always are.
	EventLoops int
	// Now reads the clock a batch's commands are decided at. Timed says
	// it is the real clock, read once a command (Session.Run returns the
	// next reading); an injected clock is read before every command.
	Now   func() time.Time
	Timed bool
	// Sync waits until every change so far is durable; a batch whose
	// command asked NeedSync waits for it before its replies go out. nil:
	// no command asks.
	Sync func() error
	// Logger receives the engine's warnings (output limits, accept errors)
	// and the panics it recovers. nil discards them.
	Logger *slog.Logger
}

// Engine serves connections for a Handler. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	h       Handler
	limits  Limits // cfg.Limits with the defaults filled in
	logger  *slog.Logger
	outputs outputTotal // reply bytes waiting for all clients (Conn.room)

	mu        sync.Mutex
	listeners []*listener // being served
	stopped   bool        // Close was called
}

// New returns an Engine serving connections for h.
func New(cfg Config, h Handler) *Engine {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now, cfg.Timed = time.Now, true
	}
	e := &Engine{cfg: cfg, h: h, limits: cfg.Limits.WithDefaults(), logger: cfg.Logger}
	e.outputs.limit = e.limits.MaxOutputTotal
	return e
}

// OutputBytes is the reply bytes waiting for all clients that count against
// Limits.MaxOutputTotal: INFO's mem_clients_normal.
func (e *Engine) OutputBytes() int64 { return e.outputs.used.Load() }

// Limits returns the engine's limits, the defaults filled in.
func (e *Engine) Limits() Limits { return e.limits }

// DefaultEventLoops is one event loop per two CPUs (GOMAXPROCS), at least
// one: the other half is left to the flusher, Pebble's compactions and the
// garbage collector. On two cores, with the client on the same machine, one
// loop beat two unpipelined and pipelined alike (docs/performance.md).
func DefaultEventLoops() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// HaveEventLoops reports whether this platform has event loops (epoll).
const HaveEventLoops = haveEventLoops

// Serve accepts connections on ln until Close, each served by an event loop
// if there are any (Config.EventLoops) and it is a plain socket, else by a
// goroutine of its own. When it returns, every connection it accepted has
// been closed and no command of theirs is still running.
func (e *Engine) Serve(ln net.Listener) error { return e.serve(ln, true) }

// Close stops accepting connections on every listener and closes the open
// connections; each Serve returns once its connections have ended.
func (e *Engine) Close() error { return e.closeListeners() }

// ServeConn serves one connection on the calling goroutine until it ends,
// as Serve serves each it accepts, but never on an event loop: for a
// connection made another way than by a listener (a test's script).
func (e *Engine) ServeConn(nc net.Conn) {
	c := newConn(e, nc)
	if e.accept(c) {
		e.serveConn(c)
		return
	}
	_ = nc.Close()
}

// accept asks the handler for c's session, or the refusal c's goroutine
// sends. It reports false when c is to be closed at once.
func (e *Engine) accept(c *Conn) bool {
	s, refusal := e.h.Accept(c)
	switch {
	case refusal != "":
		c.refusal = refusal
		return true
	case s == nil:
		return false
	}
	c.s = s
	return true
}

// Stepper serves one connection a batch at a time on the calling goroutine:
// Step reads what the connection has sent and runs it, as the connection's
// own goroutine would, without the network loop's scheduling between. It is
// for benchmarks and tests of what a batch costs (the server's
// BenchmarkConnBatch).
type Stepper struct {
	e *Engine
	c *Conn
}

// NewStepper accepts nc as Serve would (Handler.Accept), for Step to serve.
// A refused connection is an error.
func (e *Engine) NewStepper(nc net.Conn) (*Stepper, error) {
	c := newConn(e, nc)
	if !e.accept(c) || c.refusal != "" {
		return nil, errRejected
	}
	return &Stepper{e: e, c: c}, nil
}

// Step reads once and runs the whole commands read, writing their replies.
func (s *Stepper) Step() error {
	if err := s.c.read(); err != nil {
		return err
	}
	return s.e.runBatch(s.c)
}
