package server

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redcell/redcell/acl"
)

// aclFamily is ACL, for the command table (newCommandTable): Redis 7.2's
// subcommands, with its arity, flags and texts. Every one runs off the
// event loops: they are rare, and LOAD and SAVE read and sync a file.
//
//	ACL CAT [category] | DELUSER user... | DRYRUN user command [arg...] |
//	GENPASS [bits] | GETUSER user | HELP | LIST | LOAD | LOG [count|RESET] |
//	SAVE | SETUSER user [rule...] | USERS | WHOAMI
func aclFamily() []*command {
	sub := func(name string, arity int, admin bool, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
		flags := []string{"noscript", "loading", "stale"}
		if admin {
			flags = append([]string{"admin"}, flags...)
		}
		return &command{name: "acl|" + name, arity: arity, flags: flags, acl: []string{"@slow"}, group: "server",
			since: "6.0.0", summary: summary, complexity: complexity, run: run}
	}
	dryrun := sub("dryrun", -4, true, "Simulates the execution of a command by a user, without executing the command.", "O(1).", cmdACLDryRun)
	dryrun.since = "7.0.0"
	help := helpSubcommand("acl", "6.0.0", aclHelp)
	help.group = "server"
	return []*command{
		{name: "acl", arity: -2, offLoop: true, flags: []string{}, acl: []string{"@slow"}, group: "server", since: "6.0.0",
			complexity: "Depends on subcommand.", summary: "A container for Access List Control commands.",
			subcommands: []*command{
				sub("cat", -2, false, "Lists the ACL categories, or the commands inside a category.", "O(1) since the categories and commands are a fixed set.", cmdACLCat),
				sub("deluser", -3, true, "Deletes ACL users, and terminates their connections.", "O(1) amortized time considering the typical user.", cmdACLDelUser),
				dryrun,
				sub("genpass", -2, false, "Generates a pseudorandom, secure password that can be used to identify ACL users.", "O(1)", cmdACLGenPass),
				sub("getuser", 3, true, "Lists the ACL rules of a user.", "O(N). Where N is the number of password, command and pattern rules that the user has.", cmdACLGetUser),
				help,
				sub("list", 2, true, "Dumps the effective rules in ACL file format.", "O(N). Where N is the number of configured users.", cmdACLList),
				sub("load", 2, true, "Reloads the rules from the configured ACL file.", "O(N). Where N is the number of configured users.", cmdACLLoad),
				sub("log", -2, true, "Lists recent security events generated due to ACL rules.", "O(N) with N being the number of entries shown.", cmdACLLog),
				sub("save", 2, true, "Saves the effective ACL rules in the configured ACL file.", "O(N). Where N is the number of configured users.", cmdACLSave),
				sub("setuser", -3, true, "Creates and modifies an ACL user and its rules.", "O(N). Where N is the number of rules provided.", cmdACLSetUser),
				sub("users", 2, true, "Lists all ACL users.", "O(N). Where N is the number of configured users.", cmdACLUsers),
				sub("whoami", 2, false, "Returns the authenticated username of the current connection.", "O(1)", cmdACLWhoAmI),
			}},
	}
}

// aclHelp is Redis 7.2's ACL HELP.
var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Print this help.",
}

// ACL SETUSER username [rule ...]
//
// All the rules or none: the user is made anew from the old one and put
// in its place; its connections are rebound to it, or closed if it is
// off or no longer allows their subscriptions (users.userChanged).
func cmdACLSetUser(c *client, args [][]byte, _ time.Time) {
	name := string(args[2])
	if !acl.ValidName(name) {
		c.writeError(errBadUsername)
		return
	}
	rules := make([]string, len(args)-3)
	for i, a := range args[3:] {
		rules[i] = string(a)
	}
	if err := c.srv.setUser(c, name, rules); err != nil {
		c.writeError(errACLRule(err))
		return
	}
	c.writeOK()
}

