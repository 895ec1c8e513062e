package client

import (
	"sync/atomic"
)

// Stats are a Client's counts since it was made.
type Stats struct {
	// Decisions counts the calls answered (Allow and AllowN).
	Decisions int64
	// ServerCalls counts the CL.THROTTLE round trips made.
	ServerCalls int64
	// CacheHits counts the refusals answered from the cache: the round
	// trips saved.
	CacheHits int64
	// Reads counts the keys' states read on tracking connections, once
	// each after the server refused them.
	Reads int64
	// Fallbacks counts the calls the fallback answered, and Outages the
	// times a node stopped answering.
	Fallbacks, Outages int64
	// Invalidations counts the cached keys dropped because the server said
	// they changed (or flushed, or its tracking connection was lost), and
	// Evictions those dropped for room.
	Invalidations, Evictions int64
	// TrackingConnects counts the tracking connections made (one a node,
	// and one each time one was lost).
	TrackingConnects int64
	// Cached is how many keys the cache holds now.
	Cached int
}

// counters are the Stats, kept.
type counters struct {
	decisions, serverCalls, cacheHits, fetches atomic.Int64
	fallbacks, outages                         atomic.Int64
	invalidations, evictions, trackerConnects  atomic.Int64
}

// Stats returns the client's counts.
func (c *Client) Stats() Stats {
	s := Stats{
		Decisions: c.stats.decisions.Load(), ServerCalls: c.stats.serverCalls.Load(),
		CacheHits: c.stats.cacheHits.Load(), Reads: c.stats.fetches.Load(),
		Fallbacks: c.stats.fallbacks.Load(), Outages: c.stats.outages.Load(),
		Invalidations: c.stats.invalidations.Load(), Evictions: c.stats.evictions.Load(),
		TrackingConnects: c.stats.trackerConnects.Load(),
	}
	if c.cache != nil {
		s.Cached = c.cache.len()
	}
	return s
}
