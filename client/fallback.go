package client

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"time"
)

// While the server is away: a node marked down and probed back, and the
// decisions the client makes meanwhile (Options.Fallback).

// markDown sends n's calls to the fallback until a probe finds it answering
// again: one PING every probeInterval, in the background, so that callers
// do not wait out the timeout meanwhile.
func (c *Client) markDown(n *node) {
	if !n.down.CompareAndSwap(false, true) {
		return
	}
	c.stats.outages.Add(1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		tick := time.NewTicker(probeInterval)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			err := n.ping(ctx)
			cancel()
			if err == nil {
				n.down.Store(false)
				return
			}
		}
	}()
}

// fallback decides a call the server did not answer (Options.Fallback). A
// local limiter charges n at its share of the rate (Options.Instances),
// not at the whole rate's increment the caller computed.
func (c *Client) fallback(ctx context.Context, key string, r *rate, n int64) (Decision, error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return Decision{}, ctx.Err()
	}
	c.stats.fallbacks.Add(1)
	switch c.opt.Fallback {
	case FallbackOpen:
		return Decision{Allowed: true, Limit: r.limit(), Remaining: max(0, r.limit()-n), Local: true}, nil
	case FallbackClosed:
		return Decision{Limit: r.limit(), RetryAfter: time.Second, Local: true}, nil
	}
	share := r.share(int64(c.opt.Instances))
	inc := share.ei * n
	if n != 0 && inc/n != share.ei {
		inc = math.MaxInt64 / 2
	}
	now := c.now()
	var d Decision
	c.local.update(key, func(tat int64, _ bool) (int64, bool) {
		var next int64
		d, next = gcraDecide(&share, tat, now, inc)
		return next, d.Allowed && inc > 0
	})
	d.Local = true
	return d, nil
}

// share is r for one of instances processes: instances times slower, and a
// burst of (Burst+1)/instances calls, at least one.
func (r *rate) share(instances int64) rate {
	s := *r
	if instances <= 1 {
		return s
	}
	hi, lo := bits.Mul64(uint64(r.ei), uint64(instances))
	if hi != 0 || lo > math.MaxInt64/2 {
		lo = math.MaxInt64 / 2
	}
	s.ei = int64(lo)
	s.burst = max(1, r.limit()/instances) - 1
	hi, lo = bits.Mul64(uint64(s.ei), uint64(s.burst)+1)
	if hi != 0 || lo > math.MaxInt64/2 {
		lo = math.MaxInt64 / 2
	}
	s.dvt = int64(lo)
	return s
}
