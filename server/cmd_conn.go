package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// PING [message]
func cmdPing(c *client, args [][]byte, _ time.Time) {
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
	c.closing = true
	c.conn.Close()
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
func cmdAuth(c *client, args [][]byte, _ time.Time) {
	if len(args) == 2 && c.srv.cfg.RequirePass == "" {
		c.writeError(errAuthNoPassword)
		return
	}
	user, pass := []byte("default"), args[len(args)-1]
	if len(args) == 3 {
		user = args[1]
	}
	if !c.srv.checkPassword(user, pass) {
		c.writeError(errWrongPass)
		return
	}
	c.authed = true
	c.writeOK()
}

// checkPassword reports whether user/pass open the default user. With no
// password configured any password is accepted for "default", as in Redis.
// The comparison takes the same time whatever is sent: it compares SHA-256
// digests, as Redis does, because ConstantTimeCompare returns at once on a
// length mismatch and so would tell the password's length.
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	if s.cfg.RequirePass == "" {
		return true
	}
	got, want := sha256.Sum256(pass), sha256.Sum256([]byte(s.cfg.RequirePass))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *client, args [][]byte, _ time.Time) {
	proto := c.resp
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.writeError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.writeError(errNoProto)
			return
		}
		proto = int(v)
	}
	var setName []byte
	authed := c.authed
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case equalFold(args[i], "auth") && more >= 2:
			if !c.srv.checkPassword(args[i+1], args[i+2]) {
				c.writeError(errWrongPass)
				return
			}
			authed = true
			i += 2
		case equalFold(args[i], "setname") && more >= 1:
			if !validClientName(args[i+1]) {
				c.writeError(errClientName)
				return
			}
			setName = args[i+1]
			i++
		default:
			c.writeError("ERR Syntax error in HELLO option '" + string(clip(args[i], 128)) + "'")
			return
		}
	}
	if !authed {
		c.writeError(errHelloNoAuth)
		return
	}
	c.authed = true
	if setName != nil {
		c.setName(setName)
	}
	c.resp = proto
	c.respSeen.Store(int32(proto))

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

// validClientName is Redis's rule for client names and library names and
// versions: printable ASCII without spaces.
func validClientName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func (c *client) setName(name []byte) {
	if len(name) == 0 {
		c.name.Store(nil)
		return
	}
	s := string(name)
	c.name.Store(&s)
}

// CLIENT ID | GETNAME | SETNAME name | SETINFO LIB-NAME|LIB-VER value |
// INFO | LIST [TYPE type | ID id ...] | NO-EVICT on|off | NO-TOUCH on|off |
// TRACKING ...
func cmdClient(c *client, args [][]byte, now time.Time) {
	sub := args[1]
	c.noteSubcommand(sub)
	switch {
	case equalFold(sub, "id") && len(args) == 2:
		c.writeInt(c.id)
	case equalFold(sub, "getname") && len(args) == 2:
		if name := c.name.Load(); name != nil {
			c.writeBulkString(*name)
		} else {
			c.writeNull()
		}
	case equalFold(sub, "setname") && len(args) == 3:
		if !validClientName(args[2]) {
			c.writeError(errClientName)
			return
		}
		c.setName(args[2])
		c.writeOK()
	case equalFold(sub, "setinfo") && len(args) == 4:
		// As Redis: an unknown attribute is reported before a bad value.
		var dst *atomic.Pointer[string]
		switch {
		case equalFold(args[2], "lib-name"):
			dst = &c.libName
		case equalFold(args[2], "lib-ver"):
			dst = &c.libVersion
		default:
			c.writeError("ERR Unrecognized option '" + string(clip(args[2], 128)) + "'")
			return
		}
		if !validClientName(args[3]) {
			c.writeError("ERR " + string(clip(args[2], 128)) + " cannot contain spaces, newlines or special characters.")
			return
		}
		val := string(args[3])
		dst.Store(&val)
		c.writeOK()
	case equalFold(sub, "info") && len(args) == 2:
		c.writeVerbatim(c.info(now) + "\n")
	case equalFold(sub, "list"):
		clients, errText := c.listClients(args[2:])
		if errText != "" {
			c.writeError(errText)
			return
		}
		var b strings.Builder
		for _, other := range clients {
			b.WriteString(other.info(now))
			b.WriteByte('\n')
		}
		c.writeVerbatim(b.String())
	case (equalFold(sub, "no-evict") || equalFold(sub, "no-touch")) && len(args) == 3:
		if !equalFold(args[2], "on") && !equalFold(args[2], "off") {
			c.writeError(errSyntax)
			return
		}
		c.writeOK()
	case equalFold(sub, "tracking"):
		c.writeError(errTracking)
	default:
		if isClientSubcommand(sub) {
			c.writeError(errWrongArgs("client|" + strings.ToLower(string(sub))))
			return
		}
		c.writeError(errUnknownSubcommand(sub, "CLIENT"))
	}
}

// noteSubcommand records CLIENT's subcommand as the connection's last
// command, so CLIENT LIST shows cmd=client|info as Redis 7 does.
func (c *client) noteSubcommand(sub []byte) {
	parent := c.srv.commands["client"]
	if parent == nil {
		return
	}
	for _, spec := range parent.subcommands {
		if equalFold(sub, strings.TrimPrefix(spec.name, "client|")) {
			c.lastCmd.Store(spec)
			return
		}
	}
}

// listClients selects the connections CLIENT LIST [TYPE type | ID id ...]
// reports: all of them oldest first, or those of the IDs given, in their
// order. It returns the error text for bad options.
func (c *client) listClients(opts [][]byte) ([]*client, string) {
	all := c.srv.connectedClients()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	switch {
	case len(opts) == 0:
		return all, ""
	case len(opts) == 2 && equalFold(opts[0], "type"):
		switch t := opts[1]; {
		case equalFold(t, "normal"):
			return all, ""
		case equalFold(t, "master"), equalFold(t, "replica"), equalFold(t, "slave"), equalFold(t, "pubsub"):
			return nil, "" // redcell has no such connections
		default:
			return nil, "ERR Unknown client type '" + string(clip(t, 128)) + "'"
		}
	case len(opts) >= 2 && equalFold(opts[0], "id"):
		var out []*client
		for _, a := range opts[1:] {
			id, ok := parseInt(a)
			if !ok {
				return nil, "ERR Invalid client ID"
			}
			for _, other := range all {
				if other.id == id {
					out = append(out, other)
				}
			}
		}
		return out, ""
	default:
		return nil, errSyntax
	}
}

var clientSubcommandNames = []string{"id", "getname", "setname", "setinfo", "info", "list", "no-evict", "no-touch", "tracking"}

func isClientSubcommand(sub []byte) bool {
	for _, name := range clientSubcommandNames {
		if equalFold(sub, name) {
			return true
		}
	}
	return false
}

// clientSubcommands describes CLIENT's subcommands for COMMAND.
func clientSubcommands() []*command {
	arity := map[string]int{"id": 2, "getname": 2, "setname": 3, "setinfo": 4, "info": 2, "list": -2, "no-evict": 3, "no-touch": 3, "tracking": -3}
	out := make([]*command, 0, len(clientSubcommandNames))
	for _, name := range clientSubcommandNames {
		out = append(out, &command{name: "client|" + name, arity: arity[name],
			flags: []string{"noscript", "loading", "stale"}, acl: []string{"@slow", "@connection"},
			group: "connection", since: "2.4.0", complexity: "O(1)"})
	}
	return out
}
