// Package server speaks RESP: it accepts connections, reads commands with
// package resp's reader, reads the clock once per command, asks storage for
// decisions and writes Redis-compatible replies under RESP2 or RESP3.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/clusternode"
	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/storage"
)

// Version is the redcell version reported by INFO and HELLO.
const Version = "0.1.0"

// RedisVersion is the Redis version redcell reports to clients that look at
// it (HELLO, INFO redis_version): the Redis 7.2 command surface it follows.
const RedisVersion = "7.2.0"

// Config configures a Server. The zero Config serves without a password on
// the real clock.
type Config struct {
	// RequirePass is the default user's password (Redis's requirepass):
	// set, clients AUTH (or HELLO ... AUTH) first. An ACL file's line for
	// the default user wins over it.
	RequirePass string
	// ClusterUser and ClusterPass are the internal user this node
	// authenticates to its cluster peers as, for a slot's migration, a
	// topology's push and a planned failover; ClusterPass "" is
	// RequirePass, with ClusterUser "" the default user, as before users.
	ClusterUser, ClusterPass string
	// ProtectedMode is Redis's protected-mode: while the default user has
	// no password (nopass), a connection from another host (an address
	// that is not loopback, nor a Unix socket) is answered Redis's DENIED
	// text and closed, as it is accepted. CONFIG SET protected-mode
	// changes it. The zero Config leaves it off; the daemon's default is
	// on, as Redis's.
	ProtectedMode bool
	// ACLFile is Redis's aclfile: the users LoadACLFile loads at the start,
	// ACL LOAD reloads and ACL SAVE writes. "": the default user alone,
	// and ACL SETUSER's users live until the process ends.
	ACLFile string
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
	// and Unix) connections: 0 means DefaultEventLoops, a negative number
	// none (a goroutine per connection, as TLS connections always have).
	// The engine's eventLoop says why.
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
	// Replication, when set, makes the server a master that replicas may
	// PSYNC from and lets REPLICAOF make it a replica. Nil: REPLICAOF is
	// refused and INFO reports a master without replicas.
	Replication *replication.Node
	// Cluster, when set, is cluster mode: keyed commands are routed by
	// slot (client.route), slots move with CLUSTERX MIGRATE and the node
	// follows the topology pushed to it (package clusternode). The store
	// must then be sharded by slot (storage.Config.BySlot).
	Cluster *cluster.State
	// RewriteConfig, when set, is CONFIG REWRITE: it persists the
	// replication role and settings so a restarted node comes back as
	// Sentinel left it. Nil makes CONFIG REWRITE an error.
	RewriteConfig func() error
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

var _ clusternode.Replication = (*replication.Node)(nil)

// Server is a RESP server over one Store. It is safe for concurrent use.
type Server struct {
	cfg   Config
	store *storage.Store
	repl  *replication.Node // nil: no replication
	// gate admits decisions (admission.Gate): the server's limiter
	// commands and, through Gate, the rate limit service. A value, so that
	// the hot path finds its words at a fixed offset from s.
	gate    admission.Gate
	cluster *cluster.State // nil: not in cluster mode
	// migrator and follower are cluster mode's work with other nodes and
	// with the topology; nil outside cluster mode.
	migrator *clusternode.Migrator
	follower *clusternode.Follower
	// sentinels follows the Sentinels that decide failovers, when the
	// cluster has them; nil outside cluster mode.
	sentinels *clusternode.SentinelWatch
	now       func() time.Time
	started   time.Time
	commands  commandTable
	limits    Limits // cfg.Limits with the defaults filled in
	// eng serves the connections (package engine): the server is its
	// Handler (acceptor), each client a connection's Session.
	eng *engine.Engine

	nextClientID atomic.Int64
	mu           sync.Mutex
	clients      map[*client]struct{}

	// hooks has a bit for each feature that must see every command while
	// it is in use (hookPause, hookMonitor): dispatch pays one atomic load
	// for all of them, and takes the slow path only when one is set.
	hooks    atomic.Uint32
	pauseMu  sync.Mutex // serializes changes of pause with hookPause
	pause    atomic.Pointer[pauseState]
	monMu    sync.Mutex // serializes changes of monitors with hookMonitor
	monitors atomic.Pointer[[]*engine.Outbox]
	pubsub   pubsub   // the subscriptions
	tracking tracking // CLIENT TRACKING: who may cache which keys
	// leaseWaiters are the clients blocked in CL.ACQUIRE ... BLOCK.
	leaseWaiters leaseWaiters

	// failover is the FAILOVER in progress, if any (cmdFailover);
	// failoverState is INFO's master_failover_state.
	failoverMu    sync.Mutex
	failover      *failover
	failoverState atomic.Value

	authFails *authLimiter // failed AUTH attempts by address
	users     *users       // the ACL users, the ACL LOG
	// protected is protected mode in force: Config.ProtectedMode, then
	// CONFIG SET protected-mode's.
	protected atomic.Bool
	// sleep waits out a late answer (client.waitLate) on the real clock,
	// or until its client is killed: the package's sleep, which tests
	// replace before the server serves.
	sleep func(d time.Duration, done <-chan struct{}) bool

	// Counters, and how they are kept: stats.
	stats      stats
	timed      bool   // the clock is the real one: measure durations
	debug      bool   // the logger takes debug records
	runID      string // random per start, as Redis's run_id
	peakMemory atomic.Int64
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
		repl:    cfg.Replication,
		cluster: cfg.Cluster,
		now:     cfg.Now,
		clients: make(map[*client]struct{}),

		authFails: newAuthLimiter(),
		sleep:     sleep,

		timed: timed,
		runID: newRunID(),
		debug: cfg.Logger.Enabled(context.Background(), slog.LevelDebug),
	}
	s.protected.Store(cfg.ProtectedMode)
	if cfg.Cluster != nil {
		nc := clusternode.Config{State: cfg.Cluster, Store: store, User: cfg.ClusterUser, Password: cfg.ClusterPass,
			Now: cfg.Now, Logger: cfg.Logger}
		if nc.Password == "" {
			nc.Password = cfg.RequirePass
		}
		if cfg.Replication != nil {
			nc.Replication = cfg.Replication
		}
		s.migrator = clusternode.NewMigrator(nc)
		s.follower = clusternode.NewFollower(nc, s.migrator)
		s.sentinels = clusternode.NewSentinelWatch(nc, s.follower)
	}
	s.tracking.init(s)
	s.started = s.now()
	s.commands = newCommandTable()
	s.users = newUsers(s.commands.rules, cfg.RequirePass, cfg.ACLFile)
	s.limits = cfg.Limits.withDefaults()
	s.gate = admission.Gate{MaxKeyLen: s.limits.MaxKeyLen, Refusing: new(atomic.Uint32),
		Durable: cfg.DurableWrites, Persistence: cfg.Persistence}
	if cfg.Replication != nil {
		// replication.Node sets the word as its role and its replicas
		// change: one load tells the hot path.
		s.gate.Refusing = cfg.Replication.RefusingFlag()
	}
	var sync func() error
	if cfg.DurableWrites {
		sync = cfg.Persistence.Sync
	}
	s.eng = engine.New(engine.Config{Limits: s.limits.engine(), EventLoops: s.eventLoops(), Now: cfg.Now, Timed: timed,
		Sync: sync, Logger: cfg.Logger}, acceptor{s})
	return s
}

