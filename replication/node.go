// Package replication makes redcell nodes masters and replicas of each other
// on Redis's own replication protocol (PSYNC, an RDB snapshot, then a stream
// of commands, REPLCONF ACK), so that a real redis-server can be a replica
// of redcell and real Redis Sentinel can drive failover.
//
// What replicates is state, not commands (appendChange): a decision's stored TAT
// as SET key <tat> PXAT <ms>, whatever the replica's clock says. A Node is
// one process's replication: the master side (the feed taken from the store
// into the backlog, the links to its replicas: Node.PSync) and, while it is a
// replica, its link to its master (upstream), whose stream it forwards to
// its own replicas.
package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/storage"
)

// Defaults.
const (
	// DefaultBacklogSize is the default backlog: 64 MiB, some 0.8 s of the
	// stream of a pipelined load at a million decisions a second (Redis's
	// 1 MiB would hold 12 ms of it).
	DefaultBacklogSize = 64 << 20
	// DefaultBufferLimit is how far a replica may fall behind the stream
	// (the writes made during its full resynchronization included) before
	// the master drops it: Redis's client-output-buffer-limit replica hard
	// limit, 256 MiB. At 200k decisions a second, some 60 B each, a
	// snapshot may take 20 s to send.
	DefaultBufferLimit = 256 << 20
	// DefaultFeedInterval is how often a master takes the store's changes
	// into the stream: the floor of the replication lag.
	DefaultFeedInterval = time.Millisecond
	// DefaultPingInterval is how often an idle master pings its replicas
	// (Redis's repl-ping-replica-period).
	DefaultPingInterval = 10 * time.Second
	// DefaultTimeout is how long a link may be silent before it is dropped
	// (Redis's repl-timeout).
	DefaultTimeout = 60 * time.Second
	// DefaultReplicaPriority is Redis's replica-priority default.
	DefaultReplicaPriority = 100
)

// Config configures a Node.
type Config struct {
	Store *storage.Store
	// Now is the wall clock; the default is time.Now.
	Now func() time.Time
	// BacklogSize is the backlog's size in bytes; 0 means
	// DefaultBacklogSize.
	BacklogSize int
	// BufferLimit is the most bytes of the stream a replica may lack
	// before its link is dropped (at least BacklogSize); 0 means
	// DefaultBufferLimit.
	BufferLimit int
	// FeedInterval, PingInterval and Timeout: 0 means their defaults.
	FeedInterval, PingInterval, Timeout time.Duration
	// MasterUser and MasterAuth authenticate a replica to its master.
	MasterUser, MasterAuth string
	// MinReplicas and MinReplicasMaxLag are Redis's min-replicas-to-write
	// and min-replicas-max-lag: while a master has fewer than MinReplicas
	// replicas online that acknowledged the stream within
	// MinReplicasMaxLag, it refuses writes (RefuseFewReplicas). MinReplicas
	// 0 (the default) or a negative lag turns the check off; a lag of 0
	// means DefaultMinReplicasMaxLag, as in Redis.
	MinReplicas       int
	MinReplicasMaxLag time.Duration
	// ListeningPort is the port a replica announces to its master
	// (REPLCONF listening-port), which Sentinel connects to.
	ListeningPort int
	// Logger gets the links' events; the default discards them.
	Logger *slog.Logger
	// Dial connects a replica to its master; the default is a TCP dial with
	// a timeout.
	Dial func(addr string) (net.Conn, error)
}

