package server

import (
	"slices"
	"strconv"
	"strings"
)

// How a change reaches the clients that may cache its key: the store's
// observer (tracking.Changed, Cleared) finds them and delivers each an
// invalidation, or holds it while the client runs a command of its own, to
// follow that command's reply (beforeCommand, afterReplies).

// Changed is the store's observer (storage.Observer): key was written or
// deleted. It runs under key's shard lock, on the goroutine that changed it.
func (tr *tracking) Changed(key []byte) {
	if tr.keys.Load() > 0 {
		st := tr.stripe(key)
		st.mu.Lock()
		ids, ok := st.keys[string(key)]
		if ok {
			delete(st.keys, string(key))
			tr.keys.Add(-1)
			tr.items.Add(-int64(len(ids)))
		}
		st.mu.Unlock()
		if ok {
			tr.invalidateIDs(ids, key)
		}
	}
	if tr.bcast.Load() {
		tr.bcastMu.RLock()
		for p, clients := range tr.prefixes {
			if strings.HasPrefix(string(key), p) {
				for c := range clients {
					tr.deliver(c, key, false)
				}
			}
		}
		tr.bcastMu.RUnlock()
	}
}

// Cleared is the store's observer told that every key was deleted
// (FLUSHALL, FLUSHDB, a replica's full sync): every tracking client is sent
// one invalidation of every key (a null), as Redis does, whatever its mode,
// and the table is emptied.
func (tr *tracking) Cleared() {
	tr.regMu.RLock()
	var targets []*client
	for _, c := range tr.byID {
		if c.tracking.mode.Load() != nil {
			targets = append(targets, c)
		}
	}
	tr.regMu.RUnlock()
	for _, c := range targets {
		tr.deliver(c, nil, true)
	}
	tr.clearTable()
}

// invalidateIDs tells the clients of ids that still track in the default
// mode that key changed.
func (tr *tracking) invalidateIDs(ids []int64, key []byte) {
	for _, id := range ids {
		c := tr.lookup(id)
		if c == nil {
			continue
		}
		if m := c.tracking.mode.Load(); m == nil || m.bcast {
			continue // no longer tracking, or switched to BCAST since it read the key
		}
		tr.deliver(c, key, false)
	}
}

// deliver sends c the invalidation of key (of every key with flush), or
// keeps it in c's pending list while c runs commands (trackingConn.busy).
func (tr *tracking) deliver(c *client, key []byte, flush bool) {
	t := &c.tracking
	t.mu.Lock()
	if t.busy {
		t.pending = append(t.pending, pendingInvalidation{key: string(key), flush: flush})
	} else if to, msg := tr.message(c, key, flush, nil); msg != nil {
		if o := to.tracking.outbox.Load(); o != nil {
			o.Push(msg)
		}
	}
	t.mu.Unlock()
}

