package replication

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/storage"
)

// The master side: the feed goroutine takes the store's changes into the
// backlog every FeedInterval while any replica is linked; a Link per replica
// sends it the snapshot, then the backlog from its offset on.

// pingCommand and getAckCommand are what a master sends besides states.
const (
	pingCommand   = "*1\r\n$4\r\nPING\r\n"
	getAckCommand = "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"
)

// startFeedLocked starts the feed goroutine unless it runs; n.mu held.
func (n *Node) startFeedLocked() {
	if n.feeding {
		return
	}
	n.feeding = true
	n.stopFeed, n.feedDone = make(chan struct{}), make(chan struct{})
	go n.feed(n.stopFeed, n.feedDone)
}

// stopFeedLocked stops the feed goroutine and waits for it; n.mu held.
func (n *Node) stopFeedLocked() {
	if !n.feeding {
		return
	}
	close(n.stopFeed)
	<-n.feedDone
	n.feeding = false
}

func (n *Node) feed(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(n.cfg.FeedInterval)
	defer tick.Stop()
	lastPing := n.cfg.Now()
	var buf []byte
	var changes []storage.Change
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		// A panic while taking the changes is recorded and the next tick
		// tries again (contain.Run): the feed must outlive a bug in one.
		_ = contain.Run(n.log, "replication", "feed", func() error {
			buf, changes = n.takeFeed(buf[:0], changes[:0])
			return nil
		})
		if now := n.cfg.Now(); len(buf) > 0 {
			lastPing = now
		} else if now.Sub(lastPing) >= n.cfg.PingInterval {
			n.appendStream([]byte(pingCommand))
			lastPing = now
		}
		if cap(buf) > 1<<20 {
			buf, changes = nil, nil // a burst's buffers are not kept
		}
	}
}

// takeFeed takes every change recorded so far into the stream, and returns
// its buffers for reuse.
func (n *Node) takeFeed(buf []byte, changes []storage.Change) ([]byte, []storage.Change) {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	for i := 0; i < n.store.Shards(); i++ {
		changes = n.store.TakeFeed(i, changes[:0])
		for _, ch := range changes {
			buf = appendChange(buf, ch)
		}
	}
	n.backlog.append(buf)
	return buf, changes
}

// appendStream appends raw commands to the stream.
func (n *Node) appendStream(p []byte) {
	n.streamMu.Lock()
	n.backlog.append(p)
	n.streamMu.Unlock()
}

// Sync takes what changed so far into the stream and returns the stream's
// end: once a replica has acknowledged it, it holds every change made before
// the call (WAIT).
func (n *Node) Sync() int64 {
	if !n.IsReplica() {
		n.mu.Lock()
		feeding := n.feeding
		n.mu.Unlock()
		if feeding {
			n.takeFeed(nil, nil)
		}
	}
	_, end := n.backlog.offsets()
	return end
}

// Link is one replica's connection, from PSYNC on.
type Link struct {
	n    *Node
	conn net.Conn
	ip   string
	port int
	eof  bool // the snapshot is streamed, ended by a mark ($EOF:)

	state   atomic.Value // string: wait_bgsave, send_bulk, online
	acked   atomic.Int64 // the offset the replica last acknowledged
	ackedAt atomic.Int64 // when, in Unix nanoseconds
	once    sync.Once
	done    chan struct{}
}

// Replica is what a replica told its master of itself before PSYNC.
type Replica struct {
	// IP and Port are where Sentinel finds it (its address, or REPLCONF
	// ip-address, and REPLCONF listening-port).
	IP   string
	Port int
	// EOF: it reads a snapshot streamed without its length, ended by a
	// mark (REPLCONF capa eof), as Redis's diskless sync sends one.
	EOF bool
}

// PSync serves PSYNC replid offset on conn, a replica's connection that the
// caller hands over: the link writes the reply (+FULLRESYNC and the
// snapshot, or +CONTINUE) and then the stream, from a goroutine of its own,
// until Close or a write fails. The connection goes on reading the
// replica's REPLCONF ACKs, which the caller passes to Ack. An empty replID
// is the old SYNC: a full resynchronization whose snapshot comes without
// the +FULLRESYNC line.
func (n *Node) PSync(conn net.Conn, r Replica, replID string, offset int64) (*Link, error) {
	l := &Link{n: n, conn: conn, ip: r.IP, port: r.Port, eof: r.EOF && replID != "", done: make(chan struct{})}
	l.ackedAt.Store(n.cfg.Now().UnixNano())
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	if n.IsReplica() && (n.upstream == nil || !n.upstream.synced()) {
		n.mu.Unlock()
		return nil, errNotSynced
	}
	n.links[l] = struct{}{}
	if !n.IsReplica() {
		n.store.SetFeed(true)
		n.startFeedLocked()
	}
	h, full := n.continueFrom(l, replID, offset)
	n.mu.Unlock()
	switch {
	case !full:
		n.syncPartialOK.Add(1)
	case replID != "?" && replID != "":
		n.syncPartialErr.Add(1)
		n.syncFull.Add(1)
	default:
		n.syncFull.Add(1)
	}
	if full {
		l.state.Store("wait_bgsave")
		go l.contained("full sync", func() { l.fullSync(replID != "") })
	} else {
		l.state.Store("online")
		l.acked.Store(h.off)
		n.RefreshGoodReplicas()
		reply := "+CONTINUE " + n.currentID() + "\r\n"
		go l.contained("stream", func() { l.stream(h, []byte(reply)) })
	}
	return l, nil
}