// Node is one process's replication. It is safe for concurrent use.
type Node struct {
	cfg     Config
	store   *storage.Store
	log     *slog.Logger
	backlog *backlog

	// mu guards the role, the links and the feed's goroutine. streamMu
	// guards the stream: its identity (replID, replID2, offset2) and what
	// writes it (the feed, a replica's applying), which it serializes with
	// a snapshot's copy. authMu guards the master's credentials.
	mu       sync.Mutex
	streamMu sync.Mutex
	authMu   sync.Mutex
	// refusing is the hot path's one read (RefusingFlag): 0 while the
	// node takes writes, else why it refuses them: RefuseReplica,
	// RefuseFewReplicas (RefreshGoodReplicas). goodReplicas is how many
	// good replicas it had at the last count; minReplicas and minLag
	// (nanoseconds) are min-replicas-to-write's settings.
	refusing     atomic.Uint32
	goodReplicas atomic.Int64
	minReplicas  atomic.Int64
	minLag       atomic.Int64
	upstream     *upstream // while a replica: its link to its master
	replID       string
	// replID2 and offset2 are the previous master's stream id and the
	// offset up to which this node's stream equals it (Redis's PSYNC2): a
	// replica of the old master continues with its new one.
	replID2 string
	offset2 int64
	// hasStream is set while the store holds exactly the stream under
	// replID up to the backlog's end, as loaded from a master and applied
	// since: a replica then asks its master, the same or a new one, to
	// continue it (PSYNC replid offset) rather than to start over.
	hasStream atomic.Bool

	links    map[*Link]struct{}
	acked    chan struct{} // closed and replaced on every ACK: WAIT's wake-up
	feeding  bool          // the feed goroutine runs
	stopFeed chan struct{}
	feedDone chan struct{}
	priority atomic.Int64
	closed   bool

	syncFull, syncPartialOK, syncPartialErr atomic.Int64
}

// ErrClosed is returned once Close has been called.
var ErrClosed = errors.New("replication: closed")

// New returns a master Node with a fresh stream id. It starts nothing until
// a replica connects or ReplicaOf is called.
func New(cfg Config) *Node {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BacklogSize == 0 {
		cfg.BacklogSize = DefaultBacklogSize
	}
	if cfg.BufferLimit == 0 {
		cfg.BufferLimit = DefaultBufferLimit
	}
	if cfg.FeedInterval == 0 {
		cfg.FeedInterval = DefaultFeedInterval
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dial == nil {
		cfg.Dial = func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) }
	}
	n := &Node{cfg: cfg, store: cfg.Store, log: cfg.Logger, backlog: newBacklog(cfg.BacklogSize, cfg.BufferLimit),
		replID: newReplID(), offset2: -1, links: map[*Link]struct{}{}, acked: make(chan struct{})}
	n.priority.Store(DefaultReplicaPriority)
	switch {
	case cfg.MinReplicasMaxLag == 0:
		cfg.MinReplicasMaxLag = DefaultMinReplicasMaxLag
	case cfg.MinReplicasMaxLag < 0:
		cfg.MinReplicasMaxLag = 0
	}
	n.SetMinReplicas(cfg.MinReplicas, cfg.MinReplicasMaxLag)
	return n
}

