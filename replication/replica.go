package replication

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/resp"
)

// The replica side: a goroutine that connects to the master, shakes hands
// as a Redis replica does (PING, AUTH, REPLCONF listening-port, REPLCONF
// capa, PSYNC), loads the snapshot of a full resynchronization, then applies
// the stream and acknowledges its offset every second, reconnecting with
// backoff whenever the link breaks. What it applies it also appends to its
// own backlog, byte for byte, so that its replicas get the same stream and
// it can continue theirs once promoted.
//
// The upstream's goroutine never takes Node.mu: ReplicaOf stops it while
// holding that lock.

type upstream struct {
	n    *Node
	host string
	port int

	stopCh chan struct{}
	done   chan struct{}

	mu        sync.Mutex
	conn      net.Conn // the current connection, closed by stop
	state     string   // ROLE's: connect, connecting, sync, connected
	downSince time.Time

	lastIO atomic.Int64 // Unix nanoseconds of the last byte from the master
	// linked is set once this link has loaded a snapshot or continued the
	// stream: the node's replicas may sync from it.
	linked atomic.Bool
	// ignored counts commands the stream carried that redcell does not
	// apply (a master's string that is no redcell state).
	ignored atomic.Int64

	writeMu sync.Mutex // the apply loop's ACKs and the ticker's

	// failover: the next PSYNC is PSYNC ... FAILOVER (Node.FailoverTo),
	// until the master has answered one. Meanwhile this node serves no
	// replica: the one taking over must not become this node's replica.
	failover atomic.Bool
}

// startUpstream starts the link to host:port. With failover its first
// PSYNC asks the master, this node's replica until now, to take over
// (FAILOVER).
func (n *Node) startUpstream(host string, port int, failover bool) *upstream {
	u := &upstream{n: n, host: host, port: port, stopCh: make(chan struct{}), done: make(chan struct{}),
		state: "connect", downSince: n.cfg.Now()}
	u.failover.Store(failover)
	go u.run()
	return u
}

// stop ends the link and waits for its goroutine.
func (u *upstream) stop() {
	close(u.stopCh)
	u.mu.Lock()
	if u.conn != nil {
		_ = u.conn.Close()
	}
	u.mu.Unlock()
	<-u.done
}

func (u *upstream) stopped() bool {
	select {
	case <-u.stopCh:
		return true
	default:
		return false
	}
}

// synced reports whether this replica can serve replicas of its own: its
// link loaded a snapshot or continued the stream, and it is not handing
// over to its master (FAILOVER).
func (u *upstream) synced() bool { return u.linked.Load() && !u.failover.Load() }

func (u *upstream) setState(s string) {
	u.mu.Lock()
	if s != "connected" && u.state == "connected" {
		u.downSince = u.n.cfg.Now()
	}
	u.state = s
	u.mu.Unlock()
}

func (u *upstream) fill(st *Status) {
	u.mu.Lock()
	defer u.mu.Unlock()
	st.MasterHost, st.MasterPort, st.State = u.host, u.port, u.state
	st.LinkUp = u.state == "connected"
	st.SyncInProgress = u.state == "sync"
	if !st.LinkUp {
		st.LinkDownSince = u.downSince
	}
	if t := u.lastIO.Load(); t != 0 {
		st.LastIO = time.Unix(0, t)
	}
}

