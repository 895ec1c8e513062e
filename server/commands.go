package server

import (
	"slices"
	"strings"
	"time"

	"github.com/redcell/redcell/acl"
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
	// acl are the command's ACL categories as COMMAND shows them, in
	// Redis's order; register adds those Redis gives a command for its
	// flags (acl.Category.Implied) and sets cats from them.
	acl  []string
	cats acl.Category
	// channels says which arguments are Pub/Sub channels a user must be
	// allowed (PUBLISH, SUBSCRIBE, ...).
	channels acl.ChannelArgs
	// perm is the command as the ACL rules know it (acl.Commands), made
	// from the fields above by newCommandTable.
	perm *acl.Command
	// firstKey, lastKey and step locate key arguments (0 0 0: no keys), so
	// cluster-aware clients route on the right argument.
	firstKey, lastKey, step int
	keyFlags                []string // key-spec flags, as Redis spells them: RW update
	// tips are Redis's COMMAND tips: a request_policy tells a cluster
	// client to send the command to every shard (all_shards) or to split
	// its keys by slot (multi_shard), and a response_policy how to merge
	// the replies (agg_sum, ...).
	tips []string

	// noAuth commands run before the client has authenticated.
	noAuth bool
	// write, readonly and admin are set from flags by register: CLIENT
	// PAUSE WRITE holds write commands, a monitor may run neither write nor
	// readonly ones, and MONITOR does not show admin ones. noMulti (the
	// no_multi flag) commands are refused inside MULTI.
	write, readonly, admin, noMulti bool
	// mayReplicate is Redis's may_replicate, which COMMAND does not show
	// (Redis hides it): a monitor may not run it either (PUBLISH).
	mayReplicate bool
	// offLoop commands run on a goroutine of the connection's own, never
	// on an event loop (engine.NeedGoroutine): admin commands, which may wait,
	// and those that start an outbox (SUBSCRIBE). register sets it for admin
	// commands.
	offLoop bool
	// inSubscribed commands are the ones a client subscribed under RESP2
	// may run, as in Redis: (P)(UN)SUBSCRIBE, PING, QUIT, RESET.
	inSubscribed bool
	// txControl commands run at once inside MULTI instead of being queued
	// (MULTI, EXEC, DISCARD, WATCH, QUIT, as in Redis). wholeKeyspace
	// commands read or change keys beyond their key arguments (KEYS,
	// FLUSHDB, INFO, ...): in a transaction they need every shard locked.
	txControl, wholeKeyspace bool
	// prefetchKey commands look their first argument up in the store at
	// once: a pipeline of them has its keys prefetched (Server.prefetchAhead).
	prefetchKey bool
	// peekArg is the position of a limiter's quantity: with "0" there the
	// command only reads, which a cluster replica may answer.
	peekArg int

	group, summary, since, complexity string

	// run serves the command. A container's run is set by register: it runs
	// the subcommand its first argument names (runSubcommand).
	run func(c *client, args [][]byte, now time.Time)
	// subcommands are a container's (CLIENT's, OBJECT's, MEMORY's), each an
	// entry of its own named "parent|sub", with its own arity, flags and run.
	subcommands []*command
	// anyArity subcommands are run whatever their number of arguments,
	// though COMMAND reports their arity: CLIENT TRACKING answers why it is
	// refused however it is called.
	anyArity bool

	// stats count the command's calls for INFO and /metrics (stats).
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

// commandTable is the commands a Server serves: by name for dispatch, and in
// name order for COMMAND and INFO commandstats. Each Server builds its own
// (newCommandTable), so each counts its commands apart.
type commandTable struct {
	byName map[string]*command
	sorted []*command
	// rules are the commands as ACL rules name them, each command's perm.
	rules *acl.Commands
}

// newCommandTable registers every family's commands. Each family declares
// its commands, with what COMMAND reports about them, at the top of its own
// file, above the handlers.
func newCommandTable() commandTable {
	t := commandTable{byName: make(map[string]*command)}
	for _, family := range [][]*command{
		throttleFamily(),
		gcraFamily(),
		reserveFamily(),
		windowFamily(),
		leaseFamily(),
		topFamily(),
		countFamily(),
		keysFamily(),
		objectFamily(),
		connFamily(),
		clientFamily(),
		serverFamily(),
		commandFamily(),
		monitorFamily(),
		multiFamily(),
		pubsubFamily(),
		replicationFamily(),
		clusterFamily(),
		aclFamily(),
	} {
		for _, cmd := range family {
			t.register(cmd)
		}
	}
	slices.SortFunc(t.sorted, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	perms := make([]*acl.Command, len(t.sorted))
	for i, cmd := range t.sorted {
		perms[i] = cmd.permission()
		for _, sub := range cmd.subcommands {
			perms[i].Subcommands = append(perms[i].Subcommands, sub.permission())
		}
	}
	t.rules = acl.NewCommands(perms)
	return t
}

// permission makes cmd's perm: its name, categories, keys and channels as
// the ACL rules see them. A key-spec of not_key (a shard channel, which
// cluster mode routes as a key) is no key: its argument is checked as a
// channel.
func (cmd *command) permission() *acl.Command {
	cmd.perm = &acl.Command{Name: cmd.name, Categories: cmd.cats, NoAuth: cmd.noAuth, Channels: cmd.channels}
	if cmd.firstKey != 0 && !slices.Contains(cmd.keyFlags, "not_key") {
		cmd.perm.Keys = acl.KeySpec{First: cmd.firstKey, Last: cmd.lastKey, Step: cmd.step, Perm: acl.PermOf(cmd.keyFlags)}
	}
	return cmd.perm
}

// register adds cmd to the table, with its counters, and sets what its
// flags and its subcommands' say (write, readonly, admin, offLoop, ...); a
// container's run dispatches to its subcommands. A name registered twice is
// a programming error: it panics.
func (t *commandTable) register(cmd *command) {
	if _, dup := t.byName[cmd.name]; dup {
		panic("server: command " + cmd.name + " registered twice")
	}
	if (cmd.run == nil) == (cmd.subcommands == nil) {
		panic("server: command " + cmd.name + " needs either a handler or subcommands")
	}
	cmd.stats = new(cmdStats)
	for _, sub := range cmd.subcommands {
		// A subcommand is never looked up by name (lookup knows
		// containers only), but it has counters as every command a
		// client reaches does, so that nothing that counts a command
		// finds none.
		sub.stats = new(cmdStats)
	}
	if cmd.subcommands != nil {
		cmd.run = func(c *client, args [][]byte, now time.Time) { c.runSubcommand(cmd, args, now) }
	}
	t.byName[cmd.name] = cmd
	t.sorted = append(t.sorted, cmd)
	for _, spec := range append([]*command{cmd}, cmd.subcommands...) {
		spec.write = slices.Contains(spec.flags, "write")
		spec.readonly = slices.Contains(spec.flags, "readonly")
		spec.admin = slices.Contains(spec.flags, "admin")
		spec.offLoop = spec.offLoop || spec.admin
		spec.noMulti = slices.Contains(spec.flags, "no_multi")
		spec.cats = 0
		for _, name := range spec.acl {
			cat := acl.CategoryByName(strings.TrimPrefix(name, "@"))
			if cat == 0 || name[0] != '@' {
				panic("server: command " + spec.name + " has an unknown ACL category " + name)
			}
			spec.cats |= cat
		}
		spec.cats = spec.cats.Implied(spec.write, spec.readonly, spec.admin, slices.Contains(spec.flags, "pubsub"),
			slices.Contains(spec.flags, "fast"), slices.Contains(spec.flags, "blocking"))
		spec.acl = spec.cats.Names()
	}
}

// subcommand returns the subcommand of cmd that name names ("list" for
// "client|list"), case-insensitively, or nil.
func (cmd *command) subcommand(name []byte) *command {
	for _, sub := range cmd.subcommands {
		if equalFold(name, sub.name[len(cmd.name)+1:]) {
			return sub
		}
	}
	return nil
}

// runSubcommand runs a container's subcommand, the one args[1] names, as
// Redis does: unknown, it is an error; known, it becomes the connection's
// last command (CLIENT LIST shows cmd=client|info, as Redis 7 does), and
// its arity is checked before it runs.
func (c *client) runSubcommand(parent *command, args [][]byte, now time.Time) {
	sub := parent.subcommand(args[1])
	if sub == nil {
		c.writeError(errUnknownSubcommand(args[1], strings.ToUpper(parent.name)))
		return
	}
	c.lastCmd.Store(sub)
	if !sub.anyArity && !sub.arityOK(len(args)) {
		c.writeError(errWrongArgs(sub.name))
		return
	}
	sub.run(c, args, now)
}