// message returns who is sent c's invalidation of key (of every key with
// flush) and the bytes it is sent, appended to buf: c itself under RESP3,
// or the client its REDIRECT names, by a push under RESP3 or, subscribed
// under RESP2, a message on __redis__:invalidate. It returns a nil message
// when there is nothing to send (RESP2 without a redirection, a target that
// cannot be sent it), and when the redirection's target has gone marks c's
// redirection broken and tells c, under RESP3, with a
// tracking-redir-broken push.
func (tr *tracking) message(c *client, key []byte, flush bool, buf []byte) (*client, []byte) {
	m := c.tracking.mode.Load()
	if m == nil {
		return nil, nil
	}
	to := c
	if m.redirect != 0 {
		if to = tr.lookup(m.redirect); to == nil {
			c.tracking.brokenRedirect.Store(true)
			if c.session.respSeen.Load() < 3 {
				return nil, nil
			}
			buf = append(buf, ">2\r\n$21\r\ntracking-redir-broken\r\n:"...)
			buf = strconv.AppendInt(buf, m.redirect, 10)
			return c, append(buf, '\r', '\n')
		}
	}
	switch {
	case to.session.respSeen.Load() == 3:
		buf = append(buf, ">2\r\n$10\r\ninvalidate\r\n"...)
	case to != c && to.subscribed():
		buf = append(buf, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"...)
	default:
		return nil, nil
	}
	switch {
	case flush && buf[0] == '>':
		buf = append(buf, "_\r\n"...)
	case flush:
		buf = append(buf, "$-1\r\n"...)
	default:
		buf = append(buf, "*1\r\n$"...)
		buf = strconv.AppendInt(buf, int64(len(key)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, key...)
		buf = append(buf, '\r', '\n')
	}
	return to, buf
}

// beforeCommand runs in gate before each command of a tracking client, on
// its goroutine: the client is busy from its batch's first command until
// its replies are out (afterReplies), so that what it is sent in between
// follows them; the invalidations held for it during the command before
// are written after that command's reply; CLIENT CACHING's answer is
// cleared after the command it was for; and the keys a read-only command
// names are remembered for it (the default mode, unless OPTIN or OPTOUT
// say otherwise), as Redis's trackingRememberKeys, before the command
// reads them rather than after, which is as safe: a change in between is
// told, not missed. Commands queued by MULTI are remembered by EXEC.
func (c *client) beforeCommand(spec *command, args [][]byte) {
	t := &c.tracking
	if !t.inBatch {
		t.mu.Lock()
		t.busy = true
		t.mu.Unlock()
		t.inBatch = true
	} else {
		c.writePendingInvalidations()
	}
	if t.clearCaching && c.tx.multi == nil {
		t.caching = false
	}
	t.clearCaching = spec.name != "client"
	if c.tx.multi == nil || spec.txControl {
		c.rememberKeys(spec, args)
	}
}

// rememberKeys remembers the keys of a read-only command the client runs,
// if its mode says to.
func (c *client) rememberKeys(spec *command, args [][]byte) {
	m := c.tracking.mode.Load()
	if m == nil || m.bcast || (m.optin && !c.tracking.caching) || (m.optout && c.tracking.caching) {
		return
	}
	if spec.subcommands != nil && len(args) > 1 {
		if sub := spec.subcommand(args[1]); sub != nil {
			spec = sub
		}
	}
	if !spec.readonly || spec.firstKey == 0 || !spec.arityOK(len(args)) {
		return
	}
	last := spec.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := spec.firstKey; i <= last && i < len(args); i += spec.step {
		c.srv.tracking.remember(c, args[i])
	}
}

// writePendingInvalidations writes what was held for the client while its
// last command ran after that command's reply, in its own reply stream
// (a redirection's target is pushed its part).
func (c *client) writePendingInvalidations() {
	t := &c.tracking
	t.mu.Lock()
	pending := t.pending
	t.pending = nil
	t.mu.Unlock()
	for _, p := range pending {
		to, msg := c.srv.tracking.message(c, []byte(p.key), p.flush, nil)
		switch {
		case msg == nil:
		case to == c:
			c.conn.WriteRaw(msg)
		default:
			if o := to.tracking.outbox.Load(); o != nil {
				o.Push(msg)
			}
		}
	}
}

// afterReplies ends the client's busy time once its batch's replies are in
// its outbox (Pushed): what was held for it goes after them.
func (c *client) afterReplies() {
	t := &c.tracking
	t.inBatch = false
	t.mu.Lock()
	t.busy = false
	pending := t.pending
	t.pending = nil
	for _, p := range pending {
		if to, msg := c.srv.tracking.message(c, []byte(p.key), p.flush, nil); msg != nil {
			if o := to.tracking.outbox.Load(); o != nil {
				o.Push(msg)
			}
		}
	}
	t.mu.Unlock()
}

// ownChange drops, for a NOLOOP client, the invalidation of key its own
// command's change left pending: it is not told of its own changes.
func (c *client) ownChange(key []byte) {
	t := &c.tracking
	t.mu.Lock()
	for i := len(t.pending) - 1; i >= 0; i-- {
		if p := t.pending[i]; !p.flush && p.key == string(key) {
			t.pending = slices.Delete(t.pending, i, i+1)
			break
		}
	}
	t.mu.Unlock()
}
