package server

import (
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/gcra"
)

// throttleFamily is CL.THROTTLE, for the command table (newCommandTable).
func throttleFamily() []*command {
	return []*command{limiterCommand("cl.throttle", -5, 6, 5, "generic", "0.1.0", "O(1)",
		"Rate-limits a key by GCRA and returns limited, limit, remaining, retry_after and reset_after, as redis-cell does.",
		cmdThrottle)}
}

// limiterCommand is a rate limiter's table entry, CL.THROTTLE's and its
// siblings': a fast write of the one key that is its first argument, which
// it reads too (RW access update: the key-spec Redis gives a module's
// command, redis-cell's among them), so that a user needs both read and
// write on the key (~p or %RW~p), its peeks included. Those in Redis's
// string group (GCRA) are in its @string ACL category too.
//
// peekArg is the position of the quantity that, at 0, makes a call a peek
// (0: none, as GCRA, which has no peek).
func limiterCommand(name string, arity, maxArgs, peekArg int, group, since, complexity, summary string,
	run func(c *client, args [][]byte, now time.Time)) *command {
	acl := []string{"@write", "@fast"}
	if group == "string" {
		acl = []string{"@write", "@string", "@fast"}
	}
	return &command{name: name, arity: arity, maxArgs: maxArgs, flags: []string{"write", "denyoom", "fast"}, acl: acl,
		firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "access", "update"}, prefetchKey: true, peekArg: peekArg,
		group: group, since: since, complexity: complexity, summary: summary, run: run}
}

// CL.THROTTLE key max_burst count period [quantity]
//
// The hot path: parse four integers without allocating, admit, decide under
// one shard lock at the clock reading the dispatcher took, reply with five
// integers.
func cmdThrottle(c *client, args [][]byte, now time.Time) {
	// Parsed here rather than by intArgs, as CL.RESERVE's are: the loop
	// over slices cost this hot path 6% more instructions (callgrind).
	burst, ok := parseInt(args[2])
	if !ok {
		c.writeError(errBurstNotInteger)
		return
	}
	count, ok := parseInt(args[3])
	if !ok {
		c.writeError(errCountNotInteger)
		return
	}
	period, ok := parseInt(args[4])
	if !ok {
		c.writeError(errPeriodNotInteger)
		return
	}
	quantity := int64(1)
	if len(args) == 6 {
		if quantity, ok = parseInt(args[5]); !ok {
			c.writeError(errQuantityNotInteger)
			return
		}
	}
	rate, err := c.rate.of(burst, count, period, quantity)
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	// client.admit, written out: the gate's open test inlined here, where
	// a call to admit cost the hot path about 20 instructions (callgrind).
	cond := admission.Admitted
	if !c.srv.gate.Open(len(args[1])) {
		if cond, ok = c.admitSlow(args[1], quantity); !ok {
			return
		}
	}
	var res gcra.Result
	var stores bool
	if cond == admission.Admitted {
		res, err = c.ks.ThrottleSlot(args[1], c.cluster.slot, rate, gcra.InstantOf(now))
		stores = !res.Limited && quantity > 0
	} else {
		res, stores, err = c.ks.Preview(args[1], rate, gcra.InstantOf(now))
	}
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	if stores && !c.stored(cond, args[1]) {
		return
	}
	c.srv.stats.countDecision(c.stripe, decideThrottle, res.Limited, keyWasLive(res.Limited, res.ResetAfter, rate.Increment))
	c.writeInts(res.Ints())
}

// rateMemo keeps the Rate a client's last CL.THROTTLE made of its
// arguments: a client throttles with the same limits call after call, and
// gcra.NewRate's checks and its three divisions (the emission interval, two
// overflow bounds) cost about 75 instructions a decision (callgrind). Only a
// valid Rate is kept; arguments NewRate refuses are refused again each time.
type rateMemo struct {
	args [4]int64 // max_burst, count, period, quantity
	rate gcra.Rate
	ok   bool
}

// of returns gcra.NewRate(burst, count, period, quantity).
func (m *rateMemo) of(burst, count, period, quantity int64) (gcra.Rate, error) {
	args := [4]int64{burst, count, period, quantity}
	if m.ok && args == m.args {
		return m.rate, nil
	}
	r, err := gcra.NewRate(burst, count, period, quantity)
	if err == nil {
		m.args, m.rate, m.ok = args, r, true
	}
	return r, err
}

// rateArgErrors and windowArgErrors are the errors of the integer arguments
// after the key, in order: CL.THROTTLE's and CL.RESERVE's max_burst, count
// and period; CL.WINDOW's limit and window.
var (
	rateArgErrors   = []replyError{errBurstNotInteger, errCountNotInteger, errPeriodNotInteger}
	windowArgErrors = []replyError{errLimitNotInteger, errWindowNotInteger}
)

// intArgs parses args as integers into out, and answers the error of the
// first that is not one (errs[i] for args[i]).
func (c *client) intArgs(args [][]byte, errs []replyError, out []int64) bool {
	for i, a := range args {
		n, ok := parseInt(a)
		if !ok {
			c.writeError(errs[i])
			return false
		}
		out[i] = n
	}
	return true
}
