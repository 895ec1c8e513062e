// Package server speaks RESP: it accepts connections, reads commands with
// package resp's reader, reads the clock once per command, asks storage for
// decisions and writes Redis-compatible replies under RESP2 or RESP3.
package server

import (
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"redcell/clock"
	"redcell/storage"
)

// Version is the redcell version reported by INFO and HELLO.
const Version = "0.1.0"

// RedisVersion is the Redis version redcell reports to clients that look at
// it (HELLO, INFO redis_version): the Redis 7.2 command surface it follows.
const RedisVersion = "7.2.0"

// Config configures a Server. The zero Config serves without a password on
// the real clock.
type Config struct {
	// RequirePass, when set, makes clients AUTH (or HELLO ... AUTH) first.
	RequirePass string
	// Clock is the clock decisions are made on: a wall clock that never
	// steps (package clock). The default is one started by New.
	Clock *clock.Clock
	// Now, when set, replaces Clock: tests inject a manual clock, and
	// durations are then not measured.
	Now func() time.Time
	// Shutdown is called by the SHUTDOWN command with save false for
	// SHUTDOWN NOSAVE. It should stop the process cleanly; an error is
	// reported to the client. Nil makes SHUTDOWN an error.
	Shutdown func(save bool) error
	// Persistence, when set, serves SAVE, BGSAVE, LASTSAVE and INFO's
	// Persistence section. Nil means state lives in memory only.
	Persistence Persistence
	// DurableWrites makes every reply that follows a change wait until the
	// change is synced (Persistence.Sync), as Redis's appendfsync always.
	DurableWrites bool
	// EventLoops is how many event loops serve each listener's plain (TCP
	// and Unix) connections: 0 means one per GOMAXPROCS, a negative number
	// none (a goroutine per connection, as TLS connections and durable
	// mode always have). loop_linux.go says why.
	EventLoops int
	// Limits bound what one command may announce; zero fields take the
	// defaults (DefaultMaxBulkLen, DefaultMaxArgs, DefaultMaxInlineLen).
	Limits Limits
	// Logger receives errors the server cannot tell a client. The default
	// discards them.
	Logger *slog.Logger
	// LoadedKeys and LoadDuration describe the start-up load, for INFO.
	LoadedKeys   int64
	LoadDuration time.Duration
	// Settings are reported by INFO and CONFIG GET; they change nothing here.
	Bind string
	Port int
	Dir  string
	// FlushInterval is reported as CONFIG GET save.
	FlushInterval time.Duration
}

// Persistence is what the server needs from the flusher.
type Persistence interface {
	// Flush writes and syncs every change (SAVE).
	Flush() error
	// BackgroundSave starts a Flush unless one is running (BGSAVE).
	BackgroundSave() bool
	// Sync waits until every change so far is durable (durable mode).
	Sync() error
	// Pending counts the changes not yet durable; InFlight those of them a
	// flush has taken from the store and not yet synced.
	Pending() int
	InFlight() int
	// Failing reports whether the last flush failed.
	Failing() bool
	Stats() storage.FlushStats
}

var _ Persistence = (*storage.Flusher)(nil)

// Server is a RESP server over one Store. It is safe for concurrent use.
type Server struct {
	cfg      Config
	store    *storage.Store
	now      func() time.Time
	started  time.Time
	commands map[string]*command
	limits   Limits // cfg.Limits with the defaults filled in
	// outputTotal counts the replies waiting for all clients against
	// Limits.MaxOutputTotal (conn.room).
	outputTotal outputTotal

	nextClientID atomic.Int64
	mu           sync.Mutex
	clients      map[*client]struct{}
	listeners    []*listener // being served; listen.go
	stopped      bool        // Close was called

	// hooks has a bit for each feature that must see every command while
	// it is in use (hookPause, hookMonitor): dispatch pays one atomic load
	// for all of them, and takes the slow path only when one is set.
	hooks    atomic.Uint32
	pauseMu  sync.Mutex // serializes changes of pause with hookPause
	pause    atomic.Pointer[pauseState]
	monMu    sync.Mutex // serializes changes of monitors with hookMonitor
	monitors atomic.Pointer[[]*monitor]

	authFails *authLimiter // failed AUTH attempts by address: authlimit.go

	// Counters and how they are kept: metrics.go.
	stats       stats
	commandList []*command // the table's commands, by name
	timed       bool       // the clock is the real one: measure durations
	debug       bool       // the logger takes debug records
	runID       string     // random per start, as Redis's run_id
	peakMemory  atomic.Int64
}

