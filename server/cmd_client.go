package server

import (
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// clientFamily is CLIENT, for the command table (newCommandTable): a container
// whose subcommands are entries of their own, with Redis 7.2's arity, flags,
// summary and version, and their handlers below (PAUSE's is cmdClientPause):
//
//	CLIENT ID | GETNAME | SETNAME name | SETINFO LIB-NAME|LIB-VER value |
//	INFO | LIST [TYPE type | ID id ...] | NO-EVICT on|off | NO-TOUCH on|off |
//	KILL ... | PAUSE timeout [WRITE|ALL] | UNPAUSE | HELP | TRACKING ... |
//	CACHING YES|NO | GETREDIR | TRACKINGINFO
func clientFamily() []*command {
	return []*command{
		{name: "client", arity: -2, flags: []string{"noscript", "loading", "stale"}, acl: []string{"@slow"},
			group: "connection", since: "2.4.0", complexity: "Depends on subcommand.", summary: "A container for client connection commands.",
			subcommands: []*command{
				clientSubcommand("id", 2, "5.0.0", "Returns the unique client ID of the connection.", "O(1)", cmdClientID),
				clientSubcommand("getname", 2, "2.6.9", "Returns the name of the connection.", "O(1)", cmdClientGetname),
				clientSubcommand("setname", 3, "2.6.9", "Sets the connection name.", "O(1)", cmdClientSetname),
				clientSubcommand("setinfo", 4, "7.2.0", "Sets information specific to the client or connection.", "O(1)", cmdClientSetinfo),
				clientSubcommand("info", 2, "6.2.0", "Returns information about the connection.", "O(1)", cmdClientInfo),
				clientAdminSubcommand("list", -2, "2.4.0", "Lists open connections.", "O(N) where N is the number of client connections", cmdClientList),
				clientAdminSubcommand("no-evict", 3, "7.0.0", "Sets the client eviction mode of the connection.", "O(1)", cmdClientNoEvict),
				clientSubcommand("no-touch", 3, "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", "O(1)", cmdClientNoEvict),
				clientTracking(),
				clientSubcommand("caching", 3, "6.0.0", "Instructs the server whether to track the keys in the next request.", "O(1)", cmdClientCaching),
				clientSubcommand("getredir", 2, "6.0.0", "Returns the client ID to which the connection's tracking notifications are redirected.", "O(1)", cmdClientGetredir),
				clientSubcommand("trackinginfo", 2, "6.2.0", "Returns information about server-assisted client-side caching for the connection.", "O(1)", cmdClientTrackinginfo),
				clientSubcommand("help", 2, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", cmdClientHelp),
				clientAdminSubcommand("kill", -3, "2.4.0", "Terminates open connections.", "O(N) where N is the number of client connections", cmdClientKill),
				clientAdminSubcommand("pause", -3, "3.0.0", "Suspends commands processing.", "O(1)", cmdClientPause),
				clientAdminSubcommand("unpause", 2, "6.2.0", "Resumes processing commands from paused clients.", "O(N) Where N is the number of paused clients", cmdClientUnpause),
			}},
	}
}

// clientSubcommand describes one of CLIENT's subcommands.
func clientSubcommand(name string, arity int, since, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
	flags := []string{"noscript", "loading", "stale"}
	if name == "help" {
		flags = []string{"loading", "stale"}
	}
	return &command{name: "client|" + name, arity: arity, flags: flags, acl: []string{"@slow", "@connection"},
		group: "connection", since: since, summary: summary, complexity: complexity, run: run}
}

// clientAdminSubcommand describes one of CLIENT's admin subcommands: as in
// Redis, they are not shown to MONITOR.
func clientAdminSubcommand(name string, arity int, since, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
	cmd := clientSubcommand(name, arity, since, summary, complexity, run)
	cmd.flags = []string{"admin", "noscript", "loading", "stale"}
	cmd.acl = []string{"@admin", "@slow", "@dangerous", "@connection"}
	return cmd
}

// clientTracking describes CLIENT TRACKING. A connection that turns it on
// leaves its event loop once it is answered (tracking.enable): the outbox
// that carries its invalidations writes through the netpoller.
func clientTracking() *command {
	return clientSubcommand("tracking", -3, "6.0.0", "Controls server-assisted client-side caching for the connection.",
		"O(1). Some options may introduce additional complexity.", cmdClientTracking)
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix ...] [BCAST] [OPTIN]
// [OPTOUT] [NOLOOP]
//
// As Redis's clientCommand: the options are parsed first, each error
// answered in Redis's order, then checked against each other and against
// the mode the client already tracks in. OFF ignores the options it was
// given once they parse. Tracking is allowed under RESP2 without a
// redirection, as in Redis, though nothing can then be sent.
func cmdClientTracking(c *client, args [][]byte, _ time.Time) {
	m := &trackingMode{}
	redirected := false
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := args[j]; {
		case equalFold(opt, "redirect") && more:
			j++
			if redirected && m.redirect != 0 {
				c.writeError(errTrackingOneRedirect)
				return
			}
			id, ok := parseInt(args[j])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if c.srv.tracking.lookup(id) == nil {
				c.writeError(errTrackingNoRedirect)
				return
			}
			m.redirect, redirected = id, true
		case equalFold(opt, "bcast"):
			m.bcast = true
		case equalFold(opt, "optin"):
			m.optin = true
		case equalFold(opt, "optout"):
			m.optout = true
		case equalFold(opt, "noloop"):
			m.noloop = true
		case equalFold(opt, "prefix") && more:
			j++
			m.prefixes = append(m.prefixes, string(args[j]))
		default:
			c.writeError(errSyntax)
			return
		}
	}
	switch {
	case equalFold(args[2], "on"):
		if e := c.checkTracking(m); !e.none() {
			c.writeError(e)
			return
		}
		c.srv.tracking.enable(c, m)
	case equalFold(args[2], "off"):
		c.srv.tracking.disable(c)
	default:
		c.writeError(errSyntax)
		return
	}
	c.writeOK()
}

// checkTracking checks CLIENT TRACKING ON's options m against each other and
// against the client's mode, in Redis's order.
func (c *client) checkTracking(m *trackingMode) replyError {
	old := c.tracking.mode.Load()
	switch {
	case !m.bcast && len(m.prefixes) > 0:
		return errTrackingPrefixNoBcast
	case old != nil && old.bcast != m.bcast:
		return errTrackingSwitchBcast
	case m.bcast && (m.optin || m.optout):
		return errTrackingOptBcast
	case m.optin && m.optout:
		return errTrackingOptinOptout
	case old != nil && ((m.optin && old.optout) || (m.optout && old.optin)):
		return errTrackingSwitchOpt
	}
	if !m.bcast {
		return replyError{}
	}
	for i, p := range m.prefixes {
		if old != nil {
			for _, q := range old.prefixes {
				if prefixesOverlap(q, p) {
					return errPrefixOverlap(p, q, true)
				}
			}
		}
		for _, q := range m.prefixes[i+1:] {
			if prefixesOverlap(p, q) {
				return errPrefixOverlap(p, q, false)
			}
		}
	}
	return replyError{}
}

// prefixesOverlap reports whether one of a and b is a prefix of the other:
// a key could match both, and be invalidated twice.
func prefixesOverlap(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

// CLIENT CACHING YES|NO
//
// In OPTIN mode YES tracks the keys of the next command; in OPTOUT mode NO
// does not (beforeCommand).
func cmdClientCaching(c *client, args [][]byte, _ time.Time) {
	m := c.tracking.mode.Load()
	switch {
	case m == nil:
		c.writeError(errCachingNotTracking)
	case equalFold(args[2], "yes") && !m.optin:
		c.writeError(errCachingYesNotOptin)
	case equalFold(args[2], "no") && !m.optout:
		c.writeError(errCachingNoNotOptout)
	case equalFold(args[2], "yes"), equalFold(args[2], "no"):
		c.tracking.caching = true
		c.writeOK()
	default:
		c.writeError(errSyntax)
	}
}

// CLIENT GETREDIR
func cmdClientGetredir(c *client, _ [][]byte, _ time.Time) { c.writeInt(c.redirect()) }

// CLIENT TRACKINGINFO
//
// A map of flags (a set: on or off, bcast, optin with caching-yes, optout
// with caching-no, noloop, broken_redirect), redirect and prefixes.
func cmdClientTrackinginfo(c *client, _ [][]byte, _ time.Time) {
	m := c.tracking.mode.Load()
	flags := []string{"off"}
	if m != nil {
		flags[0] = "on"
		if m.bcast {
			flags = append(flags, "bcast")
		}
		if m.optin {
			flags = append(flags, "optin")
			if c.tracking.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if m.optout {
			flags = append(flags, "optout")
			if c.tracking.caching {
				flags = append(flags, "caching-no")
			}
		}
		if m.noloop {
			flags = append(flags, "noloop")
		}
		if c.tracking.brokenRedirect.Load() {
			flags = append(flags, "broken_redirect")
		}
	}
	c.writeMap(3)
	c.writeBulkString("flags")
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeBulkString(f)
	}
	c.writeBulkString("redirect")
	c.writeInt(c.redirect())
	c.writeBulkString("prefixes")
	var prefixes []string
	if m != nil {
		prefixes = m.prefixes
	}
	c.writeArray(len(prefixes))
	for _, p := range prefixes {
		c.writeBulkString(p)
	}
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
		c.ident.name.Store(nil)
		return
	}
	s := string(name)
	c.ident.name.Store(&s)
}

// CLIENT HELP
func cmdClientHelp(c *client, _ [][]byte, _ time.Time) { c.writeHelp(clientHelp) }

// CLIENT UNPAUSE
func cmdClientUnpause(c *client, _ [][]byte, _ time.Time) {
	c.srv.unpause()
	c.writeOK()
}

// CLIENT ID
func cmdClientID(c *client, _ [][]byte, _ time.Time) { c.writeInt(c.id) }

// CLIENT GETNAME
func cmdClientGetname(c *client, _ [][]byte, _ time.Time) {
	if name := c.ident.name.Load(); name != nil {
		c.writeBulkString(*name)
	} else {
		c.writeNull()
	}
}

// CLIENT SETNAME name
func cmdClientSetname(c *client, args [][]byte, _ time.Time) {
	if !validClientName(args[2]) {
		c.writeError(errClientName)
		return
	}
	c.setName(args[2])
	c.writeOK()
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
//
// As Redis: an unknown attribute is reported before a bad value.
func cmdClientSetinfo(c *client, args [][]byte, _ time.Time) {
	var dst *atomic.Pointer[string]
	switch {
	case equalFold(args[2], "lib-name"):
		dst = &c.ident.libName
	case equalFold(args[2], "lib-ver"):
		dst = &c.ident.libVersion
	default:
		c.writeError(errSetinfoOption(args[2]))
		return
	}
	if !validClientName(args[3]) {
		c.writeError(errSetinfoValue(args[2]))
		return
	}
	val := string(args[3])
	dst.Store(&val)
	c.writeOK()
}

// CLIENT INFO
func cmdClientInfo(c *client, _ [][]byte, now time.Time) { c.writeVerbatim(c.info(now) + "\n") }

// CLIENT LIST [TYPE type | ID id ...]
func cmdClientList(c *client, args [][]byte, now time.Time) {
	clients, e := c.listClients(args[2:])
	if !e.none() {
		c.writeError(e)
		return
	}
	var b strings.Builder
	for _, other := range clients {
		b.WriteString(other.info(now))
		b.WriteByte('\n')
	}
	c.writeVerbatim(b.String())
}

// CLIENT NO-EVICT on|off
// CLIENT NO-TOUCH on|off
//
// Accepted and changes nothing: redcell evicts no client and keeps no
// access clock per key.
func cmdClientNoEvict(c *client, args [][]byte, _ time.Time) {
	if !equalFold(args[2], "on") && !equalFold(args[2], "off") {
		c.writeError(errSyntax)
		return
	}
	c.writeOK()
}

// listClients selects the connections CLIENT LIST [TYPE type | ID id ...]
// reports: all of them oldest first, or those of the IDs given, in their
// order. It returns the error to answer bad options with.
func (c *client) listClients(opts [][]byte) ([]*client, replyError) {
	all := c.srv.connectedClients()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	switch {
	case len(opts) == 0:
		return all, replyError{}
	case len(opts) == 2 && equalFold(opts[0], "type"):
		kind, ok := parseClientType(opts[1])
		if !ok {
			return nil, errUnknownClientType(opts[1])
		}
		var out []*client
		for _, other := range all {
			if other.isType(kind) {
				out = append(out, other)
			}
		}
		return out, replyError{}
	case len(opts) >= 2 && equalFold(opts[0], "id"):
		var out []*client
		for _, a := range opts[1:] {
			id, ok := parseInt(a)
			if !ok {
				return nil, errInvalidClientID
			}
			for _, other := range all {
				if other.id == id {
					out = append(out, other)
				}
			}
		}
		return out, replyError{}
	default:
		return nil, errSyntax
	}
}

// clientHelp is Redis 7's CLIENT HELP, without the subcommands redcell does
// not serve (REPLY, UNBLOCK).
var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"    * ID <client-id>",
	"      Kill connections by client id.",
	"    * MAXAGE <maxage>",
	"      Kill connections older than the specified age.",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"SETINFO <option> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"NO-TOUCH (ON|OFF)",
	"    Will not touch LRU/LFU stats when this mode is on.",
	"HELP",
	"    Print this help.",
}

// CLIENT KILL ip:port
// CLIENT KILL [ID id] [TYPE type] [USER name] [ADDR ip:port] [LADDR ip:port]
// [SKIPME yes|no] [MAXAGE seconds] ...
//
// The old form answers OK, or No such client, and may kill the caller; the
// new form answers how many connections it killed and, unless SKIPME no,
// spares the caller. Another connection is killed by closing its socket
// (client.kill); the caller, after its reply.
func cmdClientKill(c *client, args [][]byte, now time.Time) {
	f := killFilter{skipMe: true}
	oldForm := len(args) == 3
	if oldForm {
		f.addr, f.skipMe = args[2], false
	} else if e := f.parse(args[2:], c.srv.users); !e.none() {
		c.writeError(e)
		return
	}
	killed, self := int64(0), false
	for _, other := range c.srv.connectedClients() {
		if !f.matches(other, now) {
			continue
		}
		switch {
		case other == c && f.skipMe:
		case other == c:
			self = true
			killed++
		case other.kill():
			killed++
		}
	}
	switch {
	case !oldForm:
		c.writeInt(killed)
	case killed == 0:
		c.writeError(errNoSuchClient)
	default:
		c.writeOK()
	}
	if self {
		_ = c.conn.Close() // its replies so far, then the end (engine.NeedClose)
	}
}

// killFilter is CLIENT KILL's filters: a client must pass all of them.
type killFilter struct {
	id     int64  // 0: any
	addr   []byte // nil: any
	laddr  []byte
	user   []byte        // nil: any
	kind   clientType    // TYPE; typeAny: any
	maxAge time.Duration // 0: any
	skipMe bool
}

// parse reads the new form's filters, as Redis checks them: in order, the
// first bad one reported. A USER must be one of users.
func (f *killFilter) parse(opts [][]byte, users *users) replyError {
	for i := 0; i < len(opts); i += 2 {
		if i+1 >= len(opts) {
			return errSyntax
		}
		opt, val := opts[i], opts[i+1]
		switch {
		case equalFold(opt, "id"):
			id, ok := parseInt(val)
			if !ok || id < 1 {
				return errKillClientID
			}
			f.id = id
		case equalFold(opt, "maxage"):
			age, ok := parseInt(val)
			if !ok {
				return errKillMaxAgeInteger
			}
			if age <= 0 {
				return errKillMaxAge
			}
			f.maxAge = time.Duration(min(age, int64(math.MaxInt64/time.Second))) * time.Second
		case equalFold(opt, "type"):
			kind, ok := parseClientType(val)
			if !ok {
				return errUnknownClientType(val)
			}
			f.kind = kind
		case equalFold(opt, "addr"):
			f.addr = val
		case equalFold(opt, "laddr"):
			f.laddr = val
		case equalFold(opt, "user"):
			if !users.exists(string(val)) {
				return errNoSuchUser(val)
			}
			f.user = val
		case equalFold(opt, "skipme"):
			switch {
			case equalFold(val, "yes"):
				f.skipMe = true
			case equalFold(val, "no"):
				f.skipMe = false
			default:
				return errSyntax
			}
		default:
			return errSyntax
		}
	}
	return replyError{}
}

func (f *killFilter) matches(c *client, now time.Time) bool {
	switch {
	case f.kind != typeAny && !c.isType(f.kind):
		return false
	case f.id != 0 && c.id != f.id:
		return false
	case f.addr != nil && string(f.addr) != c.ident.addr:
		return false
	case f.laddr != nil && string(f.laddr) != c.ident.laddr:
		return false
	case f.user != nil && string(f.user) != c.userName():
		return false
	case f.maxAge != 0 && now.Sub(c.ident.created).Truncate(time.Second) < f.maxAge:
		return false
	}
	return true
}

// clientType is a client's type, as CLIENT LIST and CLIENT KILL's TYPE
// select it: Redis's, where a monitor is a normal client and one with a
// subscription a pubsub client.
type clientType uint8

const (
	typeAny     clientType = iota
	typeNormal             // neither of the others
	typePubsub             // with a subscription (client.subscribed)
	typeReplica            // replica or slave: a replica's link, after PSYNC
	typeMaster             // master: redcell's link to its master is no client
)

// parseClientType reads a TYPE's value, case-insensitively.
func parseClientType(name []byte) (clientType, bool) {
	switch {
	case equalFold(name, "normal"):
		return typeNormal, true
	case equalFold(name, "pubsub"):
		return typePubsub, true
	case equalFold(name, "replica"), equalFold(name, "slave"):
		return typeReplica, true
	case equalFold(name, "master"):
		return typeMaster, true
	}
	return typeAny, false
}

// isType reports whether the client is of type t, from any goroutine.
func (c *client) isType(t clientType) bool {
	switch t {
	case typeNormal:
		return !c.subscribed() && !c.repl.linked.Load()
	case typePubsub:
		return c.subscribed()
	case typeReplica:
		return c.repl.linked.Load()
	case typeMaster:
		return false
	}
	return true
}
