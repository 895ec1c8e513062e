package server

import (
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// Transactions, as Redis's: after MULTI every command is queued (+QUEUED)
// or refused (an error, which marks the transaction: EXEC then answers
// EXECABORT and runs nothing); EXEC runs the queue with nothing of any other
// client's between its commands, and answers an array of their replies.
//
// Atomicity comes from the keyspace's shard locks: EXEC locks the shards of
// every key its commands name (every shard, if one of them reads or changes
// the whole keyspace), in the one order every transaction uses
// (storage.Store.Lock), runs the commands on the locked keyspace, then
// unlocks. Every other client's command on those keys waits for the lock,
// as it would wait for Redis's single thread. A client's commands reach the
// keyspace through c.ks, which is the store outside EXEC and the locked
// transaction inside it.

// multiFamily is the transaction commands, as Redis 7 describes them, for the
// command table (newCommandTable).
func multiFamily() []*command {
	txFlags := []string{"noscript", "loading", "stale", "fast", "allow_busy"}
	return []*command{
		{name: "multi", arity: 1, txControl: true, flags: txFlags, acl: []string{"@fast", "@transaction"},
			group: "transactions", since: "1.2.0", complexity: "O(1)", summary: "Starts a transaction.", run: cmdMulti},
		{name: "exec", arity: 1, txControl: true, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, acl: []string{"@slow", "@transaction"},
			group: "transactions", since: "1.2.0", complexity: "Depends on commands in the transaction", summary: "Executes all commands in a transaction.", run: cmdExec},
		{name: "discard", arity: 1, txControl: true, flags: txFlags, acl: []string{"@fast", "@transaction"},
			group: "transactions", since: "2.0.0", complexity: "O(N), when N is the number of queued commands", summary: "Discards a transaction.", run: cmdDiscard},
		{name: "watch", arity: -2, txControl: true, flags: txFlags, acl: []string{"@fast", "@transaction"},
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"RO"},
			group: "transactions", since: "2.2.0", complexity: "O(1) for every key.", summary: "Monitors changes to keys to determine the execution of a transaction.", run: cmdWatch},
		{name: "unwatch", arity: 1, flags: txFlags, acl: []string{"@fast", "@transaction"},
			group: "transactions", since: "2.2.0", complexity: "O(1)", summary: "Forgets about watched keys of a transaction.", run: cmdUnwatch},
	}
}

// multiState is a client's transaction between MULTI and EXEC.
type multiState struct {
	queue   []queued
	aborted bool // a command was refused while queueing: EXEC answers EXECABORT
	// slot is the cluster slot of the first key queued, -1 before it: a
	// transaction's keys must all be in one (client.routeAny). crossSlot: a
	// key of another slot was queued, and EXEC answers CROSSSLOT.
	slot      int
	crossSlot bool
}

// queued is one command waiting for EXEC, its arguments copied out of the
// connection's read buffer.
type queued struct {
	spec *command
	args [][]byte
}

// watchedKey is a key WATCHed, as it was then: a transaction whose watched
// key has changed since (a decision stored a new state, it was deleted or
// created, or it expired) is not run. The key's fingerprint
// (storage.Store.Fingerprint) tells any change apart.
type watchedKey struct {
	key  string
	fp   uint64
	live bool
}

// maxWatched bounds a client's watched keys, so that WATCH in a loop cannot
// make the server hold any amount.
const maxWatched = 1 << 16

// queue adds a command to the transaction and answers QUEUED.
func (c *client) queue(spec *command, args [][]byte) {
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size) // one copy for all the arguments
	copied := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		copied[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	c.tx.multi.queue = append(c.tx.multi.queue, queued{spec: spec, args: copied})
	c.writeSimple("QUEUED")
}

// flagTransaction marks the transaction, if any, as aborted: a command was
// refused while it was being queued.
func (c *client) flagTransaction() {
	if c.tx.multi != nil {
		c.tx.multi.aborted = true
	}
}

// MULTI
func cmdMulti(c *client, _ [][]byte, _ time.Time) {
	if c.tx.multi != nil {
		c.writeError(errMultiNested)
		return
	}
	c.tx.multi = &multiState{slot: -1}
	c.regate()
	c.writeOK()
}

// DISCARD
func cmdDiscard(c *client, _ [][]byte, _ time.Time) {
	if c.tx.multi == nil {
		c.writeError(errDiscardWithoutMulti)
		return
	}
	c.tx = transaction{}
	c.regate()
	c.writeOK()
}

