package server

import (
	"strconv"
	"strings"
	"time"
)

// serverFamily is the server's commands, for the command table
// (newCommandTable).
func serverFamily() []*command {
	return []*command{
		{name: "time", arity: 1, flags: []string{"loading", "stale", "fast"}, acl: []string{"@fast"},
			group: "server", since: "2.6.0", complexity: "O(1)", summary: "Returns the server time.", run: cmdTime},
		{name: "info", arity: -1, wholeKeyspace: true, flags: []string{"loading", "stale"}, acl: []string{"@slow", "@dangerous"},
			tips:  []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Returns information and statistics about the server.", run: cmdInfo},
		{name: "config", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "server", since: "2.0.0", complexity: "Depends on subcommand.", summary: "A container for server configuration commands.",
			subcommands: configSubcommands()},
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
	}
}

// TIME
func cmdTime(c *client, _ [][]byte, now time.Time) {
	c.writeArray(2)
	c.writeBulkString(strconv.FormatInt(now.Unix(), 10))
	c.writeBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// INFO [section ...]
func cmdInfo(c *client, args [][]byte, now time.Time) {
	sections := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		sections = append(sections, strings.ToLower(string(a)))
	}
	c.writeVerbatim(c.srv.info(c.ks, sections, now))
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]
//
// On success the connection closes without a reply, as in Redis.
func cmdShutdown(c *client, args [][]byte, _ time.Time) {
	save := true
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "nosave"):
			save = false
		case equalFold(a, "save"), equalFold(a, "now"), equalFold(a, "force"), equalFold(a, "abort"):
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if c.srv.cfg.Shutdown == nil {
		c.writeError(errShutdownSave)
		return
	}
	if err := c.srv.cfg.Shutdown(save); err != nil {
		c.writeError(errShutdownSave)
		return
	}
	_ = c.conn.Close()
}

// SAVE
//
// Writes every change and syncs it before replying; on a full or failing
// disk it answers the error at once (bounded by the store's stall timeout),
// and the changes stay pending for the next flush.
func cmdSave(c *client, _ [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if err := p.Flush(); err != nil {
		c.writeError(errSaveFailed(err))
		return
	}
	c.writeOK()
}

// BGSAVE [SCHEDULE]
func cmdBgsave(c *client, args [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if len(args) == 2 && !equalFold(args[1], "schedule") {
		c.writeError(errSyntax)
		return
	}
	if !p.BackgroundSave() {
		if len(args) == 2 {
			c.writeSimple("Background saving scheduled")
			return
		}
		c.writeError(errBgsaveInProgress)
		return
	}
	c.writeSimple("Background saving started")
}

// LASTSAVE
//
// The Unix time of the last successful flush (the start time before one).
func cmdLastsave(c *client, _ [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeInt(c.srv.started.Unix())
		return
	}
	c.writeInt(p.Stats().LastSave.Unix())
}

// SLOWLOG GET [count] | LEN | RESET | HELP
//
// redcell keeps no slow log (slowlog-log-slower-than is -1): the log is
// always empty. The latency histogram in /metrics and INFO latencystats show
// slow commands instead.
func cmdSlowlog(c *client, args [][]byte, _ time.Time) {
	sub := args[1]
	switch {
	case equalFold(sub, "get") && len(args) <= 3:
		if len(args) == 3 {
			if n, ok := parseInt(args[2]); !ok || n < -1 {
				c.writeError(errSlowlogCount)
				return
			}
		}
		c.writeArray(0)
	case equalFold(sub, "len") && len(args) == 2:
		c.writeInt(0)
	case equalFold(sub, "reset") && len(args) == 2:
		c.writeOK()
	case equalFold(sub, "help") && len(args) == 2:
		c.writeHelp(slowlogHelp)
	case equalFold(sub, "get"), equalFold(sub, "len"), equalFold(sub, "reset"), equalFold(sub, "help"):
		c.writeError(errWrongArgs("slowlog|" + strings.ToLower(string(sub))))
	default:
		c.writeError(errUnknownSubcommand(sub, "SLOWLOG"))
	}
}

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    redcell keeps no slow log: always an empty list.",
	"LEN",
	"    Always 0.",
	"RESET",
	"    Does nothing.",
	"HELP",
	"    Print this help.",
}

// LATENCY LATEST | HISTORY event | RESET [event ...] | HELP
//
// redcell runs no latency monitor (latency-monitor-threshold is 0, as in a
// default Redis): there are no latency events to report.
func cmdLatency(c *client, args [][]byte, _ time.Time) {
	sub := args[1]
	switch {
	case equalFold(sub, "latest") && len(args) == 2:
		c.writeArray(0)
	case equalFold(sub, "history") && len(args) == 3:
		c.writeArray(0)
	case equalFold(sub, "reset"):
		c.writeInt(0)
	case equalFold(sub, "help") && len(args) == 2:
		c.writeHelp(latencyHelp)
	case equalFold(sub, "latest"), equalFold(sub, "history"), equalFold(sub, "help"):
		c.writeError(errWrongArgs("latency|" + strings.ToLower(string(sub))))
	default:
		c.writeError(errUnknownSubcommand(sub, "LATENCY"))
	}
}

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LATEST",
	"    redcell runs no latency monitor: always an empty list.",
	"HISTORY <event>",
	"    Always an empty list.",
	"RESET [<event> ...]",
	"    Always 0.",
	"HELP",
	"    Print this help.",
}
