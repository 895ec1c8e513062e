package server

import (
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/engine"
)

// Run is the client's engine.Session: it runs one command of its batch at
// now: look it up, check arity, then authentication and the user's ACL
// rules, in that order as Redis does, then run it. It returns the clock
// reading taken when the command ended, if it took one, else now: within a
// batch each command starts at the reading that ended the one before, so a
// decision costs one clock read. While the pipeline repeats a command that
// looks its key up, it first readies the memory the next ones will read
// (prefetchAhead).
func (c *client) Run(args [][]byte, now time.Time) time.Time {
	s := c.srv
	if last := c.lastCmd.Load(); last != nil && last.prefetchKey && !c.gated && s.store.Prefetching() {
		s.prefetchAhead(c.conn.PeekKeys())
	}
	// A pipeline repeats one command: comparing the name with the one the
	// last lookup was for costs less than the table lookup.
	spec := c.sent.cmd
	if spec == nil || !c.sent.is(args[0]) {
		if spec = s.lookup(args[0]); spec == nil {
			c.flagTransaction()
			c.writeError(errUnknownCommand(args))
			return now
		}
		c.sent.set(args[0], spec)
	}
	if c.lastCmd.Load() != spec {
		c.lastCmd.Store(spec) // before the checks, as Redis sets lastcmd
	}
	if !spec.arityOK(len(args)) {
		spec.stats.rejected.Add(1)
		c.flagTransaction()
		c.writeError(errWrongArgs(spec.name))
		return now
	}
	// One word says whether the connection must authenticate first or
	// its user's rules must be checked: 0 for the default user without
	// ACLs, so the check costs that user one branch.
	if access := c.access.Load(); access != 0 && c.refuse(access, spec, args, now) {
		return now
	}
	c.lastActive.Store(now.UnixNano())
	if s.cluster != nil && !c.route(spec, args) {
		spec.stats.rejected.Add(1)
		return now
	}
	if c.gated && c.gate(spec, args) {
		return now
	}
	hooked := s.hooks.Load() != 0
	if (spec.offLoop || hooked) && c.conn.OnLoop() {
		// Admin commands (SAVE, SHUTDOWN, MONITOR, ...), blocking ones
		// (WAIT) and a pause may wait, and an outbox writes through the
		// netpoller (SUBSCRIBE): not on an event loop, which serves other
		// clients. It runs once the connection has left.
		c.conn.Need(engine.NeedGoroutine)
		return now
	}
	if hooked {
		return s.executeHooked(c, spec, args, now)
	}
	return s.execute(c, spec, args, now)
}

// sentName is the name a client last sent a command by, as it spelled it,
// and the command it named: client.Run's cache. A pipeline repeats its command
// spelled the same way each time, so comparing the bytes as they are (a
// memequal) is enough to know it, where the table lookup folds the case of
// each byte: for CL.THROTTLE 25 instructions a command instead of 135
// (callgrind). It is kept apart from client.lastCmd, which a container sets
// to the subcommand it ran (CLIENT LIST's cmd=client|id): the cache only
// ever holds what the table lookup returned for these very bytes, so a name
// the table does not know (as "client|id") is never run.
type sentName struct {
	cmd  *command // nil: none kept
	n    uint8
	name [15]byte
}

// is reports whether name is the name cmd was looked up by.
func (s *sentName) is(name []byte) bool { return string(name) == string(s.name[:s.n]) }

// set keeps name as spec's spelling, if it fits.
func (s *sentName) set(name []byte, spec *command) {
	if len(name) > len(s.name) {
		s.cmd = nil
		return
	}
	s.cmd, s.n = spec, uint8(copy(s.name[:], name))
}

// refuse answers a command its connection may not run, and reports whether
// it did: NOAUTH before it has authenticated, NOPERM for what its user's
// rules do not allow (recorded in ACL LOG). access is client.access, not
// 0. AUTH, HELLO, QUIT and RESET run for anyone.
func (c *client) refuse(access uint32, spec *command, args [][]byte, now time.Time) bool {
	if spec.noAuth {
		return false
	}
	e := errNoAuth
	if access&accessUnauthed == 0 {
		d, cmd, user := c.denial(spec, args, now)
		switch d.Reason {
		case acl.Allowed:
			return false
		case acl.DeniedKey:
			e = errNoPermKey
		case acl.DeniedChannel:
			e = errNoPermChannel
		default:
			e = errNoPermCommand(user, cmd.name)
		}
	}
	spec.stats.rejected.Add(1)
	c.flagTransaction()
	c.writeError(e)
	return true
}

// denial checks spec with args against the client's user, and records a
// refusal in ACL LOG: the refusal (acl.Allowed for none), the command
// checked (a container's subcommand) and the user's name. A subcommand
// that does not exist, or is called with the wrong number of arguments,
// is left to its container to answer, as Redis answers both before it
// checks ACLs.
func (c *client) denial(spec *command, args [][]byte, now time.Time) (acl.Denial, *command, string) {
	cmd := spec
	if spec.subcommands != nil && len(args) > 1 {
		sub := spec.subcommand(args[1])
		if sub == nil || (!sub.anyArity && !sub.arityOK(len(args))) {
			return acl.Denial{}, spec, ""
		}
		cmd = sub
	}
	u := c.user.Load()
	d := u.Check(cmd.perm, args)
	if d.Reason != acl.Allowed {
		object := cmd.name
		if d.Reason != acl.DeniedCommand {
			object = string(args[d.Arg])
		}
		c.lastCmd.Store(cmd) // CLIENT INFO in the log names it, as Redis's
		c.logDenial(d.Reason, object, u.Name(), now)
	}
	return d, cmd, u.Name()
}