// acceptor is the server as the engine's Handler: it accepts connections.
type acceptor struct{ s *Server }

// Accept implements engine.Handler.
func (a acceptor) Accept(c *engine.Conn) (engine.Session, string) {
	cl, refusal := a.s.accept(c)
	if cl == nil {
		return nil, refusal
	}
	return cl, ""
}

// Gate is the server's admission of decisions, for the other fronts that
// decide on its keyspace (the rate limit service): one gate, so that every
// front refuses alike.
func (s *Server) Gate() *admission.Gate { return &s.gate }

// WatchSentinels follows the Sentinels that decide the cluster's failovers
// (clusternode.SentinelWatch) until ctx ends; outside cluster mode it
// returns at once.
func (s *Server) WatchSentinels(ctx context.Context) {
	if s.sentinels != nil {
		s.sentinels.Run(ctx)
	}
}

// Serve accepts connections on ln until Close (engine.Engine.Serve). When
// it returns, every connection it accepted has been closed and no command
// of theirs is still running. ServeTLS serves TLS connections beside it.
func (s *Server) Serve(ln net.Listener) error {
	defer s.startSampler()()
	return s.eng.Serve(ln)
}

// ServeTLS accepts TLS connections on ln until Close, as Serve does plain
// ones; both may run at once on one Server. cfg usually comes from
// engine.LoadTLSConfig.
func (s *Server) ServeTLS(ln net.Listener, cfg *tls.Config) error { return s.eng.ServeTLS(ln, cfg) }

