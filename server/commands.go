package server

import (
	"slices"
	"strings"
	"time"
)

// command describes one command: how to run it and what COMMAND reports
// about it. Names are lower case, as Redis reports them.
type command struct {
	name string
	// arity counts the command name, as Redis's: n means exactly n, -n at
	// least n. maxArgs, when set, also bounds a variadic command.
	arity   int
	maxArgs int
	flags   []string
	acl     []string
	// firstKey, lastKey and step locate key arguments (0 0 0: no keys), so
	// cluster-aware clients route on the right argument.
	firstKey, lastKey, step int
	keyFlags                []string // key-spec flags, e.g. RW UPDATE

	// noAuth commands run before the client has authenticated.
	noAuth bool
	// write, readonly and admin are set from flags by commandTable: CLIENT
	// PAUSE WRITE holds write commands, a monitor may run neither write nor
	// readonly ones, and MONITOR does not show admin ones. noMulti (the
	// no_multi flag) commands are refused inside MULTI.
	write, readonly, admin, noMulti bool
	// txControl commands run at once inside MULTI instead of being queued
	// (MULTI, EXEC, DISCARD, WATCH, QUIT, as in Redis). wholeKeyspace
	// commands read or change keys beyond their key arguments (KEYS,
	// FLUSHDB, INFO, ...): in a transaction they need every shard locked.
	txControl, wholeKeyspace bool

	group, summary, since, complexity string
	subcommands                       []*command

	run func(c *client, args [][]byte, now time.Time)

	// stats count the command's calls for INFO and /metrics (stats.go).
	stats *cmdStats
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	if n < -cmd.arity {
		return false
	}
	return cmd.maxArgs == 0 || n <= cmd.maxArgs
}

