package server

import (
	"strconv"
	"sync/atomic"
	"time"

	"redcell/replication"
	"redcell/storage"
)

// client is one connection's state. The fields without atomics are touched
// only by the connection's own goroutine; the atomic ones are also read by
// CLIENT LIST and INFO from other connections.
type client struct {
	conn    connection
	srv     *Server
	id      int64
	addr    string
	laddr   string
	created time.Time

	resp   int // 2 or 3, switched by HELLO
	authed bool
	// onLoop: an event loop serves the client's connection, so a command
	// that may block must not run there; dispatch sets leaveLoop instead
	// of running it (loop_linux.go).
	onLoop, leaveLoop bool

	name       atomic.Pointer[string]
	libName    atomic.Pointer[string]
	libVersion atomic.Pointer[string]
	lastActive atomic.Int64            // unix nanoseconds of the last command
	lastCmd    atomic.Pointer[command] // looked up last: CLIENT LIST cmd=, dispatch's cache
	respSeen   atomic.Int32            // resp, for other goroutines

	// stripe picks the copy of the shared counters this client writes
	// (statStripes).
	stripe int

	// gated is set while the client's commands need a look before they
	// run (client.gate): inside MULTI, and while restricted, subscribed
	// under RESP2. One flag for both, so that a client in neither state
	// pays one test in dispatch, as it did for MULTI alone. regate keeps
	// them.
	gated, restricted bool

	// unsynced is set in durable mode by a command that changed state: the
	// pipeline's replies wait for a sync.
	unsynced bool

	// closing is set by QUIT and SHUTDOWN: the connection closes after the
	// reply is flushed.
	closing bool

	// failed is set when the running command replies with an error.
	failed bool

	// killed is set, once, by kill; done is closed with it, which wakes the
	// client if its command waits on CLIENT PAUSE.
	killed atomic.Bool
	done   chan struct{}
	// waiting is set while the client's command waits on CLIENT PAUSE;
	// monitoring once it has sent MONITOR (monitor.go). CLIENT LIST shows
	// them as Redis does: flags=b and flags=O.
	waiting    atomic.Bool
	monitoring atomic.Bool
	// outbox is the connection's outbox once started (startOutbox): set by the
	// client's own goroutine before anything that pushes to it can find
	// it. monitorLine, the client's own, is where the lines of its
	// commands are built while anyone monitors.
	outbox      *outbox
	monitorLine []byte

	// subs are the client's subscriptions by kind (pubsub.go), touched by
	// its own goroutine only, under the registry's lock when they change;
	// subCounts count them for CLIENT LIST and KILL on other goroutines.
	// selfPushes are the messages the client published to itself, sent
	// after its command's reply (pubsub.go).
	subs       [subKinds]map[string]struct{}
	subCounts  [subKinds]atomic.Int32
	selfPushes []byte

	// ks is where the client's commands read and change keys: the store,
	// or inside EXEC the transaction holding its keys' locks (cmd_multi.go).
	ks storage.Keyspace
	// tx is the transaction being queued, from MULTI to EXEC or DISCARD;
	// watched are the keys WATCHed for the next EXEC.
	tx      *multiState
	watched []watchedKey

	// replLink is the replication link once the client, a replica, has
	// sent PSYNC (cmd_replication.go); replIP and replPort are where it
	// said it listens (REPLCONF ip-address, listening-port), replEOF that
	// it reads a snapshot streamed without its length (REPLCONF capa eof).
	// isReplica is
	// replLink != nil, for CLIENT LIST and KILL from other goroutines.
	// readOnly (READONLY) lets a cluster replica answer the client's reads
	// of its master's slots; asking (ASKING) lets the next command run on a
	// slot being imported here (cmd_cluster.go).
	readOnly, asking bool
	// slot is the cluster slot of the running command's key, computed by
	// route (cluster mode only; else -1), which the store shards by.
	slot int

	replLink  *replication.Link
	replIP    string
	replPort  int
	replEOF   bool
	isReplica atomic.Bool
}

// kill ends the client's connection from any goroutine, as CLIENT KILL does:
// it closes the socket, so the connection's loop ends after the command it
// is running, if any, without its replies; and a command waiting on CLIENT
// PAUSE is not run. It reports false if the client was killed already.
func (c *client) kill() bool {
	if !c.killed.CompareAndSwap(false, true) {
		return false
	}
	close(c.done)
	c.conn.Abort()
	return true
}

// regate sets gated and restricted from the client's state, wherever a
// transaction begins or ends, its subscriptions change or its protocol does.
func (c *client) regate() {
	c.restricted = c.resp == 2 && c.subscriptions() > 0
	c.gated = c.tx != nil || c.restricted
}

// flags is CLIENT LIST's flags field, as Redis's: S for a replica, O for a
// monitor, P for a subscriber, b for a client whose command waits, in that
// order, or N for none of them.
func (c *client) flags() string {
	var b [4]byte
	f := b[:0]
	if c.isReplica.Load() {
		f = append(f, 'S')
	}
	if c.monitoring.Load() {
		f = append(f, 'O')
	}
	if c.subscribed() {
		f = append(f, 'P')
	}
	if c.waiting.Load() {
		f = append(f, 'b')
	}
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
	b = append(b, c.addr...)
	b = append(b, " laddr="...)
	b = append(b, c.laddr...)
	b = append(b, " fd=-1 name="...)
	b = append(b, loadString(&c.name)...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, int64(now.Sub(c.created)/time.Second), 10)
	b = append(b, " idle="...)
	idle := now.UnixNano() - c.lastActive.Load()
	b = strconv.AppendInt(b, max(idle, 0)/int64(time.Second), 10)
	b = append(b, " flags="...)
	b = append(b, c.flags()...)
	b = append(b, " db=0 sub="...)
	b = strconv.AppendInt(b, int64(c.subCounts[subChannel].Load()), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(c.subCounts[subPattern].Load()), 10)
	b = append(b, " ssub="...)
	b = strconv.AppendInt(b, int64(c.subCounts[subShard].Load()), 10)
	b = append(b, " multi=-1 cmd="...)
	if cmd := c.lastCmd.Load(); cmd != nil {
		b = append(b, cmd.name...)
	} else {
		b = append(b, "NULL"...)
	}
	b = append(b, " user=default redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(c.respSeen.Load()), 10)
	b = append(b, " lib-name="...)
	b = append(b, loadString(&c.libName)...)
	b = append(b, " lib-ver="...)
	b = append(b, loadString(&c.libVersion)...)
	return string(b)
}
