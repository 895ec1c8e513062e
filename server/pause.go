package server

import (
	"math"
	"time"
)

// CLIENT PAUSE and UNPAUSE. While a pause is in force, the commands of every
// client but the one that paused (ALL), or their write commands (WRITE:
// those flagged "write" in the command table), wait until CLIENT UNPAUSE or
// the pause's end, then run; a client killed while it waits runs nothing
// more. The client that paused is spared so that it can lift the pause:
// Redis pauses it too, so that under ALL only the timeout ends a pause.
//
// What the command path pays: with no pause (and no monitor) nothing but the
// load of Server.hooks in dispatch; the pause itself is looked at only when
// hookPause is set.

// pauseState is one pause. It never changes once published; a new CLIENT
// PAUSE publishes a new one and closes the old one's changed, which wakes
// the commands waiting on it to look again.
type pauseState struct {
	end     int64 // Unix nanoseconds on the server's clock
	all     bool  // every command waits, not only write commands
	by      int64 // the id of the client that paused: its commands never wait
	changed chan struct{}
}

// The bits of Server.hooks.
const (
	hookPause   = 1 << iota // a pause may be in force: Server.pause
	hookMonitor             // a client is monitoring: Server.monitors
)

// CLIENT PAUSE timeout [WRITE|ALL]
//
// timeout is in milliseconds. As in Redis, a pause never shortens one in
// force, and WRITE does not weaken an ALL in force; PAUSE 0 pauses nothing
// new.
func cmdClientPause(c *client, args [][]byte, now time.Time) {
	if len(args) > 4 {
		c.writeError(errSubcommandSyntax(args[1], "CLIENT"))
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case equalFold(args[3], "write"):
			all = false
		case equalFold(args[3], "all"):
		default:
			c.writeError(errPauseMode)
			return
		}
	}
	ms, ok := parseInt(args[2])
	switch {
	case !ok:
		c.writeError(errTimeoutInteger)
		return
	case ms < 0:
		c.writeError(errTimeoutNegative)
		return
	case ms > math.MaxInt64-now.UnixMilli(): // Redis's bound: now plus timeout in ms
		c.writeError(errTimeoutRange)
		return
	}
	end := int64(math.MaxInt64) // past 2262, the end of Go's time: for ever
	if at := now.UnixNano(); ms <= (math.MaxInt64-at)/int64(time.Millisecond) {
		end = at + ms*int64(time.Millisecond)
	}
	c.srv.pauseUntil(end, all, c.id, now)
	c.writeOK()
}

// pauseUntil puts a pause in force until end, merged with the one in force.
func (s *Server) pauseUntil(end int64, all bool, by int64, now time.Time) {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	old := s.pause.Load()
	if old != nil && old.end > now.UnixNano() {
		end = max(end, old.end)
		all = all || old.all
	}
	if end <= now.UnixNano() {
		return // PAUSE 0 with no pause in force
	}
	s.pause.Store(&pauseState{end: end, all: all, by: by, changed: make(chan struct{})})
	if old != nil {
		close(old.changed)
	}
	s.hooks.Or(hookPause)
}

// unpause lifts the pause in force, if any: CLIENT UNPAUSE.
func (s *Server) unpause() { s.liftPause(nil) }

// liftPause ends the pause p, or whichever is in force if p is nil, and lets
// the waiting commands run.
func (s *Server) liftPause(p *pauseState) {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	cur := s.pause.Load()
	if cur == nil || (p != nil && cur != p) {
		return
	}
	s.pause.Store(nil)
	close(cur.changed)
	s.hooks.And(^uint32(hookPause))
}

// waitPause holds c's command spec while a pause applies to it, and returns
// the clock's reading when it may run, or false if c was killed meanwhile.
// The pause's end is on the server's clock; the wait for it is on the real
// one, for as long as the server's clock says is left, then it looks again.
func (s *Server) waitPause(c *client, spec *command, now time.Time) (time.Time, bool) {
	write := spec.write || spec.name == "exec" && c.tx.multi != nil && c.tx.multi.writes()
	for {
		p := s.pause.Load()
		if p == nil || p.by == c.id || (!p.all && !write) || c.monitor.on.Load() {
			return now, true // monitors, as Redis's replicas, are never paused
		}
		left := time.Duration(p.end - now.UnixNano())
		if left <= 0 {
			s.liftPause(p)
			continue
		}
		c.waiting.Store(true)
		timer := time.NewTimer(left)
		select {
		case <-p.changed:
		case <-timer.C:
		case <-c.conn.Done():
		}
		timer.Stop()
		c.waiting.Store(false)
		if c.killed() {
			return now, false
		}
		now = s.now()
	}
}
