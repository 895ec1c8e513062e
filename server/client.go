package server

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/storage"
)

// client is one connection's state: first what dispatch reads or sets on
// every command, then one group a feature (its session, a transaction, its
// subscriptions, MONITOR, a replica's link, cluster mode), as Dragonfly's
// ConnectionContext groups ExecInfo, SubscribeInfo and ReplicationInfo. The
// groups are values, not pointers: the hot path finds each field at a fixed
// offset from c, as it did before they were grouped.
//
// A field is touched only by the connection's own goroutine unless it is
// atomic: those are also read from other goroutines, by CLIENT LIST, CLIENT
// KILL and INFO.
type client struct {
	conn connection
	srv  *Server
	// ks is where the client's commands read and change keys: the store,
	// or inside EXEC the transaction holding its keys' locks (cmdExec).
	ks storage.Keyspace
	// lastCmd is the command run last, a container's subcommand once it
	// has run one: CLIENT LIST's cmd=, the monitor's filter. lastActive is
	// when the last command ran, in unix nanoseconds: CLIENT LIST's idle=.
	lastCmd    atomic.Pointer[command]
	lastActive atomic.Int64
	// sent is dispatch's cache: the name of the command looked up last,
	// as the client spelled it, on the connection's goroutine.
	sent sentName
	// access is what dispatch checks before a command (accessUnauthed,
	// accessLimited): 0 for an authenticated connection whose user may
	// run anything. user is the user it authenticated as, the default
	// user until then. Both change from other goroutines too, when the
	// user's rules do (users.userChanged).
	access atomic.Uint32
	user   atomic.Pointer[acl.User]
	// stripe picks the copy of the shared counters this client writes
	// (statStripes).
	stripe int

	// gated is set while the client's commands need a look before they
	// run (client.gate): inside MULTI, and while restricted, subscribed
	// under RESP2. One flag for both, so that a client in neither state
	// pays one test in dispatch, as it did for MULTI alone. regate keeps
	// them.
	gated, restricted bool
	// onChange has a bit for each thing a change of a key the client's
	// command makes must do (changeDurable, changeNoloop): client.changed
	// tests them all at once.
	onChange uint8

	batch   batchState
	session session
	// rate is CL.THROTTLE's last Rate (rateMemo).
	rate rateMemo
	// token is where CL.ACQUIRE makes a token (newToken): on the stack it
	// escaped, through the decision's closure, an allocation a call.
	token   [lease.TokenLen]byte
	cluster clusterConn

	id    int64
	ident identity
	tx    transaction
	sub   subscriptions
	// outbox is the connection's writer once others write to it too
	// (startOutbox): set by the client's own goroutine before anything
	// that pushes to it can find it. nil until then.
	outbox   *engine.Outbox
	monitor  monitorState
	repl     replicaLink
	tracking trackingConn

	// waiting is set while the client's command waits (waitPause,
	// answerLate): CLIENT LIST's flags=b.
	waiting atomic.Bool
}

// batchState is what the server keeps of the batch of commands being run;
// what the engine must do for it (leave the event loop, sync, close) the
// commands ask of the connection (connection.Need).
type batchState struct {
	// failed is set when the running command replies with an error
	// (writeError), for its failed count (execute).
	failed bool
}

// session is what HELLO, AUTH and RESET set: the protocol the client speaks
// and whether it has authenticated.
type session struct {
	// resp is the protocol, 2 or 3, switched by HELLO; respSeen is the same
	// for other goroutines (a publisher choosing how to send a message).
	resp     int
	respSeen atomic.Int32
	authed   bool
	// lateBy is how long the connection owes a wrong password's answer
	// (client.answerLate) until it can wait on its own goroutine.
	lateBy time.Duration
}

// clusterConn is a client's state in cluster mode (route).
type clusterConn struct {
	// slot is the cluster slot of the running command's key, computed by
	// route (-1 outside cluster mode and for a command without keys), which
	// the store shards by.
	slot int
	// readOnly (READONLY) lets a cluster replica answer the client's reads
	// of its master's slots; asking (ASKING) lets the next command, or the
	// transaction MULTI begins next, run on a slot being imported here.
	readOnly, asking bool
}

// identity is who the client is, as CLIENT LIST and CLIENT INFO show it:
// where it connects from and to, since when, and what it calls itself.
type identity struct {
	addr, laddr string // remote and local address
	created     time.Time
	// name is set by CLIENT SETNAME and HELLO SETNAME, libName and
	// libVersion by CLIENT SETINFO.
	name       atomic.Pointer[string]
	libName    atomic.Pointer[string]
	libVersion atomic.Pointer[string]
}

// transaction is a client's MULTI/EXEC state (cmdMulti, cmdExec).
type transaction struct {
	// running is the queued command EXEC runs, nil outside EXEC: a panic
	// in it is reported under its name (containPanic).
	running *command
	// multi is the transaction being queued, from MULTI to EXEC or
	// DISCARD; nil outside one.
	multi *multiState
	// watched are the keys WATCHed for the next EXEC.
	watched []watchedKey
}

