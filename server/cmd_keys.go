package server

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/glob"
	"github.com/redcell/redcell/storage"
)

// keysFamily is the commands on keys, for the command table
// (newCommandTable).
func keysFamily() []*command {
	return []*command{
		{name: "del", arity: -2, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RM", "delete"}, tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"},
			group: "generic", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Deletes one or more keys: resets their limiters.", run: cmdDel},
		{name: "unlink", arity: -2, flags: []string{"write", "fast"}, acl: []string{"@keyspace", "@write", "@fast"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RM", "delete"}, tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"},
			group: "generic", since: "4.0.0", complexity: "O(N) where N is the number of keys", summary: "Deletes one or more keys.", run: cmdDel},
		{name: "exists", arity: -2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RO"}, tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"},
			group: "generic", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Counts how many of the keys exist.", run: cmdExists},
		{name: "ttl", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "access"},
			group: "generic", since: "1.0.0", complexity: "O(1)", summary: "Returns the seconds until a key expires.", run: cmdTTL},
		{name: "pttl", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "access"},
			group: "generic", since: "2.6.0", complexity: "O(1)", summary: "Returns the milliseconds until a key expires.", run: cmdPTTL},
		{name: "get", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@read", "@string", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "access"},
			group: "string", since: "1.0.0", complexity: "O(1)", summary: "Returns a key's TAT in nanoseconds since the Unix epoch.", run: cmdGet},
		{name: "type", arity: 2, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO"},
			group: "generic", since: "1.0.0", complexity: "O(1)", summary: "Returns the type of a key.", run: cmdType},
		{name: "keys", arity: 2, wholeKeyspace: true, flags: []string{"readonly"}, acl: []string{"@keyspace", "@read", "@slow", "@dangerous"},
			tips:  []string{"request_policy:all_shards", "nondeterministic_output_order"},
			group: "generic", since: "1.0.0", complexity: "O(N) with N being the number of keys in the database", summary: "Returns all key names that match a pattern.", run: cmdKeys},
		{name: "scan", arity: -2, wholeKeyspace: true, flags: []string{"readonly"}, acl: []string{"@keyspace", "@read", "@slow"},
			tips:  []string{"nondeterministic_output", "request_policy:special"},
			group: "generic", since: "2.8.0", complexity: "O(1) for every call. O(N) for a complete iteration.", summary: "Iterates over the key names in the database.", run: cmdScan},
		{name: "dbsize", arity: 1, wholeKeyspace: true, flags: []string{"readonly", "fast"}, acl: []string{"@keyspace", "@read", "@fast"},
			tips:  []string{"request_policy:all_shards", "response_policy:agg_sum"},
			group: "server", since: "1.0.0", complexity: "O(1)", summary: "Returns the number of keys in the database.", run: cmdDBSize},
		{name: "flushdb", arity: -1, maxArgs: 2, wholeKeyspace: true, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow", "@dangerous"},
			tips:  []string{"request_policy:all_shards", "response_policy:all_succeeded"},
			group: "server", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Removes every key.", run: cmdFlush},
		{name: "flushall", arity: -1, maxArgs: 2, wholeKeyspace: true, flags: []string{"write"}, acl: []string{"@keyspace", "@write", "@slow", "@dangerous"},
			tips:  []string{"request_policy:all_shards", "response_policy:all_succeeded"},
			group: "server", since: "1.0.0", complexity: "O(N) where N is the number of keys", summary: "Removes every key.", run: cmdFlush},
	}
}

// DEL key [key ...]
// UNLINK key [key ...]
func cmdDel(c *client, args [][]byte, now time.Time) {
	if !c.writeAdmitted() {
		return
	}
	at := gcra.InstantOf(now)
	n := int64(0)
	for _, key := range args[1:] {
		if c.ks.Delete(key, at) {
			c.changed(key)
			n++
		}
	}
	c.writeInt(n)
}

// EXISTS key [key ...]
//
// A key named twice counts twice, as in Redis.
func cmdExists(c *client, args [][]byte, now time.Time) {
	at := gcra.InstantOf(now)
	n := int64(0)
	for _, key := range args[1:] {
		if _, _, ok := c.lookupKey(key, at); ok {
			n++
		}
	}
	c.writeInt(n)
}

// PTTL key
//
// Every key expires at its TAT, so the reply is never -1; -2 means absent.
// The remaining nanoseconds are rounded to the nearest millisecond.
func cmdPTTL(c *client, args [][]byte, now time.Time) {
	if ms, ok := pttl(c, args[1], now); ok {
		c.writeInt(ms)
		return
	}
	c.writeInt(-2)
}