// New returns a Server serving store. Call Serve to accept connections.
func New(cfg Config, store *storage.Store) *Server {
	timed := cfg.Now == nil
	if cfg.Now == nil {
		if cfg.Clock == nil {
			cfg.Clock = clock.New()
		}
		cfg.Now = cfg.Clock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		store:   store,
		now:     cfg.Now,
		clients: make(map[*client]struct{}),

		authFails: newAuthLimiter(),
	}
	s.started = s.now()
	s.commands = commandTable()
	s.initMetrics(timed)
	s.limits = cfg.Limits.withDefaults()
	s.outputTotal.limit = s.limits.MaxOutputTotal
	return s
}

// Serve accepts connections on ln until Close. When it returns, every
// connection it accepted has been closed and no command of theirs is still
// running. ServeTLS (tls.go) serves TLS connections beside it.
func (s *Server) Serve(ln net.Listener) error {
	defer s.startSampler()()
	return s.serve(ln, true)
}

// eventLoops is how many event loops serve a plain listener.
func (s *Server) eventLoops() int {
	switch {
	case !haveEventLoops || s.cfg.DurableWrites || s.cfg.EventLoops < 0:
		return 0
	case s.cfg.EventLoops == 0:
		return runtime.GOMAXPROCS(0)
	}
	return s.cfg.EventLoops
}

// Close stops accepting connections on every listener and closes the open
// connections.
func (s *Server) Close() error { return s.closeListeners() }

func (s *Server) accept(conn connection) bool {
	now := s.now()
	c := &client{
		conn:    conn,
		srv:     s,
		id:      s.nextClientID.Add(1),
		addr:    conn.RemoteAddr(),
		created: now,
		resp:    2,
		done:    make(chan struct{}),
	}
	if nc := conn.NetConn(); nc != nil {
		c.laddr = nc.LocalAddr().String()
	}
	c.stripe = int(c.id) & (statStripes - 1)
	c.respSeen.Store(2)
	c.lastActive.Store(now.UnixNano())
	c.authed = s.cfg.RequirePass == ""
	c.ks = s.store
	if !s.admit(c) {
		s.stats.rejectedConnections.Add(1)
		return reject(conn)
	}
	conn.SetContext(c)
	s.stats.connections.Add(1)
	return true
}

func (s *Server) closed(conn connection, err error) {
	c, _ := conn.Context().(*client)
	if c == nil {
		return
	}
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	s.endMonitor(c)
	s.connectionEnded(c, err)
}

func (s *Server) logError(msg string, err error) {
	s.cfg.Logger.Error(msg, "err", err)
}

// connectedClients returns a snapshot of the open connections.
func (s *Server) connectedClients() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		if !c.killed.Load() { // killed: gone, though its goroutine may not have ended yet
			out = append(out, c)
		}
	}
	return out
}

// handle dispatches one command read on its own, at the clock's current
// reading.
func (s *Server) handle(conn connection, cmd redcon.Command) {
	s.dispatch(conn.Context().(*client), cmd.Args, s.now())
}

