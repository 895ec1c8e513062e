package server

import (
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