// TakeOver is a replica's answer to PSYNC replid offset FAILOVER from its
// master (FAILOVER on the master): replid must be the stream this node
// follows; it then becomes a master, as REPLICAOF NO ONE, and the PSYNC
// that follows continues the stream for the old master, now its replica.
func (n *Node) TakeOver(replID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.streamMu.Lock()
	mine := n.replID
	n.streamMu.Unlock()
	if n.upstream == nil || replID != mine {
		return ErrFailoverReplID
	}
	n.promoteLocked()
	return nil
}

// ErrFailoverReplID refuses PSYNC ... FAILOVER from a node whose stream
// this one does not follow.
var ErrFailoverReplID = errors.New("replication: PSYNC FAILOVER replid must match my replid")

// errNotSynced refuses a replica of a replica that has no stream yet.
var errNotSynced = fmt.Errorf("NOMASTERLINK Can't SYNC while not connected with my master")

func (n *Node) currentID() string {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	return n.replID
}

// continueFrom decides whether a replica asking to continue
// replID's stream after offset-1 can: the id is this stream's (or the
// previous master's, up to offset2) and the backlog still holds offset.
// If it can, it returns the link's hold on the stream from there.
func (n *Node) continueFrom(l *Link, replID string, offset int64) (h *hold, full bool) {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	first, end := n.backlog.offsets()
	idOK := replID == n.replID || (replID == n.replID2 && offset <= n.offset2+1)
	from := offset - 1 // PSYNC names the first byte it lacks; offsets count bytes
	if !idOK || !n.backlog.active() || from < first || from > end {
		return nil, true
	}
	return n.backlog.hold(from, l.lost), false
}

// stream sends first, then the stream from h on, until the link closes or
// falls behind by more than the backlog holds for it; it releases h.
func (l *Link) stream(h *hold, first []byte) {
	defer l.n.backlog.release(h)
	if len(first) > 0 {
		if err := l.write(first); err != nil {
			l.fail(err)
			return
		}
	}
	buf := make([]byte, 64<<10)
	for {
		k, grown, ok, behind := l.n.backlog.read(h, buf)
		if !ok {
			l.lost(behind)
			return
		}
		if k > 0 {
			if err := l.write(buf[:k]); err != nil {
				l.fail(err)
				return
			}
			continue
		}
		select {
		case <-grown:
		case <-l.done:
			return
		}
	}
}

// lost drops a link whose replica fell behind by more than the backlog
// keeps for it.
func (l *Link) lost(behind int64) {
	l.fail(fmt.Errorf("the replica fell %d bytes behind, more than the replica buffer limit of %d bytes holds",
		behind, l.n.backlog.limit))
}

func (l *Link) write(p []byte) error {
	_, err := linkWriter{l}.Write(p)
	return err
}

// contained runs the link's work (its full sync, its stream): a panic in it
// is recorded (contain.Record) and ends the link alone, as a failed write
// does; the replica reconnects and syncs again.
func (l *Link) contained(name string, work func()) {
	if err := contain.Run(l.n.log, "replication", name, func() error { work(); return nil }); err != nil {
		l.fail(err)
	}
}

func (l *Link) fail(err error) {
	select {
	case <-l.done:
		return // closed: the error is the closing's
	default:
	}
	l.n.log.Warn("replication: link to replica lost", "replica", addr(l.ip, l.port), "err", err)
	l.Close()
}

// Ack records REPLCONF ACK offset from the replica.
func (l *Link) Ack(offset int64) {
	if offset > l.acked.Load() {
		l.acked.Store(offset)
	}
	l.ackedAt.Store(l.n.cfg.Now().UnixNano())
	l.n.mu.Lock()
	close(l.n.acked)
	l.n.acked = make(chan struct{})
	l.n.mu.Unlock()
	l.n.RefreshGoodReplicas()
}

// Close ends the link and closes its connection. It is idempotent.
func (l *Link) Close() {
	l.once.Do(l.end)
	// Not inside the once: dropLinksLocked runs it holding n.mu.
	n := l.n
	n.mu.Lock()
	// The feed goes on without replicas, so that one that comes back
	// within the backlog continues (+CONTINUE).
	delete(n.links, l)
	n.mu.Unlock()
	n.RefreshGoodReplicas()
}

// end stops the link's stream and closes its connection, once.
func (l *Link) end() {
	close(l.done)
	_ = l.conn.Close()
}

func (l *Link) status(now time.Time) ReplicaStatus {
	return ReplicaStatus{IP: l.ip, Port: l.port, State: l.state.Load().(string), Offset: l.acked.Load(),
		Lag: now.Sub(time.Unix(0, l.ackedAt.Load()))}
}

func sortReplicas(r []ReplicaStatus) {
	slices.SortFunc(r, func(a, b ReplicaStatus) int {
		if a.IP != b.IP {
			return cmpString(a.IP, b.IP)
		}
		return a.Port - b.Port
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dropLinksLocked closes every replica's link, n.mu held (as Link.Close
// takes it, they are ended here directly).
func (n *Node) dropLinksLocked() {
	for l := range n.links {
		l.once.Do(l.end)
		delete(n.links, l)
	}
}
