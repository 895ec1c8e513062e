package server

import "github.com/redcell/redcell/cluster"

// How a command finds the node that serves its keys in cluster mode: route
// on the hot path, routeAny for every other command, and EXEC's routing by
// its transaction's slot (clusterFamily has the CLUSTER commands).

// route sends a keyed command where its keys are served: it answers MOVED,
// ASK, TRYAGAIN, CLUSTERDOWN or CROSSSLOT and returns false, or returns true
// to run it here. dispatch calls it only in cluster mode.
//
// Its body is small enough to be inlined into dispatch for the hot path
// (one key, in a slot this node serves, nothing moving); routeAny does the
// rest.
func (c *client) route(spec *command, args [][]byte) bool {
	if k := spec.firstKey; k > 0 && k == spec.lastKey && k < len(args) && !c.gated && !c.cluster.asking {
		if slot := cluster.Slot(args[k]); c.srv.cluster.Mine(slot) {
			c.cluster.slot = slot
			return true
		}
	}
	return c.routeAny(spec, args)
}

// routeAny is route for any command.
func (c *client) routeAny(spec *command, args [][]byte) bool {
	c.cluster.slot = -1
	spec = spec.resolve(args)
	asking := c.cluster.asking
	// ASKING is for the next command only, or, as Redis's, for the whole
	// transaction that MULTI next begins, until EXEC or DISCARD: a client
	// follows an ASK with ASKING, MULTI, ..., EXEC (go-redis does).
	inTx := c.tx.multi != nil && spec.name != "exec" && spec.name != "discard"
	if !inTx && !(c.tx.multi == nil && spec.name == "multi") {
		c.cluster.asking = false
	}
	if spec.name == "exec" && c.tx.multi != nil && !c.tx.multi.aborted && c.tx.multi.slot >= 0 {
		return c.routeExec(asking)
	}
	if spec.firstKey == 0 {
		return true
	}
	last := spec.lastKey
	if last < 0 {
		last += len(args)
	}
	slot := -1
	for i := spec.firstKey; i <= last && i < len(args); i += spec.step {
		s := cluster.Slot(args[i])
		if slot >= 0 && s != slot {
			c.flagTransaction()
			c.writeError(errCrossSlot)
			return false
		}
		slot = s
	}
	if slot < 0 {
		return true
	}
	r, node := c.srv.cluster.Route(slot, asking, c.cluster.readOnly, spec.reads(args))
	if r == cluster.TryAgain && c.srv.migrator.AwaitThaw(slot) {
		r, node = c.srv.cluster.Route(slot, asking, c.cluster.readOnly, spec.reads(args))
	}
	if r == cluster.Local {
		if c.tx.multi != nil && !spec.txControl {
			// Every command of a transaction must be in one slot. Redis
			// queues a command of another slot served here, and refuses
			// the transaction at EXEC (cmdExec) with CROSSSLOT.
			if c.tx.multi.slot >= 0 && c.tx.multi.slot != slot {
				c.tx.multi.crossSlot = true
			} else {
				c.tx.multi.slot = slot
			}
		}
		c.cluster.slot = slot
		return true
	}
	c.flagTransaction()
	c.writeRoute(r, slot, node)
	return false
}

// routeExec routes EXEC by its transaction's slot, again, as Redis's EXEC
// does: the slot may have moved, or be moving, since the commands were
// queued, and run here they would decide on a copy the slot's owner never
// sees. A transaction sent elsewhere is discarded, as Redis discards it.
func (c *client) routeExec(asking bool) bool {
	read := true
	for _, q := range c.tx.multi.queue {
		read = read && q.spec.resolve(q.args).reads(q.args)
	}
	slot := c.tx.multi.slot
	r, node := c.srv.cluster.Route(slot, asking, c.cluster.readOnly, read)
	if r == cluster.TryAgain && c.srv.migrator.AwaitThaw(slot) {
		r, node = c.srv.cluster.Route(slot, asking, c.cluster.readOnly, read)
	}
	if r == cluster.Local {
		return true
	}
	c.tx = transaction{}
	c.regate()
	c.writeRoute(r, slot, node)
	return false
}

// rerouteExec routes tx, whose slot froze while its EXEC was taking its
// locks, once the freeze ends: true to run it here, or false with the
// redirect answered (or TRYAGAIN, past the longest wait).
func (c *client) rerouteExec(tx *multiState) bool {
	read := true
	for _, q := range tx.queue {
		read = read && q.spec.resolve(q.args).reads(q.args)
	}
	c.srv.migrator.AwaitThaw(tx.slot)
	r, node := c.srv.cluster.Route(tx.slot, false, c.cluster.readOnly, read)
	if r == cluster.Local && !c.srv.store.Frozen(tx.slot) {
		return true
	}
	if r == cluster.Local {
		r = cluster.TryAgain
	}
	c.writeRoute(r, tx.slot, node)
	return false
}

// resolve returns the subcommand args name, or spec itself.
func (spec *command) resolve(args [][]byte) *command {
	if spec.subcommands != nil && len(args) > 1 {
		if sub := spec.subcommand(args[1]); sub != nil {
			return sub
		}
	}
	return spec
}

// reads reports whether spec run with args only reads: a read-only
// command, or a decision's peek (quantity 0).
func (spec *command) reads(args [][]byte) bool {
	return spec.readonly || (spec.peekArg > 0 && len(args) > spec.peekArg && string(args[spec.peekArg]) == "0")
}

// writeRoute answers the error of route r (not Local) for slot.
func (c *client) writeRoute(r cluster.Route, slot int, node *cluster.Node) {
	switch r {
	case cluster.Moved:
		c.writeError(errMoved("MOVED", slot, node))
	case cluster.Ask:
		c.writeError(errMoved("ASK", slot, node))
	case cluster.TryAgain:
		c.writeError(errTryAgain)
	case cluster.Unserved:
		c.writeError(errSlotUnserved)
	case cluster.Held:
		c.writeError(errClusterHeld)
	default:
		c.writeError(errNotInCluster)
	}
}