// WATCH key [key ...]
func cmdWatch(c *client, args [][]byte, now time.Time) {
	if c.tx.multi != nil {
		c.writeError(errWatchInMulti)
		return
	}
	at := gcra.InstantOf(now)
	for _, key := range args[1:] {
		if c.watching(key) || len(c.tx.watched) >= maxWatched {
			continue
		}
		fp, live := c.ks.Fingerprint(key, at)
		c.tx.watched = append(c.tx.watched, watchedKey{key: string(key), fp: fp, live: live})
	}
	c.writeOK()
}

func (c *client) watching(key []byte) bool {
	for _, w := range c.tx.watched {
		if w.key == string(key) {
			return true
		}
	}
	return false
}

// UNWATCH
func cmdUnwatch(c *client, _ [][]byte, _ time.Time) {
	c.tx.watched = nil
	c.writeOK()
}

// EXEC
//
// A queued AUTH's wrong password is answered late once the keys are
// released (client.answerLate), not while others wait for them.
func cmdExec(c *client, _ [][]byte, now time.Time) {
	defer c.waitLate() // deferred first, run last: after locked.Unlock
	tx, watched := c.tx.multi, c.tx.watched
	if tx == nil {
		c.writeError(errExecWithoutMulti)
		return
	}
	c.tx = transaction{}
	c.regate()
	if tx.crossSlot { // checked first, as Redis routes EXEC before it runs
		c.writeError(errCrossSlot)
		return
	}
	if tx.aborted {
		c.writeError(errExecAbort)
		return
	}

	keys, all := tx.keys(watched)
	locked := c.srv.store.Lock(keys, all)
	for c.srv.cluster != nil && tx.slot >= 0 && locked.SlotFrozen(tx.slot) {
		// The slot froze between EXEC's routing and its locks: as a
		// single command would, wait for it to thaw and route again.
		locked.Unlock()
		if !c.rerouteExec(tx) {
			return
		}
		locked = c.srv.store.Lock(keys, all)
	}
	defer locked.Unlock()
	at := gcra.InstantOf(now)
	for _, w := range watched {
		if fp, live := locked.Fingerprint([]byte(w.key), at); live != w.live || (live && fp != w.fp) {
			c.writeNullArray()
			return
		}
	}
	c.ks = locked
	defer func() { c.ks = c.srv.store }()
	c.writeArray(len(tx.queue))
	for _, q := range tx.queue {
		// The user's rules may have changed since the command was queued:
		// it is checked again, as Redis does.
		if c.access.Load()&accessLimited != 0 {
			if d, _, _ := c.denial(q.spec, q.args, now); d.Reason != acl.Allowed {
				c.writeError(errNoPermInExec(d.Reason))
				continue
			}
		}
		if c.tracking.on {
			c.rememberKeys(q.spec, q.args) // as Redis, which remembers a transaction's reads as they run
		}
		c.tx.running = q.spec
		end := c.srv.execute(c, q.spec, q.args, now)
		if c.srv.hooks.Load()&hookMonitor != 0 {
			c.srv.feedMonitors(c, q.args, now) // as Redis shows them: each as it runs, then EXEC
		}
		now = end
	}
	// Not deferred: after a panic it names the command that panicked
	// (containPanic), which runs once the deferred calls have.
	c.tx.running = nil
	c.sendSelfPushes() // what its PUBLISHes sent the client itself follows EXEC's reply, as in Redis
}

// inExec reports whether the client's command runs inside EXEC.
func (c *client) inExec() bool { return c.ks != storage.Keyspace(c.srv.store) }

// writes reports whether the transaction queues a write command: EXEC then
// waits out a CLIENT PAUSE WRITE, as a write would.
func (tx *multiState) writes() bool {
	for _, q := range tx.queue {
		if q.spec.write {
			return true
		}
	}
	return false
}

// keys lists the keys the queued commands and the watched keys name, and
// whether some command needs the whole keyspace locked.
func (tx *multiState) keys(watched []watchedKey) (keys [][]byte, all bool) {
	for _, w := range watched {
		keys = append(keys, []byte(w.key))
	}
	for _, q := range tx.queue {
		if q.spec.wholeKeyspace {
			return nil, true
		}
		keys = q.spec.appendKeys(keys, q.args)
	}
	return keys, false
}

// appendKeys appends the key arguments of args, by the command's key
// positions.
func (cmd *command) appendKeys(keys [][]byte, args [][]byte) [][]byte {
	if cmd.firstKey == 0 {
		return keys
	}
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
		keys = append(keys, args[i])
	}
	return keys
}
