package server

import (
	"strconv"
	"time"

	"github.com/redcell/redcell/engine"
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
// A monitor's lines go through its connection's outbox, whose
// goroutine writes them, so a monitor that reads slowly never holds up a
// command, and one that leaves more than its backlog unread is disconnected.
// What the command path pays: with no monitor, nothing but the load of
// Server.hooks in dispatch; with monitors, one line built per command and
// copied to each.

// monitorFamily is MONITOR, for the command table (newCommandTable).
func monitorFamily() []*command {
	return []*command{
		{name: "monitor", arity: 1, flags: []string{"admin", "noscript", "loading", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Listens for all requests received by the server in real-time.", run: cmdMonitor},
	}
}

// MONITOR
//
// As in Redis, a second MONITOR on a monitoring connection is ignored: no
// reply.
func cmdMonitor(c *client, _ [][]byte, _ time.Time) {
	if c.monitor.on.Load() {
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
	// +OK goes before any line, held back until it is sent: the client,
	// once it has read +OK, sees every command that runs after.
	f := c.startOutbox()
	f.Hold()
	c.monitor.on.Store(true)
	c.regate() // a monitor only reads: no idle timeout
	c.srv.addMonitor(f)
	c.writeOK()
}

// addMonitor starts feeding f the monitor lines.
func (s *Server) addMonitor(f *engine.Outbox) {
	s.monMu.Lock()
	defer s.monMu.Unlock()
	list := append(append([]*engine.Outbox(nil), s.monitorList()...), f)
	s.monitors.Store(&list)
	s.hooks.Or(hookMonitor)
}

// removeMonitor stops feeding f; it is a no-op if f is not fed.
func (s *Server) removeMonitor(f *engine.Outbox) {
	s.monMu.Lock()
	defer s.monMu.Unlock()
	old := s.monitorList()
	list := make([]*engine.Outbox, 0, len(old))
	for _, o := range old {
		if o != f {
			list = append(list, o)
		}
	}
	s.monitors.Store(&list)
	if len(list) == 0 {
		s.hooks.And(^uint32(hookMonitor))
	}
}

func (s *Server) monitorList() []*engine.Outbox {
	if p := s.monitors.Load(); p != nil {
		return *p
	}
	return nil
}

// endMonitor stops feeding c, once its connection has closed or it sent
// RESET.
func (s *Server) endMonitor(c *client) {
	if c.monitor.on.Load() {
		s.removeMonitor(c.outbox)
		c.monitor.on.Store(false)
	}
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
	c.monitor.line = appendMonitorLine(c.monitor.line[:0], now, c.ident.addr, args)
	for _, f := range list {
		f.Push(c.monitor.line)
	}
	if cap(c.monitor.line) > 64<<10 {
		c.monitor.line = nil // one huge command must not pin its line
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