func newReplID() string {
	var id [20]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// Why a node refuses writes: the bits of RefusingFlag's word.
const (
	// RefuseReplica: the node is a replica (READONLY).
	RefuseReplica = admission.RefuseReplica
	// RefuseFewReplicas: a master with fewer good replicas than
	// min-replicas-to-write asks (NOREPLICAS).
	RefuseFewReplicas = admission.RefuseFewReplicas
)

// IsReplica reports whether the node is a replica, which refuses writes.
// It costs one atomic load.
func (n *Node) IsReplica() bool { return n.refusing.Load()&RefuseReplica != 0 }

// RefusingFlag is the word a hot path (the server's decisions) loads to
// know whether the node refuses writes: 0 while it takes them, else the
// Refuse* bits of why. Only the node changes it.
func (n *Node) RefusingFlag() *atomic.Uint32 { return &n.refusing }

// setReplica sets or clears RefuseReplica.
func (n *Node) setReplica(replica bool) {
	if replica {
		n.refusing.Or(RefuseReplica)
	} else {
		n.refusing.And(^RefuseReplica)
	}
}

// DefaultMinReplicasMaxLag is Redis's min-replicas-max-lag default.
const DefaultMinReplicasMaxLag = 10 * time.Second

// WatchReplicasInterval is how often WatchGoodReplicas counts the good
// replicas (Redis: once a second, in its replicationCron).
const WatchReplicasInterval = 100 * time.Millisecond

// SetPriority sets replica-priority, which INFO reports for Sentinel: 0
// means never promote.
func (n *Node) SetPriority(p int64) { n.priority.Store(p) }

// Priority is replica-priority.
func (n *Node) Priority() int64 { return n.priority.Load() }

// SetMasterAuth changes the credentials for the next connection to a master
// (CONFIG SET masterauth, masteruser).
func (n *Node) SetMasterAuth(user, pass string) {
	n.authMu.Lock()
	n.cfg.MasterUser, n.cfg.MasterAuth = user, pass
	n.authMu.Unlock()
}

// MasterAuth returns the credentials SetMasterAuth set.
func (n *Node) MasterAuth() (user, pass string) {
	n.authMu.Lock()
	defer n.authMu.Unlock()
	return n.cfg.MasterUser, n.cfg.MasterAuth
}

// ReplicaOf makes the node a replica of host:port, or with host "" a master
// (REPLICAOF NO ONE). It returns at once; the link connects in the
// background. already is set when the node was already a replica of that
// master.
func (n *Node) ReplicaOf(host string, port int) (already bool, err error) {
	return n.replicaOf(host, port, false)
}

// FailoverTo is the last step of FAILOVER on a master that paused its
// writes and saw host:port, its replica, acknowledge the whole stream: it
// becomes a replica of host:port, whose first PSYNC asks it to take over
// (PSYNC replid offset FAILOVER) and continues the stream there.
func (n *Node) FailoverTo(host string, port int) error {
	_, err := n.replicaOf(host, port, true)
	return err
}

func (n *Node) replicaOf(host string, port int, failover bool) (already bool, err error) {
	defer n.RefreshGoodReplicas() // a replica refuses writes as a replica, a master by its replicas
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false, ErrClosed
	}
	if host == "" {
		if n.upstream == nil {
			return true, nil
		}
		n.promoteLocked()
		return false, nil
	}
	if u := n.upstream; u != nil && u.host == host && u.port == port {
		return true, nil
	}
	if n.upstream != nil {
		n.upstream.stop()
	} else {
		// A master becoming a replica: it refuses writes first, then takes
		// what its feed recorded into its stream and stops it, so that its
		// stream says what its store holds (but for a decision already
		// past the refusal, which FAILOVER's pause rules out). The new
		// master, if it was its replica, continues that stream (PSYNC2);
		// any other resynchronizes it in full.
		n.setReplica(true)
		fed := n.feeding // a master whose feed never ran has no stream
		n.stopFeedLocked()
		if fed {
			n.takeFeed(nil, nil)
		}
		n.store.SetFeed(false)
		n.hasStream.Store(fed && n.backlog.active())
	}
	n.setReplica(true)
	n.dropLinksLocked() // as Redis, its replicas resynchronize with what it becomes
	n.upstream = n.startUpstream(host, port, failover)
	return false, nil
}

// promoteLocked ends the link to the master and makes the node a master:
// a new stream id, the old one kept as replID2 so that the old master's
// other replicas continue with this one, and its own changes feeding the
// stream from now on.
func (n *Node) promoteLocked() {
	n.upstream.stop()
	n.upstream = nil
	n.streamMu.Lock()
	_, end := n.backlog.offsets()
	n.replID2, n.offset2 = n.replID, end
	n.replID = newReplID()
	n.streamMu.Unlock()
	n.setReplica(false)
	n.log.Info("replication: this node is now a master", "replid", n.replID, "offset", end)
	// The feed starts now, not when a replica comes: the old master's
	// other replicas, pointed here by Sentinel, continue from this offset.
	n.store.SetFeed(true)
	n.startFeedLocked()
}

// BufferMemory is the memory the replication stream holds: the backlog's
// ring, grown for what the links have yet to send. The memory limit does
// not count it (storage.Store.SetUncounted), as Redis's maxmemory does not
// count its replication buffers.
func (n *Node) BufferMemory() int64 { return n.backlog.allocated() }

// Close stops every link and the feed.
func (n *Node) Close() {
	n.mu.Lock()
	n.closed = true
	if n.upstream != nil {
		n.upstream.stop()
		n.upstream = nil
	}
	n.stopFeedLocked()
	n.dropLinksLocked()
	n.mu.Unlock()
}

// addr joins host and port as net.JoinHostPort does.
func addr(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
