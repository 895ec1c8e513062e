package client

import "context"

// Cached reports whether c's cache holds key, for the tests.
func Cached(c *Client, key string) bool {
	if c.cache == nil {
		return false
	}
	_, _, ok := c.cache.get(key)
	return ok
}

// WholeSeconds is the count and period CL.THROTTLE is sent for l.
func WholeSeconds(l Limit) (count, period int64) {
	r, err := newRate(l)
	if err != nil {
		panic(err)
	}
	return r.count, r.period
}

// Sync returns once every tracking connection of c has handled what its
// node sent before the call (tracker.sync), and reports whether each was up.
func Sync(ctx context.Context, c *Client) bool {
	ok := true
	for _, n := range c.allNodes() {
		if n.tracker != nil {
			ok = n.tracker.sync(ctx) && ok
		}
	}
	return ok
}

// Tracking reports whether every tracking connection c has is up, and
// that it has one.
func Tracking(c *Client) bool {
	nodes := c.allNodes()
	for _, n := range nodes {
		if n.tracker == nil || !n.tracker.up.Load() {
			return false
		}
	}
	return len(nodes) > 0
}
