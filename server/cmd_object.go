package server

import (
	"runtime/debug"
	"strconv"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// What a key's value looks like to tools that size keys: STRLEN (redis-cli
// --bigkeys), MEMORY USAGE (--memkeys) and OBJECT. A key's value is its TAT,
// which GET returns as a decimal string: Redis stores such a string as an
// integer ("int" encoding).

// objectFamily is STRLEN, and OBJECT and MEMORY with their subcommands, for
// the command table (newCommandTable).
func objectFamily() []*command {
	return []*command{
		{name: "strlen", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@read", "@string", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO"},
			group: "string", since: "2.2.0", complexity: "O(1)", summary: "Returns the length of a key's value, the digits of its TAT.", run: cmdStrlen},
		{name: "object", arity: -2, wholeKeyspace: true, flags: []string{}, acl: []string{"@slow"},
			group: "generic", since: "2.2.3", complexity: "Depends on subcommand.", summary: "A container for object introspection commands.",
			subcommands: objectSubcommands()},
		{name: "memory", arity: -2, wholeKeyspace: true, flags: []string{}, acl: []string{"@slow"},
			group: "server", since: "4.0.0", complexity: "Depends on subcommand.", summary: "A container for memory diagnostics commands.",
			subcommands: memorySubcommands()},
	}
}

// objectSubcommands and memorySubcommands are OBJECT's and MEMORY's
// subcommands, with Redis 7.2's summaries and versions.
func objectSubcommands() []*command {
	subs := []*command{
		keyedSubcommand("object|encoding", 3, "2.2.3", "Returns the internal encoding of a Redis object.", "O(1)", cmdObjectEncoding),
		keyedSubcommand("object|freq", 3, "4.0.0", "Returns the logarithmic access frequency counter of a Redis object.", "O(1)", cmdObjectFreq),
		helpSubcommand("object", "6.2.0", objectHelp),
		keyedSubcommand("object|idletime", 3, "2.2.3", "Returns the time since the last access to a Redis object.", "O(1)", cmdObjectIdletime),
		keyedSubcommand("object|refcount", 3, "2.2.3", "Returns the reference count of a value of a key.", "O(1)", cmdObjectRefcount),
	}
	for _, s := range subs {
		s.group = "generic"
		s.acl = append([]string{"@keyspace"}, s.acl...) // as Redis's OBJECT subcommands
	}
	return subs
}

func memorySubcommands() []*command {
	subs := []*command{
		helpSubcommand("memory", "4.0.0", memoryHelp),
		keyedSubcommand("memory|usage", -3, "4.0.0", "Estimates the memory usage of a key.", "O(N) where N is the number of samples.", cmdMemoryUsage),
		{name: "memory|purge", arity: 2, flags: []string{}, acl: []string{"@slow"}, since: "4.0.0",
			summary: "Asks the allocator to release memory.", complexity: "Depends on how much memory is allocated, could be slow",
			tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, run: cmdMemoryPurge},
	}
	for _, s := range subs {
		s.group = "server"
	}
	return subs
}

// keyedSubcommand describes a subcommand whose key is its second argument,
// as OBJECT ENCODING's and MEMORY USAGE's.
func keyedSubcommand(name string, arity int, since, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
	return &command{name: name, arity: arity, flags: []string{"readonly"}, acl: []string{"@read", "@slow"},
		firstKey: 2, lastKey: 2, step: 1, keyFlags: []string{"RO"},
		since: since, summary: summary, complexity: complexity, run: run}
}

// helpSubcommand describes a container's HELP, which answers lines.
func helpSubcommand(parent, since string, lines []string) *command {
	return &command{name: parent + "|help", arity: 2, flags: []string{"loading", "stale"}, acl: []string{"@slow"},
		since: since, summary: "Returns helpful text about the different subcommands.", complexity: "O(1)",
		run: func(c *client, _ [][]byte, _ time.Time) { c.writeHelp(lines) }}
}

// STRLEN key
//
// The length of GET's value, the TAT's decimal digits; 0 for an absent key.
func cmdStrlen(c *client, args [][]byte, now time.Time) {
	tat, kind, ok := c.lookupKey(args[1], gcra.InstantOf(now))
	if !ok {
		c.writeInt(0)
		return
	}
	if kind != storage.KindTAT {
		c.writeError(errWrongType)
		return
	}
	c.writeInt(int64(len(strconv.FormatInt(int64(tat), 10)))) // STRLEN of the TAT as GET shows it
}

// MEMORY USAGE key [SAMPLES count]
//
// The key's cost in redcell's table (storage.Store.MemoryUsage), null for
// an absent key. SAMPLES is checked as Redis checks it and changes nothing:
// a TAT has no nested values to sample.
func cmdMemoryUsage(c *client, args [][]byte, now time.Time) {
	for j := 3; j < len(args); j++ {
		if !equalFold(args[j], "samples") || j+1 >= len(args) {
			c.writeError(errSyntax)
			return
		}
		n, ok := parseInt(args[j+1])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		if n < 0 {
			c.writeError(errSyntax)
			return
		}
		j++
	}
	size, ok := c.ks.MemoryUsage(args[2], gcra.InstantOf(now))
	if !ok {
		c.writeNull()
		return
	}
	c.writeInt(size)
}

// MEMORY PURGE
//
// Redis asks jemalloc to give its dirty pages back to the system; redcell
// asks Go's runtime the same (debug.FreeOSMemory: a collection, then every
// free page returned). What an operator runs before reading RSS, and what
// bench/ measures memory after, on both servers alike.
func cmdMemoryPurge(c *client, _ [][]byte, _ time.Time) {
	debug.FreeOSMemory()
	c.writeOK()
}

// memoryHelp is Redis 7's MEMORY HELP for the subcommands redcell serves.
var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Print this help.",
}

// OBJECT's subcommands on a live key: ENCODING is "int", as Redis encodes
// an integer string, or "window" for a sliding window's log or counters;
// REFCOUNT 1, as for an integer Redis does not share (it shares those below
// 10000 only); FREQ is Redis's error when no LFU maxmemory policy is set
// (redcell's is noeviction); IDLETIME is 0, as redcell keeps no access
// clock per key. Each answers null for an absent key, as Redis does.

// OBJECT ENCODING key
func cmdObjectEncoding(c *client, args [][]byte, now time.Time) {
	kind, ok := c.objectLookup(args[2], now)
	switch {
	case !ok:
	case kind.Boxed():
		c.writeBulkString(kind.Type())
	default:
		c.writeBulkString("int")
	}
}

// OBJECT FREQ key
func cmdObjectFreq(c *client, args [][]byte, now time.Time) {
	if _, ok := c.objectLookup(args[2], now); ok {
		c.writeError(errNoLFU)
	}
}

// OBJECT IDLETIME key
func cmdObjectIdletime(c *client, args [][]byte, now time.Time) {
	if _, ok := c.objectLookup(args[2], now); ok {
		c.writeInt(0)
	}
}

// OBJECT REFCOUNT key
func cmdObjectRefcount(c *client, args [][]byte, now time.Time) {
	if _, ok := c.objectLookup(args[2], now); ok {
		c.writeInt(1)
	}
}

// objectLookup finds an OBJECT subcommand's key, counted as a keyspace hit
// or miss, and answers null if it is absent.
func (c *client) objectLookup(key []byte, now time.Time) (storage.Kind, bool) {
	_, kind, ok := c.lookupKey(key, gcra.InstantOf(now))
	if !ok {
		c.writeNull()
	}
	return kind, ok
}

// objectHelp is Redis 7's OBJECT HELP.
var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Print this help.",
}
