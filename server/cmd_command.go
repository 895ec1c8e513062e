package server

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/redcell/redcell/internal/glob"
)

// commandFamily is COMMAND, for the command table (newCommandTable).
func commandFamily() []*command {
	return []*command{
		{name: "command", arity: -1, flags: []string{"loading", "stale"}, acl: []string{"@slow", "@connection"},
			group: "server", since: "2.8.13", complexity: "O(N) where N is the total number of commands", summary: "Returns detailed information about all commands.", run: cmdCommand},
	}
}

// COMMAND | COMMAND COUNT | COMMAND INFO [name ...] | COMMAND DOCS [name ...] |
// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern] |
// COMMAND GETKEYS command [arg ...]
//
// Replies have Redis 7's shape, so cluster-aware clients find each command's
// keys (CL.THROTTLE's first key is at position 1) and redis-cli its docs.
// Names may be a subcommand's full name, as "client|list".
func cmdCommand(c *client, args [][]byte, _ time.Time) {
	if len(args) == 1 {
		c.writeCommandInfos(c.srv.commands.sorted)
		return
	}
	sub := args[1]
	switch {
	case equalFold(sub, "count"):
		if len(args) != 2 {
			c.writeError(errWrongArgs("command|count"))
			return
		}
		c.writeInt(int64(len(c.srv.commands.sorted)))
	case equalFold(sub, "list"):
		c.commandList(args[2:])
	case equalFold(sub, "info"):
		cmds := c.srv.commands.sorted
		if len(args) > 2 {
			cmds = make([]*command, 0, len(args)-2)
			for _, name := range args[2:] {
				cmds = append(cmds, c.srv.lookupFull(name)) // nil: reported as null
			}
		}
		c.writeCommandInfos(cmds)
	case equalFold(sub, "docs"):
		cmds := c.srv.commands.sorted
		if len(args) > 2 {
			cmds = make([]*command, 0, len(args)-2)
			for _, name := range args[2:] {
				if cmd := c.srv.lookupFull(name); cmd != nil {
					cmds = append(cmds, cmd)
				}
			}
		}
		c.writeMap(len(cmds))
		for _, cmd := range cmds {
			c.writeBulkString(cmd.name)
			c.writeCommandDoc(cmd)
		}
	case equalFold(sub, "getkeys"):
		if len(args) < 3 {
			c.writeError(errWrongArgs("command|getkeys"))
			return
		}
		c.commandGetKeys(args[2:])
	default:
		c.writeError(errUnknownSubcommand(sub, "COMMAND"))
	}
}

// lookupFull finds a command by name or a subcommand by its full name
// ("client|list"), case-insensitively.
func (s *Server) lookupFull(name []byte) *command {
	parent, child, ok := bytes.Cut(name, []byte("|"))
	cmd := s.lookup(parent)
	if !ok || cmd == nil {
		return cmd
	}
	return cmd.subcommand(child)
}

// commandList writes COMMAND LIST: every command's name, each followed by
// its subcommands' full names, as Redis lists them.
func (c *client) commandList(opts [][]byte) {
	keep := func(*command) bool { return true }
	switch {
	case len(opts) == 0:
	case len(opts) == 3 && equalFold(opts[0], "filterby"):
		arg := strings.ToLower(string(opts[2]))
		switch kind := opts[1]; {
		case equalFold(kind, "module"):
			keep = func(*command) bool { return false } // no module commands here
		case equalFold(kind, "aclcat"):
			keep = func(cmd *command) bool { return slices.Contains(cmd.acl, "@"+arg) }
		case equalFold(kind, "pattern"):
			keep = func(cmd *command) bool { return glob.Match([]byte(arg), cmd.name) }
		default:
			c.writeError(errSyntax)
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	var names []string
	for _, cmd := range c.srv.commands.sorted {
		if keep(cmd) {
			names = append(names, cmd.name)
		}
		for _, sub := range cmd.subcommands {
			if keep(sub) {
				names = append(names, sub.name)
			}
		}
	}
	c.writeArray(len(names))
	for _, name := range names {
		c.writeBulkString(name)
	}
}

// commandGetKeys writes the key arguments of the command line args, with
// Redis's errors and Redis's arity rule.
func (c *client) commandGetKeys(args [][]byte) {
	cmd := c.srv.lookupFull(args[0])
	switch {
	case cmd == nil:
		c.writeError(errGetKeysNoCommand)
		return
	case cmd.firstKey == 0:
		c.writeError(errGetKeysNoKeys)
		return
	case cmd.arity > 0 && len(args) != cmd.arity, len(args) < -cmd.arity:
		c.writeError(errGetKeysArity)
		return
	}
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	n := 0
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
		n++
	}
	c.writeArray(n)
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
		c.writeBulk(args[i])
	}
}