// ACL DELUSER username [username ...]
//
// Answers how many of the users there were; their connections are
// closed. The default user cannot be deleted.
func cmdACLDelUser(c *client, args [][]byte, _ time.Time) {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		if names[i] = string(a); names[i] == "default" {
			c.writeError(errDeleteDefault)
			return
		}
	}
	c.writeInt(int64(c.srv.deleteUsers(c, names)))
}

// ACL GETUSER username
//
// The user's flags, password digests and root selector's commands, keys
// and channels, then its other selectors: a map, or null for no such user.
func cmdACLGetUser(c *client, args [][]byte, _ time.Time) {
	us := c.srv.users
	us.mu.Lock()
	u := us.set.Get(string(args[2]))
	us.mu.Unlock()
	if u == nil {
		c.writeNull()
		return
	}
	c.writeMap(6)
	c.writeBulkString("flags")
	flags := u.Flags()
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeBulkString(f)
	}
	c.writeBulkString("passwords")
	pw := u.Passwords()
	c.writeArray(len(pw))
	for _, p := range pw {
		c.writeBulkString(p)
	}
	sels := u.Selectors()
	c.writeSelector(sels[0])
	c.writeBulkString("selectors")
	c.writeArray(len(sels) - 1)
	for _, s := range sels[1:] {
		c.writeMap(3)
		c.writeSelector(s)
	}
}

// writeSelector writes a selector's three fields, as ACL GETUSER does.
func (c *client) writeSelector(s acl.SelectorRules) {
	c.writeBulkString("commands")
	c.writeBulkString(s.Commands)
	c.writeBulkString("keys")
	c.writeBulkString(s.Keys)
	c.writeBulkString("channels")
	c.writeBulkString(s.Channels)
}

// ACL LIST
//
// Each user as a line of the ACL file, in name order.
func cmdACLList(c *client, _ [][]byte, _ time.Time) {
	all := c.srv.users.all()
	c.writeArray(len(all))
	for _, u := range all {
		c.writeBulkString("user " + u.Name() + " " + u.Describe())
	}
}

// ACL USERS
func cmdACLUsers(c *client, _ [][]byte, _ time.Time) {
	all := c.srv.users.all()
	c.writeArray(len(all))
	for _, u := range all {
		c.writeBulkString(u.Name())
	}
}

// ACL WHOAMI
func cmdACLWhoAmI(c *client, _ [][]byte, _ time.Time) { c.writeBulkString(c.userName()) }

// ACL CAT [category]
//
// Every category's name, or the commands and subcommands in one, in name
// order (Redis: in its hash table's).
func cmdACLCat(c *client, args [][]byte, _ time.Time) {
	if len(args) > 3 {
		c.writeError(errSubcommandSyntax(args[1], "ACL"))
		return
	}
	if len(args) == 2 {
		names := acl.CategoryNames()
		c.writeArray(len(names))
		for _, n := range names {
			c.writeBulkString(n)
		}
		return
	}
	cat := acl.CategoryByName(string(args[2]))
	if cat == 0 {
		c.writeError(errUnknownCategory(args[2]))
		return
	}
	names := c.srv.users.cmds.InCategory(cat)
	c.writeArray(len(names))
	for _, n := range names {
		c.writeBulkString(n)
	}
}

// ACL GENPASS [bits]
//
// A random password of bits (default 256, at most 4096) as hex digits.
func cmdACLGenPass(c *client, args [][]byte, _ time.Time) {
	if len(args) > 3 {
		c.writeError(errSubcommandSyntax(args[1], "ACL"))
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		var ok bool
		if bits, ok = parseInt(args[2]); !ok {
			c.writeError(errNotInteger)
			return
		}
	}
	if bits <= 0 || bits > 4096 {
		c.writeError(errGenpassArg)
		return
	}
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	_, _ = rand.Read(b) // never fails: crypto/rand panics rather than return an error
	c.writeBulkString(hex.EncodeToString(b)[:chars])
}

