// Package client is redcell's Go client: rate limits decided by the server
// with CL.THROTTLE (GCRA, as the redis-cell module decides them), over a
// go-redis v9 client (a plain client, Sentinel's failover client or a
// cluster client), that saves round trips and keeps answering while the
// server is away.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	limiter := client.New(rdb, client.Options{})
//	d, err := limiter.Allow(ctx, "user:42", client.Limit{Burst: 15, Count: 30, Period: time.Minute})
//	if err == nil && !d.Allowed {
//		// refuse, and tell the caller to come back after d.RetryAfter
//	}
//
// # What a decision is
//
// Allow and AllowN send CL.THROTTLE key max_burst count period quantity
// and return its five integers as a Decision: the same key, the same state,
// so another program (or redis-cli) deciding or reading the key with
// CL.THROTTLE sees what the client did, and DEL resets it.
//
// # The refusal cache
//
// GCRA's refusals are exact for a while: the server knows when a key will
// allow again, and no call can make it allow earlier. So after the server
// refuses a key the client reads its state (the key's TAT, with GET and
// TIME on a connection of its own) and answers the calls on it locally,
// refusing exactly those the server would refuse, for any limit and
// quantity, until the instant the server would allow them (to the
// microsecond: CL.THROTTLE's own reply says whole seconds). A key hammered
// by an abusive caller then costs the server a few calls a period, however
// many attempts are made.
//
// A local refusal is never one the server would not give: the client's
// connection has CLIENT TRACKING on (Redis 6's server-assisted client-side
// caching, which redcell serves), so the server tells it within
// milliseconds when a cached key changes for any reason (an allowed call
// from anywhere, DEL, FLUSHALL, a replica's full sync, a slot moved away),
// and the key is dropped; when that connection is lost, everything cached
// from it is dropped. The cache holds at most Options.CacheSize keys.
//
// # When the server is away
//
// A call the server does not answer within Options.Timeout (20 ms by
// default) is answered by Options.Fallback, marked Local: by default a local
// limiter with a 1/Options.Instances share of the limit, or every call
// allowed, or every call refused. The node is then tried in the background
// and the calls on it go to the fallback at once, without waiting out the
// timeout, until it answers again. Errors are returned only for what the
// caller must fix (an invalid limit, a key that holds another limiter's
// state, a wrong password), never because the server is away.
//
// Package httplimit is net/http middleware over a Client.
package client