func (u *upstream) run() {
	defer close(u.done)
	const minBackoff, maxBackoff = 100 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	for !u.stopped() {
		start := time.Now()
		// A panic in the session (applying the master's stream, say) is
		// recorded and ends the session as a lost link does: the replica
		// reconnects and syncs again (contain.Run).
		err := contain.Run(u.n.log, "replication", "link to master", u.session)
		u.setState("connect")
		if u.stopped() {
			return
		}
		u.n.log.Warn("replication: link to master lost", "master", addr(u.host, u.port), "err", err)
		if time.Since(start) > 10*time.Second {
			backoff = minBackoff // it worked for a while: retry soon
		}
		select {
		case <-u.stopCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session is one connection to the master, from dialing to its end.
func (u *upstream) session() error {
	n := u.n
	u.setState("connecting")
	conn, err := n.cfg.Dial(addr(u.host, u.port))
	if err != nil {
		return err
	}
	u.mu.Lock()
	if u.stopped() {
		u.mu.Unlock()
		_ = conn.Close()
		return ErrClosed
	}
	u.conn = conn
	u.mu.Unlock()
	defer conn.Close()

	// Every read from the master gets the link's timeout and notes that
	// bytes came, whoever reads (the handshake, the snapshot, the stream).
	br := bufio.NewReaderSize(&deadlineReader{conn: conn, timeout: n.cfg.Timeout, lastIO: &u.lastIO}, 64<<10)
	call := func(args ...string) (string, error) {
		if err := u.send(conn, args...); err != nil {
			return "", err
		}
		return u.readLine(br)
	}
	if _, err := call("PING"); err != nil {
		return err // an error reply (-NOAUTH) is a line, not an error
	}
	n.authMu.Lock()
	user, pass := n.cfg.MasterUser, n.cfg.MasterAuth
	n.authMu.Unlock()
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if reply, err := call(args...); err != nil {
			return err
		} else if !strings.HasPrefix(reply, "+") {
			return fmt.Errorf("AUTH: %s", reply)
		}
	}
	if _, err := call("REPLCONF", "listening-port", strconv.Itoa(n.cfg.ListeningPort)); err != nil {
		return err
	}
	if _, err := call("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	id, off := "?", int64(-1)
	if n.hasStream.Load() {
		n.streamMu.Lock()
		id = n.replID
		_, end := n.backlog.offsets()
		off = end + 1
		n.streamMu.Unlock()
	}
	psync := []string{"PSYNC", id, strconv.FormatInt(off, 10)}
	if u.failover.Load() {
		psync = append(psync, "FAILOVER")
	}
	reply, err := call(psync...)
	if err != nil {
		return err
	}
	u.failover.Store(false) // answered: a master that took over, or refused, is asked no more
	switch {
	case strings.HasPrefix(reply, "+FULLRESYNC "):
		f := strings.Fields(reply)
		if len(f) != 3 {
			return fmt.Errorf("PSYNC: %q", reply)
		}
		start, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || start < 0 {
			return fmt.Errorf("PSYNC: %q", reply)
		}
		// The master will not continue the stream: until a snapshot is
		// loaded whole, the store holds no stream to continue, and none
		// for this node's replicas to sync from.
		n.hasStream.Store(false)
		u.linked.Store(false)
		u.setState("sync")
		if err := u.load(conn, br, f[1], start); err != nil {
			return fmt.Errorf("loading the master's snapshot: %w", err)
		}
	case strings.HasPrefix(reply, "+CONTINUE"):
		if f := strings.Fields(reply); len(f) == 2 && f[1] != id {
			// The master's stream has a new id (it was promoted): ours
			// continues it, the old one kept as replID2.
			n.streamMu.Lock()
			_, end := n.backlog.offsets()
			n.replID2, n.offset2, n.replID = n.replID, end, f[1]
			n.streamMu.Unlock()
		}
		u.linked.Store(true)
		n.log.Info("replication: continuing the master's stream", "master", addr(u.host, u.port), "offset", off-1)
	default:
		return fmt.Errorf("PSYNC: %s", reply)
	}
	u.setState("connected")
	return u.apply(conn, br)
}

func (u *upstream) send(conn net.Conn, args ...string) error {
	b := resp.AppendCommand(nil, args...)
	u.writeMu.Lock()
	defer u.writeMu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(u.n.cfg.Timeout))
	_, err := conn.Write(b)
	return err
}

// readLine reads one reply line, skipping the empty lines a master sends to
// keep the link alive while it prepares a snapshot.
func (u *upstream) readLine(br *bufio.Reader) (string, error) {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return "", errors.New("a reply line longer than 64 KiB")
			}
			return "", err
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s != "" {
			return s, nil
		}
	}
}

