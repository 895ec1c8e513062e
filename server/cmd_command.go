package server

import (
	"sort"
	"time"
)

// COMMAND | COMMAND COUNT | COMMAND INFO [name ...] | COMMAND DOCS [name ...] |
// COMMAND LIST
//
// Replies have Redis 7's shape, so cluster-aware clients find each command's
// keys (CL.THROTTLE's first key is at position 1) and redis-cli its docs.
func cmdCommand(c *client, args [][]byte, _ time.Time) {
	if len(args) == 1 {
		c.writeCommandInfos(c.srv.sortedCommands())
		return
	}
	sub := args[1]
	switch {
	case equalFold(sub, "count") && len(args) == 2:
		c.writeInt(int64(len(c.srv.commands)))
	case equalFold(sub, "list"):
		cmds := c.srv.sortedCommands()
		c.writeArray(len(cmds))
		for _, cmd := range cmds {
			c.writeBulkString(cmd.name)
		}
	case equalFold(sub, "info"):
		cmds := c.srv.sortedCommands()
		if len(args) > 2 {
			cmds = cmds[:0]
			for _, name := range args[2:] {
				cmds = append(cmds, c.srv.lookup(name)) // nil: reported as null
			}
		}
		c.writeCommandInfos(cmds)
	case equalFold(sub, "docs"):
		cmds := c.srv.sortedCommands()
		if len(args) > 2 {
			cmds = cmds[:0]
			for _, name := range args[2:] {
				if cmd := c.srv.lookup(name); cmd != nil {
					cmds = append(cmds, cmd)
				}
			}
		}
		c.writeMap(len(cmds))
		for _, cmd := range cmds {
			c.writeBulkString(cmd.name)
			c.writeCommandDoc(cmd)
		}
	default:
		c.writeError(errUnknownSubcommand(sub, "COMMAND"))
	}
}

func (s *Server) sortedCommands() []*command {
	out := make([]*command, 0, len(s.commands))
	for _, cmd := range s.commands {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
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
	c.writeArray(0) // tips
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
