//go:build linux

package engine

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redcell/redcell/internal/contain"
)

// loopWaitMillis is how long a loop's epoll wait lasts with idle timeouts to
// check: they are checked about this often.
const loopWaitMillis = 250

// gatherRounds bounds the extra epoll waits (without waiting) a durable
// round makes for input that arrived while it ran (eventLoop.run).
const gatherRounds = 4

// eventLoop is one event loop: its epoll set, the connections in it by
// socket, and a queue of work other goroutines hand it (new connections,
// kills), with an eventfd that wakes it for them.
//
// An event loop serves many plain TCP connections from one goroutine, as
// Redis's does: epoll says which sockets have input, and for each the loop
// reads once, runs the commands and writes their replies. Why: with a
// goroutine per connection, an unpipelined request costs a read, a write, a
// second read that finds nothing (EAGAIN), a park and a wake-up through Go's
// netpoller; per request that was 2 reads, 0.4 epoll waits and 0.3 context
// switches, and the scheduler's share of the server's CPU was about a fifth
// (docs/performance.md). A loop reads only a socket epoll reports readable.
//
// The loop runs only what cannot block: anything else makes the connection
// leave the loop for a goroutine of its own (promote), which it keeps from
// then on, as before loops existed. It leaves for an admin command (SAVE,
// BGSAVE, SHUTDOWN, MONITOR, SLOWLOG, LATENCY), for SUBSCRIBE and
// PSUBSCRIBE, whose outbox others write to (command.offLoop), while a pause
// or a monitor is in force (dispatch), for a reply the socket does not take
// whole, and for a refusal of its input. TLS connections and the maxclients
// refusal never use a loop. In durable mode a round's replies wait for one
// sync of all its changes (commit).
type eventLoop struct {
	e      *Engine
	epfd   int
	wakefd int
	conns  map[int32]*Conn
	events []unix.EpollEvent
	// flushes are the connections with replies to write once the round
	// of events has run (queueFlush); unsynced is set when one of them
	// changed state in durable mode, which the round's commit syncs first.
	flushes  []*Conn
	unsynced bool

	mu      sync.Mutex
	added   []*Conn
	killed  []*Conn
	stopped bool
	done    chan struct{}

	lastSweep int64 // monoNow
}

// loops are a listener's event loops; add spreads connections over them.
type loops struct {
	all  []*eventLoop
	next int
}

// startLoops starts n event loops for s's plain connections, or none if n is
// 0 or the platform has no epoll. Each runs until stopLoops.
func (e *Engine) startLoops(n int) (*loops, error) {
	if n <= 0 {
		return nil, nil
	}
	ls := &loops{}
	for range n {
		l, err := newEventLoop(e)
		if err != nil {
			ls.stop()
			return nil, err
		}
		ls.all = append(ls.all, l)
		go l.run()
	}
	return ls, nil
}

// haveEventLoops: this platform has epoll.
const haveEventLoops = true

func newEventLoop(e *Engine) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(wakefd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &eventLoop{
		e:      e,
		epfd:   epfd,
		wakefd: wakefd,
		conns:  make(map[int32]*Conn),
		events: make([]unix.EpollEvent, 128),
		done:   make(chan struct{}),
	}, nil
}

// stop ends every loop once its connections are gone, and waits for them.
func (ls *loops) stop() {
	if ls == nil {
		return
	}
	for _, l := range ls.all {
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
		l.wake()
	}
	for _, l := range ls.all {
		<-l.done
	}
}

func (l *eventLoop) wake() {
	var one = [8]byte{1}
	_, _ = unix.Write(l.wakefd, one[:])
}

// kill has the loop close c, from any goroutine (conn.Abort).
func (l *eventLoop) kill(c *Conn) {
	l.mu.Lock()
	l.killed = append(l.killed, c)
	l.mu.Unlock()
	l.wake()
}

func (l *eventLoop) run() {
	defer close(l.done)
	defer unix.Close(l.epfd)
	defer unix.Close(l.wakefd)
	for !l.round() {
	}
}

// round waits for events and serves them, then writes the round's replies;
// it reports whether the loop is to end. A panic in a connection's commands
// is contained to it (eventLoop.serve); one anywhere else in the round
// (writing replies, the durable commit) is recovered here: the
// connections with replies of the round pending are closed unanswered, as
// their replies may be half written, and the loop serves on.
func (l *eventLoop) round() (end bool) {
	defer func() {
		if v := recover(); v != nil {
			contain.Record(l.e.logger, "resp", "event loop", v)
			for i, c := range l.flushes {
				l.flushes[i] = nil
				if c.loop == l {
					l.finish(c, errPanicked)
				}
			}
			l.flushes, l.unsynced = l.flushes[:0], false
		}
	}()
	wait := -1
	if l.e.limits.IdleTimeout > 0 && len(l.conns) > 0 {
		wait = loopWaitMillis
	}
	n, err := unix.EpollWait(l.epfd, l.events, wait)
	if err != nil && err != unix.EINTR {
		l.e.logger.Error("event loop: epoll_wait failed", "err", err)
		n = 0
	}
	if l.serveEvents(n) {
		return true
	}
	// In durable mode, input that arrived while the round ran joins
	// it before the commit: one sync for more decisions.
	for i := 0; l.unsynced && i < gatherRounds; i++ {
		n, err = unix.EpollWait(l.epfd, l.events, 0)
		if err != nil || n <= 0 {
			break
		}
		if l.serveEvents(n) {
			return true
		}
	}
	l.flushAll()
	if l.e.limits.IdleTimeout > 0 {
		l.sweep()
	}
	return false
}

