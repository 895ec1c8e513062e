package acl

import "strings"

// Category is a set of Redis's ACL categories, one bit each, in Redis's
// order (ACL CAT's): keyspace, read, write, ... scripting.
type Category uint32

// Redis 7's categories.
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
	numCategories = iota
)

// categoryNames are the categories' names without '@', in Redis's order.
var categoryNames = [numCategories]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
	"dangerous", "connection", "transaction", "scripting",
}

// CategoryNames returns every category's name, without '@', in Redis's
// order: ACL CAT's reply.
func CategoryNames() []string { return append([]string(nil), categoryNames[:]...) }

// CategoryByName returns the category a name (without '@') names,
// case-insensitively, or 0 if none does.
func CategoryByName(name string) Category {
	for i, n := range categoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// Names returns the categories of c, each with its '@', in Redis's order:
// how COMMAND INFO lists a command's.
func (c Category) Names() []string {
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, "@"+n)
		}
	}
	return out
}

// Implied returns c with the categories Redis gives a command for its
// flags (its setImplicitACLCategories): @write for write, @read for
// readonly (not for scripting commands), @admin and @dangerous for admin,
// @pubsub for pubsub, @fast for fast, @blocking for blocking, and @slow for
// every command that is not @fast.
func (c Category) Implied(write, readonly, admin, pubsub, fast, blocking bool) Category {
	if write {
		c |= CatWrite
	}
	if readonly && c&CatScripting == 0 {
		c |= CatRead
	}
	if admin {
		c |= CatAdmin | CatDangerous
	}
	if pubsub {
		c |= CatPubSub
	}
	if fast {
		c |= CatFast
	}
	if blocking {
		c |= CatBlocking
	}
	if c&CatFast == 0 {
		c |= CatSlow
	}
	return c
}