// DefaultEventLoops is engine.DefaultEventLoops: one event loop per two
// CPUs.
func DefaultEventLoops() int { return engine.DefaultEventLoops() }

// eventLoops is how many event loops serve a plain listener.
func (s *Server) eventLoops() int {
	switch {
	case !engine.HaveEventLoops || s.cfg.EventLoops < 0:
		return 0
	case s.cfg.EventLoops == 0:
		return engine.DefaultEventLoops()
	}
	return s.cfg.EventLoops
}

// Close stops accepting connections on every listener and closes the open
// connections.
func (s *Server) Close() error { return s.eng.Close() }

// accept makes a client of a new connection, or returns the refusal its
// connection answers (protected mode, maxclients).
func (s *Server) accept(conn connection) (*client, string) {
	now := s.now()
	c := &client{
		conn:    conn,
		srv:     s,
		id:      s.nextClientID.Add(1),
		ident:   identity{addr: conn.RemoteAddr(), laddr: conn.LocalAddr(), created: now},
		session: session{resp: 2},
		cluster: clusterConn{slot: -1},
	}
	c.stripe = int(c.id) & (statStripes - 1)
	c.session.respSeen.Store(2)
	c.lastActive.Store(now.UnixNano())
	c.ks = s.store
	if s.cfg.DurableWrites {
		c.onChange = changeDurable
	}
	// The default user is bound and the client admitted under users.mu,
	// so that a change of the default user meanwhile reaches it.
	s.users.mu.Lock()
	def := s.users.set.Get("default")
	if s.protected.Load() && def.NoPass() && !localPeer(conn) {
		// Protected mode, as Redis 7's, asks whether the default user
		// has no password, on or off.
		s.users.mu.Unlock()
		s.stats.rejectedConnections.Add(1)
		return nil, errProtected.text
	}
	c.bind(def)
	c.setAuthed(def.Enabled() && def.NoPass())
	admitted := s.admit(c)
	s.users.mu.Unlock()
	if !admitted {
		s.stats.rejectedConnections.Add(1)
		return nil, errMaxClients.text
	}
	s.tracking.registerClient(c)
	s.stats.connections.Add(1)
	return c, ""
}

// admit counts c among the open connections unless there are
// Limits.MaxClients already. It reports whether c was admitted.
func (s *Server) admit(c *client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) >= s.limits.MaxClients {
		return false
	}
	s.clients[c] = struct{}{}
	return true
}

// closed forgets c, whose connection has ended.
func (s *Server) closed(c *client, err error) {
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	s.tracking.disable(c)
	s.tracking.forgetClient(c)
	if c.repl.link != nil {
		c.repl.link.Close()
	}
	s.endMonitor(c)
	s.unsubscribeAll(c)
	s.connectionEnded(c, err)
}

// newRunID returns a random run_id, as Redis's: 40 hex digits.
func newRunID() string {
	var id [20]byte
	_, _ = rand.Read(id[:]) // never fails: crypto/rand panics rather than return an error
	return hex.EncodeToString(id[:])
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
		if !c.killed() { // killed: gone, though its goroutine may not have ended yet
			out = append(out, c)
		}
	}
	return out
}
