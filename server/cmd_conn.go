package server

import (
	"time"
)

// connFamily is the connection's own commands, for the command table
// (newCommandTable).
func connFamily() []*command {
	return []*command{
		{name: "ping", arity: -1, maxArgs: 2, inSubscribed: true, flags: []string{"fast"}, acl: []string{"@fast", "@connection"},
			tips:  []string{"request_policy:all_shards", "response_policy:all_succeeded"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Returns the server's liveliness response.", run: cmdPing},
		{name: "echo", arity: 2, flags: []string{"fast"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Returns the given string.", run: cmdEcho},
		{name: "quit", arity: -1, txControl: true, noAuth: true, inSubscribed: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Closes the connection.", run: cmdQuit},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Changes the selected database: only 0 exists.", run: cmdSelect},
		{name: "auth", arity: -2, maxArgs: 3, noAuth: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(N) where N is the number of passwords defined for the user", summary: "Authenticates the connection.", run: cmdAuth},
		{name: "reset", arity: 1, txControl: true, noAuth: true, inSubscribed: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "6.2.0", complexity: "O(1)", summary: "Resets the connection.", run: cmdReset},
		{name: "hello", arity: -1, noAuth: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "6.0.0", complexity: "O(1)", summary: "Handshakes with the server, optionally switching to RESP3.", run: cmdHello},
	}
}

// PING [message]
//
// Subscribed under RESP2, as Redis: an array, "pong" and the message or an
// empty string, which a client reading messages tells from +PONG.
func cmdPing(c *client, args [][]byte, _ time.Time) {
	if c.restricted {
		c.writeArray(2)
		c.writeBulkString("pong")
		if len(args) == 2 {
			c.writeBulk(args[1])
		} else {
			c.writeBulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.writeBulk(args[1])
		return
	}
	c.writeSimple("PONG")
}

// ECHO message
func cmdEcho(c *client, args [][]byte, _ time.Time) { c.writeBulk(args[1]) }

// QUIT
//
// Replies OK, then closes the connection; commands pipelined after it are
// not run.
func cmdQuit(c *client, _ [][]byte, _ time.Time) {
	c.writeOK()
	_ = c.conn.Close()
}

// RESET
//
// Back to a new connection's state, as Redis's: out of MONITOR, any
// transaction discarded and keys unwatched, every subscription dropped
// without a reply, RESP2, the name cleared, and the default user's,
// authenticated only if it is on and needs no password. Library name and
// version stay.
func cmdReset(c *client, _ [][]byte, _ time.Time) {
	c.srv.endMonitor(c)
	c.tx = transaction{}
	c.srv.unsubscribeAll(c)
	c.srv.tracking.disable(c)
	c.session.resp = 2
	c.session.respSeen.Store(2)
	us := c.srv.users
	us.mu.Lock()
	def := us.set.Get("default")
	c.bind(def)
	us.mu.Unlock()
	c.setAuthed(def.Enabled() && def.NoPass())
	c.ident.name.Store(nil)
	c.regate()
	c.writeSimple("RESET")
}

// SELECT index
//
// redcell has one database, 0.
func cmdSelect(c *client, args [][]byte, _ time.Time) {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.writeError(errNotInteger)
	case n != 0:
		c.writeError(errDBIndex)
	default:
		c.writeOK()
	}
}

// AUTH [username] password
//
// The password alone authenticates as the default user. A right password
// is answered at once; wrong ones are counted by client address, whatever
// the user, and answered late past a budget (authLimiter), and recorded in
// ACL LOG.
func cmdAuth(c *client, args [][]byte, now time.Time) {
	if len(args) == 2 && c.srv.users.defaultUser().NoPass() {
		c.writeError(errAuthNoPassword)
		return
	}
	user, pass := []byte("default"), args[len(args)-1]
	if len(args) == 3 {
		user = args[1]
	}
	if e := c.authenticate(args[0], user, pass, now); !e.none() {
		c.writeError(e)
		return
	}
	c.writeOK()
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *client, args [][]byte, now time.Time) {
	proto := c.session.resp
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.writeError(errHelloProto)
			return
		}
		if v != 2 && v != 3 {
			c.writeError(errNoProto)
			return
		}
		proto = int(v)
	}
	// The options are read whole before AUTH is tried, as Redis reads
	// them: a syntax error authenticates no one.
	var setName, user, pass []byte
	auth := false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case equalFold(args[i], "auth") && more >= 2:
			auth, user, pass = true, args[i+1], args[i+2]
			i += 2
		case equalFold(args[i], "setname") && more >= 1:
			if !validClientName(args[i+1]) {
				c.writeError(errClientName)
				return
			}
			setName = args[i+1]
			i++
		default:
			c.writeError(errHelloOption(args[i]))
			return
		}
	}
	if auth {
		if e := c.authenticate(args[0], user, pass, now); !e.none() {
			c.writeError(e)
			return
		}
	}
	if !c.session.authed {
		c.writeError(errHelloNoAuth)
		return
	}
	if setName != nil {
		c.setName(setName)
	}
	c.session.resp = proto
	c.session.respSeen.Store(int32(proto))
	c.regate()

	c.writeMap(7)
	c.writeBulkString("server")
	c.writeBulkString("redis")
	c.writeBulkString("version")
	c.writeBulkString(RedisVersion)
	c.writeBulkString("proto")
	c.writeInt(int64(proto))
	c.writeBulkString("id")
	c.writeInt(c.id)
	c.writeBulkString("mode")
	c.writeBulkString("standalone")
	c.writeBulkString("role")
	c.writeBulkString("master")
	c.writeBulkString("modules")
	c.writeArray(0)
}