// gate looks at a command of a gated client (client.gated) before it runs,
// after the checks every command passes, as Redis does: subscribed under
// RESP2, only a few commands may run; inside MULTI, commands are queued for
// EXEC, or refused (which aborts it); a tracking client's command is seen
// by tracking first (beforeCommand). It reports whether it answered the
// command, which then does not run now.
func (c *client) gate(spec *command, args [][]byte) bool {
	if c.restricted && !spec.inSubscribed {
		// Named as Redis names it: a subcommand by its full name. An
		// unknown subcommand is left to its container to answer, as Redis
		// answers it before this check.
		name, known := spec.name, true
		if spec.subcommands != nil && len(args) > 1 {
			sub := spec.subcommand(args[1])
			if known = sub != nil; known {
				name = sub.name
			}
		}
		if known {
			spec.stats.rejected.Add(1)
			c.flagTransaction()
			c.writeError(errSubscribedContext(name))
			return true
		}
	}
	if c.tracking.on {
		c.beforeCommand(spec, args)
	}
	if c.tx.multi == nil || spec.txControl {
		return false
	}
	if spec.noMulti {
		spec.stats.rejected.Add(1)
		c.flagTransaction()
		c.writeError(errNotInMulti)
		return true
	}
	if spec.offLoop && c.conn.OnLoop() {
		// EXEC will run it on the goroutine the connection leaves for,
		// where it is queued.
		c.conn.Need(engine.NeedGoroutine)
		return true
	}
	c.queue(spec, args)
	return true
}

// executeHooked is execute while a pause may be in force or a client
// monitors: a monitor may not touch keys, as Redis's may not; a paused
// command waits (Server.waitPause); a command run is fed to the monitors
// (Server.feedMonitors).
func (s *Server) executeHooked(c *client, spec *command, args [][]byte, now time.Time) time.Time {
	if c.monitor.on.Load() && (spec.write || spec.readonly || spec.mayReplicate) {
		spec.stats.rejected.Add(1)
		c.writeError(errMonitorKeyspace)
		return now
	}
	if s.hooks.Load()&hookPause != 0 {
		var alive bool
		if now, alive = s.waitPause(c, spec, now); !alive {
			c.conn.Need(engine.NeedClose) // killed while it waited: it runs nothing more
			return now
		}
	}
	end := s.execute(c, spec, args, now)
	if s.hooks.Load()&hookMonitor != 0 {
		if c.monitor.on.Load() {
			_ = c.conn.Flush() // a monitor gets its reply before its command's line, as from Redis
		}
		s.feedMonitors(c, args, now)
	}
	return end
}

// execute runs spec at now and records it. On the real clock it reads the
// clock once, when the command ends, for its duration, and returns that
// reading; on an injected clock durations are not measured, count as 0, and
// now is returned.
func (s *Server) execute(c *client, spec *command, args [][]byte, now time.Time) time.Time {
	c.batch.failed = false
	spec.run(c, args, now)
	end, d := now, time.Duration(0)
	if s.timed {
		end = s.now()
		d = time.Duration(end.UnixNano() - now.UnixNano()) // Sub is slow on Times without a monotonic reading, which the clock returns
	}
	spec.stats.latency[c.stripe].observe(d)
	if c.batch.failed {
		spec.stats.failed.Add(1)
	}
	return end
}

// changed records that the current command changed key's stored state: in
// durable mode its reply waits for a sync (engine.NeedSync), and a NOLOOP
// tracking client is not told of its own change (ownChange). One test covers
// both.
func (c *client) changed(key []byte) {
	if c.onChange != 0 {
		c.changedSlow(key)
	}
}

// changedAll is changed for a command that changed every key (FLUSHALL),
// which every tracking client is told of, NOLOOP or not, as in Redis.
func (c *client) changedAll() {
	if c.onChange&changeDurable != 0 {
		c.conn.Need(engine.NeedSync)
	}
}

// What a change of a key must do besides, by client (client.onChange).
const (
	changeDurable uint8 = 1 << iota // durable mode: the reply waits for a sync
	changeNoloop                    // CLIENT TRACKING ... NOLOOP
)

// changedSlow is kept out of changed, so that changed stays small enough to
// be inlined in the decisions' handlers.
//
//go:noinline
func (c *client) changedSlow(key []byte) {
	if c.onChange&changeDurable != 0 {
		c.conn.Need(engine.NeedSync)
	}
	if c.onChange&changeNoloop != 0 {
		c.ownChange(key)
	}
}

// lookup finds a command by name, case-insensitively, without allocating.
func (s *Server) lookup(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return s.commands.byName[string(buf[:len(name)])]
}