// apply applies the stream until the link breaks, acknowledging the offset
// every second.
func (u *upstream) apply(conn net.Conn, br *bufio.Reader) error {
	n := u.n
	stopAcks := make(chan struct{})
	defer close(stopAcks)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopAcks:
				return
			case <-t.C:
				_, end := n.backlog.offsets()
				if u.send(conn, "REPLCONF", "ACK", strconv.FormatInt(end, 10)) != nil {
					_ = conn.Close()
					return
				}
			}
		}
	}()
	// The commands of one read are applied, then appended to the backlog
	// together, as the master sent them. Applying first keeps the order a
	// snapshot for this node's own replicas relies on (fullSync): what the
	// backlog holds before a snapshot's offset is in the snapshot; a
	// command applied but not yet appended is in both, and applying a
	// state twice is harmless.
	rd := resp.NewReader(br, resp.Limits{})
	getAck := false
	for {
		used := len(rd.Used())
		args, err := rd.Next(true)
		if err != nil {
			return fmt.Errorf("the master's stream: %w", err)
		}
		// The offset counts the bytes the master sent. Anything but a
		// multibulk command as a master writes it (an inline command, an
		// empty one or a blank line, which Next skips) is not what a
		// master sends: a +CONTINUE could resume inside it.
		if cmd := rd.Used()[used:]; args == nil && len(cmd) > 0 ||
			args != nil && (cmd[0] != '*' || len(cmd) != commandLen(args)) {
			return errors.New("the master's stream: bytes that are not a multibulk command as a master sends one")
		}
		if args != nil {
			getAck = u.applyCommand(args) || getAck
			continue
		}
		n.appendStream(rd.Used())
		if getAck {
			_, end := n.backlog.offsets()
			if err := u.send(conn, "REPLCONF", "ACK", strconv.FormatInt(end, 10)); err != nil {
				return err
			}
			getAck = false
		}
		if err := rd.Fill(); err != nil {
			return err
		}
	}
}

// applyCommand applies one command of the stream and reports whether it is
// REPLCONF GETACK.
func (u *upstream) applyCommand(args [][]byte) (getAck bool) {
	n := u.n
	var lower [8]byte // the longest name below, REPLCONF
	name := args[0]
	if len(name) <= len(lower) {
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		name = lower[:len(name)]
	}
	switch string(name) {
	case "set":
		if len(args) < 3 {
			break
		}
		kind, exp, state, err := statecodec.Decode(args[2])
		if err != nil {
			u.ignore(string(name), err)
			return false
		}
		if err := n.store.Apply(args[1], kind, exp, state); err != nil {
			u.ignore(string(name), err)
		}
		return false
	case "del", "unlink":
		now := gcra.InstantOf(n.cfg.Now())
		for _, k := range args[1:] {
			n.store.Delete(k, now)
		}
		return false
	case "flushall", "flushdb":
		n.store.Clear()
		return false
	case "replconf":
		return len(args) >= 2 && strings.EqualFold(string(args[1]), "getack")
	case "ping", "select", "multi", "exec":
		return false
	}
	u.ignore(string(name), errors.New("not a command redcell replicates"))
	return false
}

func (u *upstream) ignore(name string, err error) {
	if u.ignored.Add(1) == 1 {
		u.n.log.Warn("replication: a command of the master's stream was not applied (logged once)", "command", name, "err", err)
	}
}

// deadlineReader reads from conn, giving each read the link's timeout, and
// notes when bytes came.
type deadlineReader struct {
	conn    net.Conn
	timeout time.Duration
	lastIO  *atomic.Int64
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	_ = d.conn.SetReadDeadline(time.Now().Add(d.timeout))
	n, err := d.conn.Read(p)
	if n > 0 {
		d.lastIO.Store(time.Now().UnixNano())
	}
	return n, err
}