// dispatch runs one command at now: look it up, check arity, then
// authentication, in that order as Redis does, then run it. It returns the
// clock reading taken when the command ended, if it took one, else now:
// within a batch each command starts at the reading that ended the one
// before, so a decision costs one clock read (runBatch).
func (s *Server) dispatch(c *client, args [][]byte, now time.Time) time.Time {
	if c.closing {
		return now // QUIT or SHUTDOWN: the rest of the pipeline is not run
	}
	// A pipeline repeats one command: comparing the name with the last
	// command's costs less than the table lookup.
	spec := c.lastCmd.Load()
	if spec == nil || !equalFold(args[0], spec.name) {
		if spec = s.lookup(args[0]); spec == nil {
			c.flagTransaction()
			c.writeError(errUnknownCommand(args))
			return now
		}
		c.lastCmd.Store(spec) // at lookup, before the checks, as Redis sets lastcmd
	}
	if !spec.arityOK(len(args)) {
		spec.stats.rejected.Add(1)
		c.flagTransaction()
		c.writeError(errWrongArgs(spec.name))
		return now
	}
	if !c.authed && !spec.noAuth {
		spec.stats.rejected.Add(1)
		c.flagTransaction()
		c.writeError(errNoAuth)
		return now
	}
	c.lastActive.Store(now.UnixNano())
	if c.tx != nil && !spec.txControl {
		// Inside MULTI: queued for EXEC, or refused (which aborts it).
		if spec.noMulti {
			spec.stats.rejected.Add(1)
			c.flagTransaction()
			c.writeError(errNotInMulti)
			return now
		}
		c.queue(spec, args)
		return now
	}
	if c.onLoop && (spec.admin || s.hooks.Load() != 0) {
		// Admin commands (SAVE, SHUTDOWN, MONITOR, ...) and a pause may
		// wait: not on an event loop, which serves other clients.
		c.leaveLoop = true
		return now
	}
	if s.hooks.Load() != 0 {
		return s.executeHooked(c, spec, args, now)
	}
	return s.execute(c, spec, args, now)
}

// executeHooked is execute while a pause may be in force or a client
// monitors: a monitor may not touch keys, as Redis's may not; a paused
// command waits (pause.go); a command run is fed to the monitors
// (monitor.go).
func (s *Server) executeHooked(c *client, spec *command, args [][]byte, now time.Time) time.Time {
	if c.mon != nil && (spec.write || spec.readonly) {
		spec.stats.rejected.Add(1)
		c.writeError(errMonitorKeyspace)
		return now
	}
	if s.hooks.Load()&hookPause != 0 {
		var alive bool
		if now, alive = s.waitPause(c, spec, now); !alive {
			c.closing = true // killed while it waited: it runs nothing more
			return now
		}
	}
	end := s.execute(c, spec, args, now)
	if s.hooks.Load()&hookMonitor != 0 {
		if cn, ok := c.conn.(*conn); ok && c.mon != nil {
			_ = cn.flush() // a monitor gets its reply before its command's line, as from Redis
		}
		s.feedMonitors(c, args, now)
	}
	return end
}

// syncBeforeReply runs in durable mode after the last command of a batch
// that changed state, before the batch's replies are sent (runConn): it waits
// for the group commit that covers the changes. If that fails the replies are
// dropped and the connection closed, so nothing unpersisted is acknowledged.
func (s *Server) syncBeforeReply(c *client) {
	c.unsynced = false
	if err := s.cfg.Persistence.Sync(); err != nil {
		s.logError("durable write failed; closing the connection unacknowledged", err)
		c.closing = true
		if cn, ok := c.conn.(*conn); ok {
			cn.drop()
		} else {
			c.conn.Close()
		}
	}
}

// changed records that the current command changed stored state: in durable
// mode its reply waits for a sync.
func (c *client) changed() {
	if c.srv.cfg.DurableWrites {
		c.unsynced = true
	}
}

// writesRefused reports whether changes must be refused now: in durable mode
// while flushes fail, a change could not be made durable, so a command that
// would make one answers MISCONF instead (as Redis does when it cannot
// persist), and commands that change nothing go on.
func (s *Server) writesRefused() bool {
	return s.cfg.DurableWrites && s.cfg.Persistence.Failing()
}

// lookup finds a command by name, case-insensitively, without allocating.
func (s *Server) lookup(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return s.commands[string(buf[:len(name)])]
}
