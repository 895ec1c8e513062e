package server

import (
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// gcraFamily is GCRA, for the command table (newCommandTable).
func gcraFamily() []*command {
	return []*command{limiterCommand("gcra", -5, 7, 0, "string", "8.8.0", "O(1)",
		"Rate-limits a key by GCRA as Redis's GCRA command: a float period, durations rounded up to seconds.",
		cmdGCRA)}
}

// GCRA key max_burst tokens_per_period period [TOKENS count]
//
// Redis's own GCRA command (its 8.8 milestones): CL.THROTTLE's decision on
// the same TAT, so the two mix on a key, with a float period in seconds, no
// peek, both durations rounded up, and Redis's argument checks and texts in
// Redis's order.
func cmdGCRA(c *client, args [][]byte, now time.Time) {
	burst, ok := parseInt(args[2])
	if !ok || burst < 0 {
		c.writeError(errGCRABurst)
		return
	}
	perPeriod, ok := parseInt(args[3])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	if perPeriod < 1 {
		c.writeError(errGCRARange)
		return
	}
	period, ok := parseFloat(args[4])
	if !ok {
		c.writeError(errNotFloat)
		return
	}
	if !(period > 0 && period < 1e12) {
		c.writeError(errGCRAPeriod)
		return
	}
	tokens := int64(1)
	if len(args) >= 6 {
		if !equalFold(args[5], "tokens") {
			c.writeError(errSyntax)
			return
		}
		if len(args) == 6 {
			c.writeError(errGCRAMissingTokens)
			return
		}
		if tokens, ok = parseInt(args[6]); !ok {
			c.writeError(errNotInteger)
			return
		}
		if tokens < 1 {
			c.writeError(errGCRARange)
			return
		}
	}
	at := gcra.InstantOf(now)
	rate, err := gcra.NewCommandRate(burst, perPeriod, period, tokens)
	if err != nil {
		// Redis checks the key's type before the products' overflow.
		if _, kind, live := c.ks.Get(args[1], at); live && kind != storage.KindTAT {
			err = storage.ErrWrongType
		}
		c.writeError(gcraError(err))
		return
	}
	cond, ok := c.admit(args[1], tokens)
	if !ok {
		return
	}
	var res gcra.Result
	var stores bool
	if cond == admission.Admitted {
		res, err = c.ks.ThrottleSlot(args[1], c.cluster.slot, rate, at)
		stores = !res.Limited
	} else {
		res, stores, err = c.ks.Preview(args[1], rate, at)
	}
	if err != nil {
		c.writeError(gcraError(err))
		return
	}
	if stores && !c.stored(cond, args[1]) {
		return
	}
	c.srv.stats.countDecision(c.stripe, decideGCRA, res.Limited, keyWasLive(res.Limited, res.ResetAfter, rate.Increment))
	c.writeInts(res.IntsCeil())
}
