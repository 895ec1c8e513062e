package server

import (
	"io"
	"strconv"
	"sync"
	"time"
)

// MONITOR: every command any client runs, as a line to every monitor, in
// Redis's format:
//
//	+1732881600.000000 [0 127.0.0.1:50000] "cl.throttle" "user:1" "4" "1" "1"
//
// Each line is fed after its command ran, as Redis 7 feeds it, with AUTH's
// and HELLO ... AUTH's credentials "(redacted)"; commands refused before
// running (unknown, wrong arity, NOAUTH) and admin commands (SHUTDOWN, SAVE,
// CLIENT KILL, MONITOR itself, ...) are not fed, as in Redis.
//
// A monitor's lines queue on its monitor and a goroutine of its own writes
// them, so a monitor that reads slowly never holds up a command. What the
// command path pays: with no monitor, nothing but the load of Server.hooks
// in dispatch; with monitors, one line built per command and copied to each.

// monitorFamily is MONITOR, for the command table (commands.go).
func monitorFamily() []*command {
	return []*command{
		{name: "monitor", arity: 1, flags: []string{"admin", "noscript", "loading", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Listens for all requests received by the server in real-time.", run: cmdMonitor},
	}
}

// monitor is one monitoring client's feed. Once a client monitors, its own
// replies go through the feed too (conn.flush), so that they and its lines
// reach it in order, written by one goroutine.
type monitor struct {
	c     *client
	w     io.Writer // the connection, under the idle timeout (idleWriter)
	limit int       // the most bytes that may wait in queue

	mu      sync.Mutex
	queue   []byte // lines and replies not yet taken by the writer
	stopped bool   // no more is queued; the writer ends once queue is written
	wake    chan struct{}
	done    chan struct{} // closed when the writer has ended
}

// monitorBacklog is the most a monitor may leave unread before it is
// disconnected: Limits.MaxOutput, the bound on any client's unsent replies
// (32 MiB by default, some 200 000 lines of a CL.THROTTLE). A client's
// replies grow only with what it asks for, but a monitor's grow with every
// other client's commands, so without a bound one monitor that stopped
// reading would make the server's memory grow at its command rate. With no
// output limit configured monitors still get DefaultMaxOutput. The writer
// holds one taken batch besides, so a monitor costs at most twice this.
func (s *Server) monitorBacklog() int {
	if s.limits.MaxOutput > 0 {
		return int(s.limits.MaxOutput)
	}
	return DefaultMaxOutput
}

// MONITOR
//
// As in Redis, a second MONITOR on a monitoring connection is ignored: no
// reply.
func cmdMonitor(c *client, _ [][]byte, _ time.Time) {
	if c.mon != nil {
		return
	}
	if c.inExec() {
		// A transaction's client expects a reply to every command.
		c.writeError(errMonitorInExec)
		return
	}
	if c.conn.NetConn() == nil {
		c.writeError(errMonitorNoConn)
		return
	}
	c.writeOK()
	m := &monitor{c: c, limit: c.srv.monitorBacklog(),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	// The replies of this batch so far, +OK last, go before any line; the
	// writer starts once the monitor is fed, so that the client, once it
	// has read +OK, sees every command that runs after.
	m.w = c.conn.startFeed(m)
	c.mon = m
	c.monitoring.Store(true)
	c.srv.addMonitor(m)
	go m.run()
}

// startFeed makes m the connection's writer: what this batch has queued
// goes first, and flush hands every later batch to m.
func (c *conn) startFeed(m *monitor) io.Writer {
	m.push(c.out)
	c.out = c.out[:0]
	c.feed = m
	return idleWriter{c.nc, c.idle}
}

// addMonitor starts feeding m.
func (s *Server) addMonitor(m *monitor) {
	s.monMu.Lock()
	defer s.monMu.Unlock()
	list := append(append([]*monitor(nil), s.monitorList()...), m)
	s.monitors.Store(&list)
	s.hooks.Or(hookMonitor)
}

// removeMonitor stops feeding m; it is a no-op if m is not fed.
func (s *Server) removeMonitor(m *monitor) {
	s.monMu.Lock()
	defer s.monMu.Unlock()
	old := s.monitorList()
	list := make([]*monitor, 0, len(old))
	for _, o := range old {
		if o != m {
			list = append(list, o)
		}
	}
	s.monitors.Store(&list)
	if len(list) == 0 {
		s.hooks.And(^uint32(hookMonitor))
	}
}

func (s *Server) monitorList() []*monitor {
	if p := s.monitors.Load(); p != nil {
		return *p
	}
	return nil
}

// endMonitor stops c's feed when its connection has closed, and waits for
// its writer, whose writes fail on the closed connection.
func (s *Server) endMonitor(c *client) {
	m := c.mon
	if m == nil {
		return
	}
	s.removeMonitor(m)
	m.stop()
	<-m.done
}

// feedMonitors sends every monitor the line of the command c ran at now.
func (s *Server) feedMonitors(c *client, args [][]byte, now time.Time) {
	if shown := c.lastCmd.Load(); shown == nil || shown.admin {
		return // CLIENT's subcommands are lastCmd: CLIENT KILL is admin, CLIENT ID is not
	}
	list := s.monitorList()
	if len(list) == 0 {
		return
	}
	c.monitorLine = appendMonitorLine(c.monitorLine[:0], now, c.addr, args)
	for _, m := range list {
		m.push(c.monitorLine)
	}
	if cap(c.monitorLine) > 64<<10 {
		c.monitorLine = nil // one huge command must not pin its line
	}
}

// push queues b for the monitor, or, if that would put it beyond its
// backlog, disconnects it.
func (m *monitor) push(b []byte) {
	if len(b) == 0 {
		return
	}
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	if len(m.queue)+len(b) > m.limit {
		m.stopped = true
		m.queue = nil
		m.mu.Unlock()
		m.fellBehind()
		return
	}
	m.queue = append(m.queue, b...)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default: // the writer has been woken already
	}
}

// fellBehind disconnects a monitor that left more than its backlog unread.
func (m *monitor) fellBehind() {
	s := m.c.srv
	s.cfg.Logger.Warn("monitor closed for falling behind: its unread lines passed the output buffer limit",
		"addr", m.c.addr, "id", m.c.id, "limit", m.limit)
	s.removeMonitor(m)
	m.c.kill()
	m.wakeWriter()
}

// stop ends the feed: the writer writes what is queued, then ends.
func (m *monitor) stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.wakeWriter()
}

func (m *monitor) wakeWriter() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// run writes the queue to the connection as it fills, until the feed stops
// or a write fails.
func (m *monitor) run() {
	defer close(m.done)
	var batch []byte
	for range m.wake {
		m.mu.Lock()
		batch, m.queue = m.queue, batch[:0]
		stopped := m.stopped
		m.mu.Unlock()
		if len(batch) > 0 {
			if _, err := m.w.Write(batch); err != nil {
				m.c.kill()
				return
			}
		}
		if stopped {
			return
		}
		if cap(batch) > 64<<10 {
			batch = nil // a burst's buffer is not kept
		}
	}
}

// appendMonitorLine appends the MONITOR line of args, run at now by the
// client at addr, to b: "+<seconds>.<microseconds> [0 <addr>] " and each
// argument quoted as Redis's sdscatrepr quotes it, credentials redacted.
func appendMonitorLine(b []byte, now time.Time, addr string, args [][]byte) []byte {
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " [0 "...)
	b = append(b, addr...)
	b = append(b, "] "...)
	// AUTH's user and password are redacted, and the two arguments after
	// HELLO's AUTH option. Redis redacts HELLO's only once its protocol
	// version has parsed; redcell whatever precedes them.
	auth, hello := equalFold(args[0], "auth"), equalFold(args[0], "hello")
	pending, skip := 0, false // arguments still to redact; SETNAME's value is next
	for i, a := range args {
		switch {
		case i == 0:
		case auth:
			a = redactedArg
		case pending > 0:
			a = redactedArg
			pending--
		case skip:
			skip = false
		case hello:
			more := len(args) - 1 - i
			if equalFold(a, "auth") && more >= 2 {
				pending = 2
			} else if equalFold(a, "setname") && more >= 1 {
				skip = true
			}
		}
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

var redactedArg = []byte("(redacted)")

// appendRepr appends s quoted as Redis's sdscatrepr does: in double quotes,
// with \\ \" \n \r \t \a \b escaped and any other byte outside printable
// ASCII as \xHH.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&0xf])
			}
		}
	}
	return append(b, '"')
}
