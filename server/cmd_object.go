package server

import (
	"strings"
	"time"

	"redcell/gcra"
	"redcell/storage"
)

// What a key's value looks like to tools that size keys: STRLEN (redis-cli
// --bigkeys), MEMORY USAGE (--memkeys) and OBJECT. A key's value is its TAT,
// which GET returns as a decimal string: Redis stores such a string as an
// integer ("int" encoding).

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
	c.writeInt(int64(intSize(int64(tat)) - 3)) // intSize counts ":" and "\r\n"
}

// MEMORY USAGE key [SAMPLES count] | MEMORY HELP
//
// USAGE is the key's cost in redcell's table (storage.Store.MemoryUsage),
// null for an absent key. SAMPLES is checked as Redis checks it and changes
// nothing: a TAT has no nested values to sample.
func cmdMemory(c *client, args [][]byte, now time.Time) {
	sub := args[1]
	c.noteSubcommand(c.srv.commands["memory"], sub)
	switch {
	case equalFold(sub, "usage") && len(args) >= 3:
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
	case equalFold(sub, "help") && len(args) == 2:
		c.writeHelp(memoryHelp)
	case equalFold(sub, "usage"), equalFold(sub, "help"):
		c.writeError(errWrongArgs("memory|" + strings.ToLower(string(sub))))
	default:
		c.writeError(errUnknownSubcommand(sub, "MEMORY"))
	}
}

// memoryHelp is Redis 7's MEMORY HELP for the subcommands redcell serves.
var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Print this help.",
}

// OBJECT ENCODING key | FREQ key | IDLETIME key | REFCOUNT key | HELP
//
// For a live key: ENCODING is "int", as Redis encodes an integer string;
// REFCOUNT 1, as for an integer Redis does not share (it shares those below
// 10000 only); FREQ is Redis's error when no LFU maxmemory policy is set
// (redcell's is noeviction); IDLETIME is 0, as redcell keeps no access
// clock per key. Each answers null for an absent key, as Redis does.
func cmdObject(c *client, args [][]byte, now time.Time) {
	sub := args[1]
	c.noteSubcommand(c.srv.commands["object"], sub)
	keyed := equalFold(sub, "encoding") || equalFold(sub, "freq") || equalFold(sub, "idletime") || equalFold(sub, "refcount")
	switch {
	case keyed && len(args) == 3:
		_, kind, ok := c.lookupKey(args[2], gcra.InstantOf(now))
		if !ok {
			c.writeNull()
			return
		}
		switch {
		case equalFold(sub, "encoding") && kind == storage.KindWindow:
			c.writeBulkString("window") // a sliding window's log or counters
		case equalFold(sub, "encoding"):
			c.writeBulkString("int")
		case equalFold(sub, "freq"):
			c.writeError(errNoLFU)
		case equalFold(sub, "idletime"):
			c.writeInt(0)
		default:
			c.writeInt(1)
		}
	case equalFold(sub, "help") && len(args) == 2:
		c.writeHelp(objectHelp)
	case keyed, equalFold(sub, "help"):
		c.writeError(errWrongArgs("object|" + strings.ToLower(string(sub))))
	default:
		c.writeError(errUnknownSubcommand(sub, "OBJECT"))
	}
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

// keyedSubcommand describes a subcommand whose key is its second argument,
// as OBJECT ENCODING's and MEMORY USAGE's, for COMMAND.
func keyedSubcommand(name string, arity int, since, summary, complexity string) *command {
	return &command{name: name, arity: arity, flags: []string{"readonly"}, acl: []string{"@read", "@slow"},
		firstKey: 2, lastKey: 2, step: 1, keyFlags: []string{"RO"},
		since: since, summary: summary, complexity: complexity}
}

func helpSubcommand(parent, since string) *command {
	return &command{name: parent + "|help", arity: 2, flags: []string{"loading", "stale"}, acl: []string{"@slow"},
		since: since, summary: "Returns helpful text about the different subcommands.", complexity: "O(1)"}
}

// objectSubcommands and memorySubcommands describe OBJECT's and MEMORY's
// subcommands for COMMAND, with Redis 7.2's summaries and versions.
func objectSubcommands() []*command {
	subs := []*command{
		keyedSubcommand("object|encoding", 3, "2.2.3", "Returns the internal encoding of a Redis object.", "O(1)"),
		keyedSubcommand("object|freq", 3, "4.0.0", "Returns the logarithmic access frequency counter of a Redis object.", "O(1)"),
		helpSubcommand("object", "6.2.0"),
		keyedSubcommand("object|idletime", 3, "2.2.3", "Returns the time since the last access to a Redis object.", "O(1)"),
		keyedSubcommand("object|refcount", 3, "2.2.3", "Returns the reference count of a value of a key.", "O(1)"),
	}
	for _, s := range subs {
		s.group = "generic"
		s.acl = append([]string{"@keyspace"}, s.acl...) // as Redis's OBJECT subcommands
	}
	return subs
}

func memorySubcommands() []*command {
	subs := []*command{
		helpSubcommand("memory", "4.0.0"),
		keyedSubcommand("memory|usage", -3, "4.0.0", "Estimates the memory usage of a key.", "O(N) where N is the number of samples."),
	}
	for _, s := range subs {
		s.group = "server"
	}
	return subs
}
