package acl

import (
	"slices"
	"strings"
)

// Command is what the rules know of one command the server serves: its
// name, its categories, where its keys and channels are among its
// arguments, and a container's subcommands. The server describes each
// of its commands once (NewCommands); a user's rules are parsed against
// that set.
type Command struct {
	// Name is the lower-case full name, as Redis's: "get", "client|kill".
	Name       string
	Categories Category
	// NoAuth commands (AUTH, HELLO, QUIT, RESET) run before a client has
	// authenticated, and no user is refused them: Redis's CMD_NO_AUTH.
	NoAuth bool
	// Keys says which arguments are keys, and what the command does with
	// them. The zero value: no keys.
	Keys KeySpec
	// Channels says which arguments are Pub/Sub channels a user must be
	// allowed. The zero value: none.
	Channels ChannelArgs
	// Subcommands are a container's (CLIENT's, CONFIG's), each named
	// "parent|sub".
	Subcommands []*Command

	parent *Command
	id     int
}

// KeySpec locates a command's key arguments, as the legacy triple of
// Redis's COMMAND INFO: arguments First, First+Step, ... up to Last (a
// negative Last counts from the end: -1 is the last argument), with Perm
// the access they need.
type KeySpec struct {
	First, Last, Step int
	Perm              Perm
}

// Perm is the access to a key a command needs, and that a key pattern
// grants: read (Redis's ACCESS: the command returns what the key holds),
// write (INSERT, DELETE, UPDATE: it changes the key), both, or neither (a
// command that only looks at whether the key exists, which any pattern
// matching the key allows).
type Perm uint8

// The permissions.
const (
	PermRead  Perm = 1 << iota
	PermWrite      // insert, delete or update
	PermAll   = PermRead | PermWrite
)

// PermOf is the access Redis's key-spec flags need: read for "access"
// (case-insensitive), write for "insert", "delete" or "update".
func PermOf(keySpecFlags []string) Perm {
	var p Perm
	for _, f := range keySpecFlags {
		switch strings.ToLower(f) {
		case "access":
			p |= PermRead
		case "insert", "delete", "update":
			p |= PermWrite
		}
	}
	return p
}

// ChannelArgs is which of a command's arguments are channels.
type ChannelArgs uint8

// The commands that name channels, as Redis checks them.
const (
	// NoChannels: the command names none a user needs (UNSUBSCRIBE,
	// PUBSUB NUMSUB, ... are not checked, as in Redis).
	NoChannels ChannelArgs = iota
	// PublishChannel: the first argument (PUBLISH, SPUBLISH).
	PublishChannel
	// SubscribeChannels: every argument (SUBSCRIBE, SSUBSCRIBE).
	SubscribeChannels
	// SubscribePatterns: every argument is a pattern (PSUBSCRIBE), which a
	// user's channel pattern allows only when equal to it.
	SubscribePatterns
)

// Commands is the set of commands a server serves, as rules name them.
// It is immutable once made.
type Commands struct {
	byName map[string]*Command
	top    []*Command // the top-level commands, by name
	n      int        // commands and subcommands
}

// NewCommands gives each command and subcommand its ID and returns the
// set. A command must not be in two sets.
func NewCommands(cmds []*Command) *Commands {
	cs := &Commands{byName: make(map[string]*Command)}
	top := slices.Clone(cmds)
	slices.SortFunc(top, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range top {
		cs.add(c, nil)
		for _, s := range c.Subcommands {
			cs.add(s, c)
		}
	}
	cs.top = top
	return cs
}

func (cs *Commands) add(c, parent *Command) {
	c.id, c.parent = cs.n, parent
	cs.n++
	cs.byName[c.Name] = c
}

// Lookup returns the command or subcommand ("client|kill") named,
// case-insensitively, or nil.
func (cs *Commands) Lookup(name string) *Command {
	if c, ok := cs.byName[name]; ok {
		return c
	}
	return cs.byName[strings.ToLower(name)]
}

// InCategory returns the names of the commands and subcommands in cat, in
// name order: ACL CAT <category>'s reply.
func (cs *Commands) InCategory(cat Category) []string {
	var out []string
	for _, c := range cs.top {
		if c.Categories&cat != 0 {
			out = append(out, c.Name)
		}
		for _, s := range c.Subcommands {
			if s.Categories&cat != 0 {
				out = append(out, s.Name)
			}
		}
	}
	return out
}

// words is the length of a selector's command bitmap: a bit per command,
// and one more, the last, set by +@all alone (futureBit).
func (cs *Commands) words() int { return (cs.n + 1 + 63) / 64 }

// futureBit is the bit +@all (allcommands) sets beside every command's:
// set, the user may run commands this set does not have, which a later
// version may add (Redis's reserved bit for modules' commands).
func (cs *Commands) futureBit() int { return cs.n }
