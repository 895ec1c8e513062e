package client

import (
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout   = 20 * time.Millisecond
	DefaultCacheSize = 10_000
)

// Options configure a Client. The zero Options are ready for production:
// the refusal cache on, a 20 ms timeout, and the local limiter as the
// fallback, each process allowing the whole limit.
type Options struct {
	// Timeout bounds each call to the server; a call that takes longer is
	// answered by the fallback, and the server is tried again in the
	// background until it answers. The default is 20 ms (the budget
	// Envoy's and Sentinel's rate limit clients give theirs).
	Timeout time.Duration
	// Fallback is how calls are answered while the server cannot be
	// reached. The default is FallbackLocal.
	Fallback Fallback
	// Instances is how many processes share the limits: FallbackLocal
	// gives each a 1/Instances share of a limit (rate and burst) while the
	// server is away. The default is 1.
	Instances int
	// CacheSize is the most keys the refusal cache holds, the oldest
	// evicted first; a negative size turns the cache off. The fallback
	// limiter holds as many. The default is 10,000.
	CacheSize int
}

// Fallback is how a call is answered while the server cannot be reached
// within Options.Timeout. Every such decision is marked Local.
type Fallback int

const (
	// FallbackLocal decides locally, by GCRA, with a 1/Options.Instances
	// share of the limit: its rate and its burst (at least one call),
	// per key, in this process.
	FallbackLocal Fallback = iota
	// FallbackOpen allows every call: an outage of the limiter is not an
	// outage of the service.
	FallbackOpen
	// FallbackClosed refuses every call, with a RetryAfter of a second.
	FallbackClosed
)