// commandTable registers every command redcell serves. Handlers live in one
// file per family: cmd_throttle.go, cmd_gcra.go, cmd_reserve.go,
// cmd_window.go, cmd_keys.go, cmd_conn.go, cmd_client.go, cmd_server.go,
// cmd_object.go, cmd_multi.go, monitor.go.
func commandTable() map[string]*command {
	list := []*command{
		// cmd_throttle.go
		{name: "cl.throttle", arity: -5, maxArgs: 6, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "generic", since: "0.1.0", complexity: "O(1)",
			summary: "Rate-limits a key by GCRA and returns limited, limit, remaining, retry_after and reset_after, as redis-cell does.",
			run:     cmdThrottle},

		// cmd_gcra.go, cmd_reserve.go, cmd_window.go: the other limiters.
		{name: "gcra", arity: -5, maxArgs: 7, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@string", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "string", since: "8.8.0", complexity: "O(1)",
			summary: "Rate-limits a key by GCRA as Redis's GCRA command: a float period, durations rounded up to seconds.",
			run:     cmdGCRA},
		{name: "cl.reserve", arity: -5, maxArgs: 8, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "generic", since: "0.1.0", complexity: "O(1)",
			summary: "Reserves the next slot of a key's rate and returns how long to wait before acting, up to MAXWAIT milliseconds.",
			run:     cmdReserve},
		{name: "cl.window", arity: -4, maxArgs: 7, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "generic", since: "0.1.0", complexity: "O(1) with PRECISION m, O(N) for the N entries of an exact log",
			summary: "Allows at most limit actions in any window seconds: an exact sliding log, or sub-window counters with PRECISION.",
			run:     cmdWindow},

		// cmd_keys.go
		{name: "del", arity: -2, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RM", "DELETE"},
			group: "generic", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Deletes one or more keys: resets their limiters.", run: cmdDel},
		{name: "unlink", arity: -2, flags: []string{"write", "fast"}, acl: []string{"@keyspace", "@write", "@fast"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RM", "DELETE"},
			group: "generic", since: "4.0.0", complexity: "O(N) where N is the number of keys", summary: "Deletes one or more keys.", run: cmdDel},
		{name: "exists", arity: -2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RO"},
			group: "generic", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Counts how many of the keys exist.", run: cmdExists},
		{name: "ttl", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "ACCESS"},
			group: "generic", since: "1.0.0", complexity: "O(1)", summary: "Returns the seconds until a key expires.", run: cmdTTL},
		{name: "pttl", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "ACCESS"},
			group: "generic", since: "2.6.0", complexity: "O(1)", summary: "Returns the milliseconds until a key expires.", run: cmdPTTL},
		{name: "get", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@read", "@string", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "ACCESS"},
			group: "string", since: "1.0.0", complexity: "O(1)", summary: "Returns a key's TAT in nanoseconds since the Unix epoch.", run: cmdGet},
		{name: "type", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO"},
			group: "generic", since: "1.0.0", complexity: "O(1)", summary: "Returns the type of a key.", run: cmdType},
		{name: "keys", arity: 2, flags: []string{"readonly"}, acl: []string{"@keyspace", "@read", "@slow", "@dangerous"},
			group: "generic", since: "1.0.0", complexity: "O(N) with N being the number of keys in the database", summary: "Returns all key names that match a pattern.", run: cmdKeys},
		{name: "scan", arity: -2, flags: []string{"readonly"}, acl: []string{"@keyspace", "@read", "@slow"},
			group: "generic", since: "2.8.0", complexity: "O(1) for every call. O(N) for a complete iteration.", summary: "Iterates over the key names in the database.", run: cmdScan},
		{name: "dbsize", arity: 1, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Returns the number of keys in the database.", run: cmdDBSize},
		{name: "flushdb", arity: -1, maxArgs: 2, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Removes every key.", run: cmdFlush},
		{name: "flushall", arity: -1, maxArgs: 2, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Removes every key.", run: cmdFlush},

		// cmd_conn.go, cmd_client.go
		{name: "ping", arity: -1, maxArgs: 2, flags: []string{"fast"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Returns the server's liveliness response.", run: cmdPing},
		{name: "echo", arity: 2, flags: []string{"fast"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Returns the given string.", run: cmdEcho},
		{name: "quit", arity: -1, noAuth: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Closes the connection.", run: cmdQuit},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(1)", summary: "Changes the selected database: only 0 exists.", run: cmdSelect},
		{name: "auth", arity: -2, maxArgs: 3, noAuth: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "1.0.0", complexity: "O(N) where N is the number of passwords defined for the user", summary: "Authenticates the connection.", run: cmdAuth},
		{name: "hello", arity: -1, noAuth: true, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, acl: []string{"@fast", "@connection"},
			group: "connection", since: "6.0.0", complexity: "O(1)", summary: "Handshakes with the server, optionally switching to RESP3.", run: cmdHello},
		{name: "client", arity: -2, flags: []string{"noscript", "loading", "stale"}, acl: []string{"@slow", "@connection"},
			group: "connection", since: "2.4.0", complexity: "Depends on subcommand.", summary: "A container for client connection commands.", run: cmdClient,
			subcommands: clientSubcommands()},

		// cmd_server.go
		{name: "time", arity: 1, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast"},
			group: "server", since: "2.6.0", complexity: "O(1)", summary: "Returns the server time.", run: cmdTime},
		{name: "info", arity: -1, flags: []string{"loading", "stale"}, acl: []string{"@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Returns information and statistics about the server.", run: cmdInfo},
		{name: "config", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "server", since: "2.0.0", complexity: "Depends on subcommand.", summary: "A container for server configuration commands.", run: cmdConfig},
		{name: "shutdown", arity: -1, maxArgs: 4, flags: []string{"admin", "noscript", "loading", "stale", "no_multi", "allow_busy"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(N) when saving, where N is the number of changed keys", summary: "Saves state and shuts the server down.", run: cmdShutdown},
		{name: "save", arity: 1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(N) where N is the number of changed keys", summary: "Writes every changed key to disk and syncs it.", run: cmdSave},
		{name: "bgsave", arity: -1, maxArgs: 2, flags: []string{"admin", "noscript", "no_async_loading"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Writes every changed key to disk in the background.", run: cmdBgsave},
		{name: "lastsave", arity: 1, flags: []string{"loading", "stale", "fast"}, acl: []string{"@admin", "@fast", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Returns the Unix time of the last successful save.", run: cmdLastsave},
		{name: "slowlog", arity: -2, maxArgs: 3, flags: []string{"admin", "noscript", "loading", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "2.2.12", complexity: "O(1)", summary: "Answers as an empty slow log: redcell keeps none.", run: cmdSlowlog},
		{name: "latency", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "2.8.13", complexity: "O(1)", summary: "Answers as a latency monitor with no events: redcell runs none.", run: cmdLatency},
		{name: "monitor", arity: 1, flags: []string{"admin", "noscript", "loading", "stale"}, acl: []string{"@admin", "@slow", "@dangerous"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Listens for all requests received by the server in real-time.", run: cmdMonitor},
		{name: "command", arity: -1, flags: []string{"loading", "stale"}, acl: []string{"@slow", "@connection"},
			group: "server", since: "2.8.13", complexity: "O(N) where N is the total number of commands", summary: "Returns detailed information about all commands.", run: cmdCommand},

		// cmd_object.go
		{name: "strlen", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@read", "@string", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO"},
			group: "string", since: "2.2.0", complexity: "O(1)", summary: "Returns the length of a key's value, the digits of its TAT.", run: cmdStrlen},
		{name: "object", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "generic", since: "2.2.3", complexity: "Depends on subcommand.", summary: "A container for object introspection commands.", run: cmdObject,
			subcommands: objectSubcommands()},
		{name: "memory", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "server", since: "4.0.0", complexity: "Depends on subcommand.", summary: "A container for memory diagnostics commands.", run: cmdMemory,
			subcommands: memorySubcommands()},
	}
	list = append(list, multiCommands()...)
	for _, cmd := range list {
		switch cmd.name {
		case "multi", "exec", "discard", "watch", "quit":
			cmd.txControl = true
		case "keys", "scan", "dbsize", "flushdb", "flushall", "info", "memory", "object":
			cmd.wholeKeyspace = true
		}
	}
	table := make(map[string]*command, len(list))
	for _, cmd := range list {
		cmd.stats = new(cmdStats)
		table[cmd.name] = cmd
		for _, spec := range append([]*command{cmd}, cmd.subcommands...) {
			spec.write = slices.Contains(spec.flags, "write")
			spec.readonly = slices.Contains(spec.flags, "readonly")
			spec.admin = slices.Contains(spec.flags, "admin")
			spec.noMulti = slices.Contains(spec.flags, "no_multi")
		}
	}
	return table
}

// noteSubcommand records a container's subcommand as the connection's last
// command, so CLIENT LIST shows cmd=client|info as Redis 7 does.
func (c *client) noteSubcommand(parent *command, sub []byte) {
	if parent == nil {
		return
	}
	for _, spec := range parent.subcommands {
		if equalFold(sub, strings.TrimPrefix(spec.name, parent.name+"|")) {
			c.lastCmd.Store(spec)
			return
		}
	}
}