// TTL key
//
// Seconds rounded from the milliseconds as Redis does: (pttl+500)/1000.
func cmdTTL(c *client, args [][]byte, now time.Time) {
	if ms, ok := pttl(c, args[1], now); ok {
		c.writeInt((ms + 500) / 1000)
		return
	}
	c.writeInt(-2)
}

func pttl(c *client, key []byte, now time.Time) (int64, bool) {
	at := gcra.InstantOf(now)
	exp, _, ok := c.lookupKey(key, at)
	if !ok {
		return 0, false
	}
	left := time.Duration(exp - at)
	return int64((left + time.Millisecond/2) / time.Millisecond), true
}

// GET key
//
// The value is the TAT in nanoseconds since the Unix epoch, as a decimal
// string: what redis-cell stores under the key.
func cmdGet(c *client, args [][]byte, now time.Time) {
	tat, kind, ok := c.lookupKey(args[1], gcra.InstantOf(now))
	if !ok {
		c.writeNull()
		return
	}
	if kind != storage.KindTAT {
		c.writeError(errWrongType)
		return
	}
	var buf [20]byte
	c.writeBulk(strconv.AppendInt(buf[:0], int64(tat), 10))
}

// TYPE key
//
// A TAT key is a string, as redis-cell's are; a CL.WINDOW key is a window,
// a CL.ACQUIRE key leases (storage.Kind.Type).
func cmdType(c *client, args [][]byte, now time.Time) {
	_, kind, ok := c.lookupKey(args[1], gcra.InstantOf(now))
	switch {
	case !ok:
		c.writeSimple("none")
	default:
		c.writeSimple(kind.Type())
	}
}

// KEYS pattern
//
// Each shard is matched under its own lock, and a matching key's bytes go
// straight into the reply: nothing is copied for a key that does not match
// (KEYS nomatch* over a large keyspace costs no memory), and the reply is
// bounded by the client's output limit. The reply's length is written once
// known (a deferred array header).
func cmdKeys(c *client, args [][]byte, now time.Time) {
	pattern := args[1]
	mark := c.conn.DeferArray()
	n := 0
	c.ks.Each(gcra.InstantOf(now), func(key []byte, _ gcra.Instant) {
		if matches(pattern, key) {
			c.writeBulk(key)
			n++
		}
	})
	c.conn.SetDeferredArray(mark, n)
}

// matches reports whether key matches the glob pattern; a nil pattern or
// "*" matches every key. It does not copy the key.
func matches(pattern, key []byte) bool {
	if pattern == nil || string(pattern) == "*" {
		return true
	}
	return glob.Match(pattern, unsafe.String(unsafe.SliceData(key), len(key)))
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//
// As KEYS, keys are matched under their shard's lock and only the matching
// ones copied; COUNT bounds how many are looked at per call.
func cmdScan(c *client, args [][]byte, now time.Time) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.writeError(errInvalidCursor)
		return
	}
	var pattern []byte
	count := int64(10)
	onlyStrings := true
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.writeError(errSyntax)
			return
		}
		switch opt, val := args[i], args[i+1]; {
		case equalFold(opt, "match"):
			pattern = val
		case equalFold(opt, "count"):
			n, ok := parseInt(val)
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if n < 1 {
				c.writeError(errSyntax)
				return
			}
			count = min(n, 1<<20)
		case equalFold(opt, "type"):
			onlyStrings = equalFold(val, "string")
		default:
			c.writeError(errSyntax)
			return
		}
	}
	var keys []string
	next := c.ks.Scan(cursor, int(count), gcra.InstantOf(now), func(key []byte, _ gcra.Instant) {
		if onlyStrings && matches(pattern, key) {
			keys = append(keys, string(key))
		}
	})
	c.writeArray(2)
	c.writeBulkString(strconv.FormatUint(next, 10))
	c.writeArray(len(keys))
	for _, k := range keys {
		c.writeBulkString(k)
	}
}

// DBSIZE
func cmdDBSize(c *client, _ [][]byte, _ time.Time) {
	c.writeInt(int64(c.ks.Len()))
}

// FLUSHDB [ASYNC|SYNC]
// FLUSHALL [ASYNC|SYNC]
func cmdFlush(c *client, args [][]byte, _ time.Time) {
	if len(args) == 2 && !equalFold(args[1], "async") && !equalFold(args[1], "sync") {
		c.writeError(errSyntax)
		return
	}
	if !c.writeAdmitted() {
		return
	}
	c.ks.Clear()
	c.changedAll()
	c.writeOK()
}

// lookupKey is Keyspace.Get counted as a keyspace hit or miss: when the key
// expires (a TAT key's TAT) and its kind.
func (c *client) lookupKey(key []byte, now gcra.Instant) (gcra.Instant, storage.Kind, bool) {
	exp, kind, ok := c.ks.Get(key, now)
	c.srv.stats.countLookup(ok)
	return exp, kind, ok
}
