package server

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
)

// leaseFamily is CL.ACQUIRE, CL.RELEASE, CL.RENEW and CL.LEASES, for the
// command table (newCommandTable): concurrency limits, whose keys are
// limiter keys as any other (persisted, replicated, in their cluster slot,
// admitted by the one gate).
func leaseFamily() []*command {
	acquire := limiterCommand("cl.acquire", -4, 8, 0, "generic", "0.2.0",
		"O(N) for the N leases held on the key",
		"Takes one of at most limit leases on a key, each ending when released or when lease_ms pass without a renew.",
		cmdAcquire)
	// As Redis's XREAD, whose BLOCK is optional too: a command that may
	// block is @slow and @blocking, not fast.
	acquire.flags = []string{"write", "denyoom", "blocking"}
	acquire.acl = []string{"@write", "@slow"}
	release := limiterCommand("cl.release", 3, 0, 0, "generic", "0.2.0",
		"O(N) for the N leases held on the key", "Ends a lease: its slot is free at once.", cmdRelease)
	renew := limiterCommand("cl.renew", 4, 0, 0, "generic", "0.2.0",
		"O(N) for the N leases held on the key", "Extends a lease held to lease_ms from now; an ended lease stays ended.", cmdRenew)
	// Neither frees nor takes memory a client could grow: no denyoom.
	release.flags = []string{"write", "fast"}
	renew.flags = []string{"write", "fast"}
	return []*command{acquire, release, renew,
		{name: "cl.leases", arity: 2, flags: []string{"readonly"}, acl: []string{"@read", "@slow"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RO", "access"},
			group: "generic", since: "0.2.0", complexity: "O(N) for the N leases held on the key",
			summary: "Lists the leases held on a key: token and milliseconds left, soonest expiry first.", run: cmdLeases},
	}
}

// CL.ACQUIRE key limit lease_ms [TOKEN token] [BLOCK ms]
//
// One of at most limit leases on key, for lease_ms unless renewed. The
// reply is limited (0 or 1), limit, remaining, retry_after_ms (-1 when
// acquired) and the token (nil when limited). TOKEN names the lease: a
// token already held is renewed and takes no second slot. BLOCK waits up to
// ms for a slot, first come first served (leaseWaiters), off the event loop;
// inside MULTI it does not wait.
func cmdAcquire(c *client, args [][]byte, now time.Time) {
	var v [2]int64 // limit, lease_ms
	if !c.intArgs(args[2:4], leaseArgErrors, v[:]) {
		return
	}
	spec, err := lease.NewSpec(v[0], v[1])
	if err != nil {
		c.writeError(leaseError(err))
		return
	}
	token, block, e := acquireOptions(args[4:])
	if !e.none() {
		c.writeError(e)
		return
	}
	if token == nil {
		token = newToken(c.token[:])
	}
	if block > 0 && !c.inExec() {
		if c.conn.OnLoop() {
			c.conn.Need(engine.NeedGoroutine) // it may wait: run where waiting costs no other client
			return
		}
		c.acquireBlocking(args[1], spec, token, block, now)
		return
	}
	res, ok := c.acquire(args[1], spec, token, now)
	if ok {
		c.writeAcquired(res, token)
	}
}

// acquire decides one CL.ACQUIRE, admitted by the gate; ok is false when it
// was answered here (a refusal, an error).
func (c *client) acquire(key []byte, spec lease.Spec, token []byte, now time.Time) (res lease.Result, ok bool) {
	if !c.decide(key, 1, leaseError, func(dry bool) (stored bool, err error) {
		res, stored, err = c.ks.Acquire(key, spec, token, gcra.InstantOf(now), dry)
		return stored, err
	}) {
		return res, false
	}
	// The key held leases before: limited, renewed, or granted beside others.
	c.srv.stats.countDecision(c.stripe, decideAcquire, res.Limited, res.Limited || res.Renewed || res.Remaining < res.Limit-1)
	return res, true
}

// writeAcquired answers CL.ACQUIRE: four integers and the token, nil when
// limited.
func (c *client) writeAcquired(res lease.Result, token []byte) {
	ints := res.Ints()
	c.writeArray(5)
	for _, n := range ints {
		c.writeInt(n)
	}
	if res.Limited {
		c.writeNull()
		return
	}
	c.writeBulk(token)
}

// acquireBlocking is CL.ACQUIRE with BLOCK, on the connection's own
// goroutine: it queues behind the clients already waiting on key, tries
// whenever it is first (at once, when a CL.RELEASE wakes it, and when the
// earliest lease expires), and answers limited once block has passed, or
// nothing if the client goes away (killed, or hung up: WatchHangup).
func (c *client) acquireBlocking(key []byte, spec lease.Spec, token []byte, block time.Duration, now time.Time) {
	q := &c.srv.leaseWaiters
	w := q.join(string(key))
	defer q.leave(w)
	deadline := now.Add(block)
	timer := time.NewTimer(block)
	defer timer.Stop()
	hungUp, stop := c.conn.WatchHangup()
	defer stop()
	for {
		if q.first(w) {
			res, ok := c.acquire(key, spec, token, now)
			if !ok {
				return
			}
			if !res.Limited || !now.Before(deadline) {
				c.writeAcquired(res, token)
				return
			}
			wait := deadline.Sub(now)
			if res.RetryAfter >= 0 {
				wait = min(wait, res.RetryAfter+time.Millisecond)
			}
			timer.Reset(wait)
		}
		select {
		case <-w.wake:
		case <-timer.C:
		case <-c.conn.Done():
			return
		case <-hungUp:
			return
		}
		now = c.srv.now()
	}
}

// acquireOptions parses CL.ACQUIRE's TOKEN token and BLOCK ms, in any
// order.
func acquireOptions(opts [][]byte) (token []byte, block time.Duration, e replyError) {
	for ; len(opts) > 0; opts = opts[2:] {
		if len(opts) < 2 {
			return nil, 0, errSyntax
		}
		switch {
		case equalFold(opts[0], "token"):
			if lease.CheckToken(opts[1]) != nil {
				return nil, 0, errLeaseToken
			}
			token = opts[1]
		case equalFold(opts[0], "block"):
			ms, ok := parseInt(opts[1])
			switch {
			case !ok:
				return nil, 0, errTimeoutInteger
			case ms < 0:
				return nil, 0, errTimeoutNegative
			case ms > int64(lease.MaxLease/time.Millisecond):
				return nil, 0, errTimeoutRange
			}
			block = time.Duration(ms) * time.Millisecond
		default:
			return nil, 0, errSyntax
		}
	}
	return token, block, replyError{}
}

// newToken fills buf (lease.TokenLen bytes) with a new token: 64 random
// bits (lease.AppendToken). Two leases of one key share a token once in
// 2^64 tries per pair; a token is only ever compared with its own key's.
// The runtime's generator (math/rand/v2) is per thread and takes no lock.
func newToken(buf []byte) []byte {
	return lease.AppendToken(buf[:0], rand.Uint64())
}

// CL.RELEASE key token
//
// Ends the lease: 1 if it was held, else 0. The first client blocked on the
// key is woken.
func cmdRelease(c *client, args [][]byte, now time.Time) {
	if lease.CheckToken(args[2]) != nil {
		c.writeError(errLeaseToken)
		return
	}
	var held bool
	if !c.decide(args[1], 0, leaseError, func(dry bool) (stored bool, err error) {
		held, err = c.ks.Release(args[1], args[2], gcra.InstantOf(now), dry)
		return held, err
	}) {
		return
	}
	if held {
		c.srv.leaseWaiters.wakeFirst(args[1])
	}
	c.writeInt(oneIf(held))
}

// CL.RENEW key token lease_ms
//
// Extends the lease to lease_ms from now: 1 if it was held, 0 if it is gone
// (expired or released), which no renew brings back.
func cmdRenew(c *client, args [][]byte, now time.Time) {
	if lease.CheckToken(args[2]) != nil {
		c.writeError(errLeaseToken)
		return
	}
	ms, ok := parseInt(args[3])
	if !ok {
		c.writeError(errLeaseNotInteger)
		return
	}
	spec, err := lease.NewSpec(0, ms)
	if err != nil {
		c.writeError(leaseError(err))
		return
	}
	var renewed bool
	if !c.decide(args[1], 0, leaseError, func(dry bool) (stored bool, err error) {
		renewed, err = c.ks.Renew(args[1], args[2], spec.Lease, gcra.InstantOf(now), dry)
		return renewed, err
	}) {
		return
	}
	c.writeInt(oneIf(renewed))
}

// CL.LEASES key
//
// The leases held, soonest expiry first, each [token, milliseconds left].
func cmdLeases(c *client, args [][]byte, now time.Time) {
	at := gcra.InstantOf(now)
	held, err := c.ks.Leases(args[1], at, nil)
	if err != nil {
		c.writeError(leaseError(err))
		return
	}
	c.srv.stats.countLookup(len(held) > 0)
	c.writeArray(len(held))
	for _, h := range held {
		c.writeArray(2)
		c.writeBulk(h.Token)
		c.writeInt(int64((time.Duration(h.Expiry-at) + time.Millisecond - 1) / time.Millisecond))
	}
}

// oneIf is 1 for true, as Redis answers a command that did something.
func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// CL.ACQUIRE's and CL.RENEW's words, as CL.WINDOW's.
var (
	errLeaseNotInteger = commandError("ERR lease is not an integer or out of range")
	errLeaseLimitRange = commandError("ERR limit must be between 0 and 100000")
	errLeasePositive   = commandError("ERR lease must be positive")
	errLeaseTooLong    = commandError("ERR lease is out of range")
	errLeaseToken      = commandError("ERR invalid token: it must be 1 to 64 bytes")
)

// leaseArgErrors are CL.ACQUIRE's errors for limit and lease_ms that are
// not integers, in order (intArgs).
var leaseArgErrors = []replyError{errLimitNotInteger, errLeaseNotInteger}

// leaseError maps lease's and storage's errors to the lease commands'
// replies.
func leaseError(err error) replyError {
	switch {
	case errors.Is(err, lease.ErrLimit):
		return errLeaseLimitRange
	case errors.Is(err, lease.ErrLease):
		return errLeasePositive
	case errors.Is(err, lease.ErrLeaseTooLong):
		return errLeaseTooLong
	case errors.Is(err, lease.ErrToken):
		return errLeaseToken
	default:
		return storageError(err)
	}
}