// ACL LOG [count | RESET]
//
// The newest entries of the ACL LOG (10 by default), each a map of Redis
// 7.2's ten fields; RESET empties it.
func cmdACLLog(c *client, args [][]byte, now time.Time) {
	if len(args) > 3 {
		c.writeError(errSubcommandSyntax(args[1], "ACL"))
		return
	}
	log := c.srv.users.log
	count := int64(10)
	if len(args) == 3 {
		if equalFold(args[2], "reset") {
			log.Reset()
			c.writeOK()
			return
		}
		var ok bool
		if count, ok = parseInt(args[2]); !ok {
			c.writeError(errNotInteger)
			return
		}
	}
	entries := log.Entries(int(min(count, 1<<20)))
	c.writeArray(len(entries))
	for _, e := range entries {
		c.writeMap(10)
		c.writeBulkString("count")
		c.writeInt(e.Count)
		c.writeBulkString("reason")
		c.writeBulkString(e.Reason.String())
		c.writeBulkString("context")
		c.writeBulkString(e.Context.String())
		c.writeBulkString("object")
		c.writeBulkString(e.Object)
		c.writeBulkString("username")
		c.writeBulkString(e.Username)
		c.writeBulkString("age-seconds")
		c.writeDouble(float64(now.Sub(e.Updated).Milliseconds()) / 1000)
		c.writeBulkString("client-info")
		c.writeBulkString(e.ClientInfo)
		c.writeBulkString("entry-id")
		c.writeInt(e.ID)
		c.writeBulkString("timestamp-created")
		c.writeInt(e.Created.UnixMilli())
		c.writeBulkString("timestamp-last-updated")
		c.writeInt(e.Updated.UnixMilli())
	}
}

// ACL DRYRUN username command [arg ...]
//
// Whether the user may run the command with those arguments: OK, or why
// not, as a reply (not an error), naming the key or channel refused.
func cmdACLDryRun(c *client, args [][]byte, _ time.Time) {
	us := c.srv.users
	us.mu.Lock()
	u := us.set.Get(string(args[2]))
	us.mu.Unlock()
	if u == nil {
		c.writeError(errNoSuchUserDryRun(args[2]))
		return
	}
	argv := args[3:]
	cmd := c.srv.lookup(argv[0])
	if cmd != nil && cmd.subcommands != nil && len(argv) > 1 {
		cmd = cmd.subcommand(argv[1])
	}
	if cmd == nil {
		c.writeError(errNoSuchCommandDryRun(argv[0]))
		return
	}
	if !cmd.arityOK(len(argv)) {
		c.writeError(errWrongArgs(cmd.name))
		return
	}
	if d := u.Check(cmd.perm, argv); d.Reason != acl.Allowed {
		c.writeBulkString(aclDenial(u.Name(), cmd.name, d.Reason, argv[d.Arg]))
		return
	}
	c.writeOK()
}

// ACL LOAD
//
// The users of --aclfile replace those in force, all or none: a file with
// an error changes nothing, and the answer names every line's error.
func cmdACLLoad(c *client, _ [][]byte, _ time.Time) {
	if c.srv.users.file == "" {
		c.writeError(errNoACLFile)
		return
	}
	set, e := c.srv.readACLFile()
	if !e.none() {
		c.writeError(e)
		return
	}
	c.srv.replaceUsers(c, set)
	c.writeOK()
}

// ACL SAVE
//
// Writes the users in force to --aclfile, whole or not at all (a
// temporary file synced and renamed over it), passwords as digests.
func cmdACLSave(c *client, _ [][]byte, _ time.Time) {
	if c.srv.users.file == "" {
		c.writeError(errNoACLFile)
		return
	}
	if err := c.srv.saveACLFile(); err != nil {
		c.srv.logError("ACL SAVE failed", err)
		c.writeError(errACLSave)
		return
	}
	c.writeOK()
}