// serveEvents serves the first n events of an epoll wait, and reports
// whether the loop is to end (takeWork).
func (l *eventLoop) serveEvents(n int) bool {
	for _, ev := range l.events[:max(n, 0)] {
		if ev.Fd == int32(l.wakefd) {
			if l.takeWork() {
				return true
			}
			continue
		}
		if c := l.conns[ev.Fd]; c != nil {
			l.serve(c)
		}
	}
	return false
}

// takeWork adds the connections handed over and closes those killed. It
// reports whether the loop is to end: stopped, with no connection left.
func (l *eventLoop) takeWork() bool {
	var buf [8]byte
	_, _ = unix.Read(l.wakefd, buf[:])
	l.mu.Lock()
	added, killed, stopped := l.added, l.killed, l.stopped
	l.added, l.killed = nil, nil
	l.mu.Unlock()
	for _, c := range added {
		c.readAt = monoNow()
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.e.logger.Error("event loop: epoll_ctl failed", "err", err)
			l.finish(c, err)
			continue
		}
		l.conns[int32(c.fd)] = c
		if c.killed.Load() {
			l.finish(c, nil) // killed before it was added
		}
	}
	for _, c := range killed {
		if l.conns[int32(c.fd)] == c {
			l.finish(c, nil)
		}
	}
	return stopped && len(l.conns) == 0
}

// serve reads what c sent and runs it (runBatch), then closes c, or hands it
// to a goroutine of its own if it must leave the loop.
func (l *eventLoop) serve(c *Conn) {
	c.partialCommand()
	err := c.rd.Fill()
	if err == nil {
		err = l.e.contained(c, (*Engine).runBatch)
	}
	c.readAt = monoNow()
	switch {
	case errors.Is(err, errLeaveLoop):
		l.promote(c)
	case err != nil || c.closed:
		if err == io.EOF {
			err = nil
		}
		l.finish(c, err)
	}
}

// queueFlush has c's replies written at the end of the round (flushAll),
// after the round's commit if c changed state in durable mode.
func (l *eventLoop) queueFlush(c *Conn) {
	if c.need&NeedSync != 0 {
		l.unsynced = true
		l.flushes = append(l.flushes, c) // even without replies: commit looks at it
		return
	}
	if len(c.out) > 0 {
		l.flushes = append(l.flushes, c)
	}
}

// flushAll writes the replies of the round: a connection whose socket does
// not take them whole leaves the loop to write the rest. In durable mode,
// if a command of the round changed state, the round's changes are synced
// first (commit): no reply of the round is written before then.
func (l *eventLoop) flushAll() {
	if l.unsynced {
		l.commit()
	}
	for i, c := range l.flushes {
		l.flushes[i] = nil
		if c.loop != l {
			continue // closed since
		}
		switch err := c.Flush(); {
		case err == errLeaveLoop:
			l.promote(c)
		case err != nil:
			l.finish(c, err)
		}
	}
	l.flushes = l.flushes[:0]
}

// commit is durable mode's group commit on an event loop, as Redis's
// appendfsync always: one sync (Persistence.Sync) for every change the
// round's commands made, once they have all run and before any of their
// replies is written. A round is one epoll wait's worth of ready
// connections, so under load a sync covers many clients' decisions, and the
// loop's clients wait for the disk together instead of each connection's
// goroutine waking for its own. The loop waits for the sync, as Redis's
// does: input that arrives meanwhile is the next round's.
//
// If the sync fails, the connections that changed state are closed without
// their replies, as syncBeforeReply closes a goroutine's: nothing that is
// not on disk is acknowledged. Those that changed nothing are answered;
// from then on changes are refused (MISCONF, writesRefused).
func (l *eventLoop) commit() {
	l.unsynced = false
	err := l.e.cfg.Sync()
	if err != nil {
		l.e.logger.Error("durable write failed; closing the connections unacknowledged", "err", err)
	}
	for _, c := range l.flushes {
		if c.loop != l || c.need&NeedSync == 0 {
			continue // closed since, or nothing to sync
		}
		c.need &^= NeedSync
		if err != nil {
			c.need |= NeedClose
			c.Drop()
			l.finish(c, nil)
		}
	}
}

// sweep closes the connections idle past Limits.IdleTimeout, as conn.read's
// deadlines do for a connection with a goroutine: silent that long, or a
// command that began arriving that long ago and is not whole. It looks
// about every loopWaitMillis.
func (l *eventLoop) sweep() {
	now := monoNow()
	if now-l.lastSweep < int64(loopWaitMillis*time.Millisecond) {
		return
	}
	l.lastSweep = now
	idle := int64(l.e.limits.IdleTimeout)
	for _, c := range l.conns {
		from := c.readAt
		if c.partialCommand() {
			from = c.cmdStart
		}
		// Bytes waiting unread mean the loop was slow to read them (a
		// long batch of another connection), not the client slow to send:
		// they are read in the next round, and the client judged after.
		if now-from > idle && !inputWaiting(c.fd) {
			l.finish(c, errIdle)
		}
	}
}

// inputWaiting reports whether bytes wait unread in fd's socket.
func inputWaiting(fd int) bool {
	n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	return err == nil && n > 0
}

// errIdle is how an idle connection's end is logged.
var errIdle = errors.New("idle timeout")