// subscriptions are a client's Pub/Sub subscriptions (pubsub).
type subscriptions struct {
	// names are the names subscribed to, by kind; they change under the
	// registry's lock (pubsub.add). counts count them for CLIENT LIST and
	// KILL on other goroutines.
	names  [subKinds]map[string]struct{}
	counts [subKinds]atomic.Int32
	// selfPushes are the messages the client published to itself, sent
	// after its command's reply (sendSelfPushes).
	selfPushes []byte
}

// monitorState is a client's MONITOR (cmdMonitor).
type monitorState struct {
	// on is set once the client has sent MONITOR: CLIENT LIST's flags=O.
	on atomic.Bool
	// line is where the lines of the client's own commands are built while
	// anyone monitors (Server.feedMonitors).
	line []byte
}

// replicaLink is the state of a client that is a replica of this server
// (cmdReplconf, cmdPsync).
type replicaLink struct {
	// link is the replication link once the replica has sent PSYNC; linked
	// is link != nil, for CLIENT LIST and KILL on other goroutines.
	link   *replication.Link
	linked atomic.Bool
	// ip and port are where the replica said it listens (REPLCONF
	// ip-address, listening-port); eof that it reads a snapshot streamed
	// without its length (REPLCONF capa eof).
	ip   string
	port int
	eof  bool
}

// kill ends the client's connection from any goroutine, as CLIENT KILL does
// (engine.Conn.Kill): the command it is running, if any, ends without its
// replies, and one waiting (a pause, a late answer) is woken and not run.
// It reports false if the client was killed already.
func (c *client) kill() bool { return c.conn.Kill() }

// killed reports whether the client was killed.
func (c *client) killed() bool { return c.conn.Killed() }

// regate sets gated and restricted from the client's state, wherever a
// transaction begins or ends, its subscriptions change, its protocol does or
// it turns tracking on or off.
//
// It also tells the engine whether the idle timeout spares the connection:
// a subscriber's or a monitor's, which only read, as Redis's.
func (c *client) regate() {
	c.restricted = c.session.resp == 2 && c.subscriptions() > 0
	c.gated = c.tx.multi != nil || c.restricted || c.tracking.on
	c.conn.SetIdleExempt(c.outbox != nil && (c.monitor.on.Load() || c.subscribed()))
}

// flags is CLIENT LIST's flags field, as Redis's: S for a replica, O for a
// monitor, P for a subscriber, b for a client whose command waits, then the
// tracking flags (appendTrackingFlags), in that order, or N for none of them.
func (c *client) flags() string {
	var b [8]byte
	f := b[:0]
	if c.repl.linked.Load() {
		f = append(f, 'S')
	}
	if c.monitor.on.Load() {
		f = append(f, 'O')
	}
	if c.subscribed() {
		f = append(f, 'P')
	}
	if c.waiting.Load() {
		f = append(f, 'b')
	}
	f = c.appendTrackingFlags(f)
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

func loadString(p *atomic.Pointer[string]) string {
	if s := p.Load(); s != nil {
		return *s
	}
	return ""
}

// info renders the client as one line of CLIENT LIST / CLIENT INFO, with the
// fields Redis 7 prints that mean something here.
func (c *client) info(now time.Time) string {
	b := make([]byte, 0, 256)
	b = append(b, "id="...)
	b = strconv.AppendInt(b, c.id, 10)
	b = append(b, " addr="...)
	b = append(b, c.ident.addr...)
	b = append(b, " laddr="...)
	b = append(b, c.ident.laddr...)
	b = append(b, " fd=-1 name="...)
	b = append(b, loadString(&c.ident.name)...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, int64(now.Sub(c.ident.created)/time.Second), 10)
	b = append(b, " idle="...)
	idle := now.UnixNano() - c.lastActive.Load()
	b = strconv.AppendInt(b, max(idle, 0)/int64(time.Second), 10)
	b = append(b, " flags="...)
	b = append(b, c.flags()...)
	b = append(b, " db=0 sub="...)
	b = strconv.AppendInt(b, int64(c.sub.counts[subChannel].Load()), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(c.sub.counts[subPattern].Load()), 10)
	b = append(b, " ssub="...)
	b = strconv.AppendInt(b, int64(c.sub.counts[subShard].Load()), 10)
	b = append(b, " multi=-1 cmd="...)
	if cmd := c.lastCmd.Load(); cmd != nil {
		b = append(b, cmd.name...)
	} else {
		b = append(b, "NULL"...)
	}
	b = append(b, " user="...)
	b = append(b, c.userName()...)
	b = append(b, " redir="...)
	b = strconv.AppendInt(b, c.redirect(), 10)
	b = append(b, " resp="...)
	b = strconv.AppendInt(b, int64(c.session.respSeen.Load()), 10)
	b = append(b, " lib-name="...)
	b = append(b, loadString(&c.ident.libName)...)
	b = append(b, " lib-ver="...)
	b = append(b, loadString(&c.ident.libVersion)...)
	return string(b)
}