func (c *client) writeCommandInfos(cmds []*command) {
	c.writeArray(len(cmds))
	for _, cmd := range cmds {
		if cmd == nil {
			c.writeNull()
			continue
		}
		c.writeCommandInfo(cmd)
	}
}

// writeCommandInfo writes the ten fields of a Redis 7 COMMAND entry.
func (c *client) writeCommandInfo(cmd *command) {
	c.writeArray(10)
	c.writeBulkString(cmd.name)
	c.writeInt(int64(cmd.arity))
	c.writeSet(len(cmd.flags))
	for _, f := range cmd.flags {
		c.writeSimple(f)
	}
	c.writeInt(int64(cmd.firstKey))
	c.writeInt(int64(cmd.lastKey))
	c.writeInt(int64(cmd.step))
	c.writeSet(len(cmd.acl))
	for _, a := range cmd.acl {
		c.writeSimple(a)
	}
	c.writeArray(len(cmd.tips))
	for _, tip := range cmd.tips {
		c.writeBulkString(tip)
	}
	if cmd.firstKey == 0 {
		c.writeArray(0)
	} else {
		c.writeKeySpec(cmd)
	}
	c.writeArray(len(cmd.subcommands))
	for _, sub := range cmd.subcommands {
		c.writeCommandInfo(sub)
	}
}

// writeKeySpec writes one key specification: keys start at firstKey and run
// to lastKey (-1: the last argument) in steps of step.
func (c *client) writeKeySpec(cmd *command) {
	c.writeArray(1)
	c.writeMap(3)
	c.writeBulkString("flags")
	c.writeSet(len(cmd.keyFlags))
	for _, f := range cmd.keyFlags {
		c.writeSimple(f)
	}
	c.writeBulkString("begin_search")
	c.writeMap(2)
	c.writeBulkString("type")
	c.writeBulkString("index")
	c.writeBulkString("spec")
	c.writeMap(1)
	c.writeBulkString("index")
	c.writeInt(int64(cmd.firstKey))
	c.writeBulkString("find_keys")
	c.writeMap(2)
	c.writeBulkString("type")
	c.writeBulkString("range")
	c.writeBulkString("spec")
	c.writeMap(3)
	c.writeBulkString("lastkey")
	last := int64(0)
	if cmd.lastKey < 0 {
		last = int64(cmd.lastKey)
	} else {
		last = int64(cmd.lastKey - cmd.firstKey)
	}
	c.writeInt(last)
	c.writeBulkString("keystep")
	c.writeInt(int64(cmd.step))
	c.writeBulkString("limit")
	c.writeInt(0)
}

// writeCommandDoc writes a COMMAND DOCS entry: summary, since, group and
// complexity, and the subcommands' docs.
func (c *client) writeCommandDoc(cmd *command) {
	fields := 4
	if len(cmd.subcommands) > 0 {
		fields++
	}
	c.writeMap(fields)
	c.writeBulkString("summary")
	c.writeBulkString(cmd.summary)
	c.writeBulkString("since")
	c.writeBulkString(cmd.since)
	c.writeBulkString("group")
	c.writeBulkString(cmd.group)
	c.writeBulkString("complexity")
	c.writeBulkString(cmd.complexity)
	if len(cmd.subcommands) > 0 {
		c.writeBulkString("subcommands")
		c.writeMap(len(cmd.subcommands))
		for _, sub := range cmd.subcommands {
			c.writeBulkString(sub.name)
			c.writeCommandDoc(sub)
		}
	}
}
