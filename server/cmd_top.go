package server

import (
	"time"

	"github.com/redcell/redcell/gcra"
)

// topFamily is CL.TOP, for the command table (newCommandTable).
func topFamily() []*command {
	return []*command{
		// As SLOWLOG, the other introspection command whose answer names
		// what clients sent: @admin, so that an application's user does
		// not read other tenants' keys.
		{name: "cl.top", arity: -1, maxArgs: 3, flags: []string{"admin", "noscript", "loading", "stale"},
			acl: []string{"@admin", "@slow", "@dangerous"}, group: "server", since: "0.2.0",
			complexity: "O(S*C log(S*C)) for S shards of C keys tracked",
			summary:    "Lists the keys limited most over about the last minute on this node: key, limited, allowed.",
			run:        cmdTop},
	}
}

// DefaultTopCount is how many keys CL.TOP lists without COUNT.
const DefaultTopCount = 10

// CL.TOP [COUNT n]
//
// The keys limited most over about the last minute, most limited first,
// each [key, limited, allowed], from the store's heavy-hitters sketches
// (package top: a limited count is over by at most the count a key
// inherited when it took its slot). This node's view: not replicated.
func cmdTop(c *client, args [][]byte, now time.Time) {
	n := int64(DefaultTopCount)
	switch {
	case len(args) == 1:
	case len(args) == 3 && equalFold(args[1], "count"):
		v, ok := parseInt(args[2])
		if !ok {
			c.writeError(errNotInteger)
			return
		}
		if v < 0 {
			c.writeError(errGCRABurst) // Redis's words for a negative count
			return
		}
		n = v
	default:
		c.writeError(errSyntax)
		return
	}
	entries := c.ks.Top(int(min(n, 1<<20)), gcra.InstantOf(now)) // the transaction's shards, inside EXEC
	c.writeArray(len(entries))
	for _, e := range entries {
		c.writeArray(3)
		c.writeBulkString(e.Key)
		c.writeInt(e.Limited)
		c.writeInt(e.Allowed)
	}
}
