package client

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeInterval is how often a node that did not answer is tried again
// (with PING, in the background) while calls to it are answered by the
// fallback; probeTimeout bounds each try.
const (
	probeInterval = 50 * time.Millisecond
	probeTimeout  = time.Second
)

// Client decides rate limits on redcell (or Redis with the redis-cell
// module) over a go-redis client, with CL.THROTTLE, on the keys and with the
// meaning CL.THROTTLE has, so that a key it decides can be read or reset
// with CL.THROTTLE, DEL or anything else that speaks it.
//
// It saves round trips: after the server refuses a key, the client reads
// the key's exact state (its TAT, on a connection with CLIENT TRACKING on)
// and refuses the same key locally, for any limit and quantity the server
// would refuse, until the instant the server would allow; the server tells
// it when the key changes (an allowed call anywhere, DEL, FLUSHALL, a full
// sync, its slot moved), and the key is dropped from the cache when it
// does. A limited key hammered by one caller costs the server a few calls a
// period instead of one per attempt.
//
// It answers while the server is away: a call not answered within
// Options.Timeout is decided by Options.Fallback, and so are the calls
// after it until a probe finds the server back.
//
// A Client is safe for concurrent use. It does not close the go-redis
// client it was given.
type Client struct {
	rdb   redis.UniversalClient
	opt   Options
	cache *refusals // nil: off
	local *refusals // the fallback limiter's TATs
	// localLeases are the leases the fallback holds (Acquire).
	localLeases localLeases
	base        time.Time
	// now is the client's clock: nanoseconds since base, monotonic.
	now func() int64

	// deadlines is set when go-redis bounds a call by its context's
	// deadline (ContextTimeoutEnabled): throttle need not.
	deadlines bool

	// single is the node of a plain or failover client (and of any other
	// UniversalClient, uncached); a cluster client's nodes are by address.
	single  *node
	cluster *redis.ClusterClient
	nodesMu sync.Mutex
	nodes   map[string]*node

	stats  counters
	closed atomic.Bool
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// node is one server the client decides on: whether it answers, and its
// tracking connection (nil: nothing it answers is cached).
type node struct {
	ping    func(context.Context) error
	tracker *tracker
	down    atomic.Bool
}

// New returns a Client deciding on rdb: a *redis.Client (one server, or
// Sentinel's failover client), a *redis.ClusterClient, or any other
// UniversalClient (a Ring: decided and fallen back on, not cached). The
// tracking connections it opens use rdb's options: its dialer (TLS,
// Sentinel's current master) and credentials.
func New(rdb redis.UniversalClient, opt Options) *Client {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.Instances <= 0 {
		opt.Instances = 1
	}
	if opt.CacheSize == 0 {
		opt.CacheSize = DefaultCacheSize
	}
	c := &Client{rdb: rdb, opt: opt, base: time.Now(), stop: make(chan struct{}), nodes: make(map[string]*node)}
	c.now = func() int64 { return int64(time.Since(c.base)) }
	c.local = newRefusals(max(opt.CacheSize, DefaultCacheSize))
	if opt.CacheSize > 0 {
		c.cache = newRefusals(opt.CacheSize)
	}
	switch r := rdb.(type) {
	case *redis.Client:
		c.single = c.newNode(r)
		c.deadlines = r.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		c.cluster = r
		c.deadlines = r.Options().ContextTimeoutEnabled
	default:
		c.single = &node{ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}
	}
	return c
}

func (c *Client) newNode(r *redis.Client) *node {
	n := &node{ping: func(ctx context.Context) error { return r.Ping(ctx).Err() }}
	if c.cache != nil {
		opt := r.Options()
		n.tracker = newTracker(c, opt.Addr, opt)
	}
	return n
}

// nodeFor is the node that decides key.
func (c *Client) nodeFor(ctx context.Context, key string) (*node, error) {
	if c.cluster == nil {
		return c.single, nil
	}
	r, err := c.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	addr := r.Options().Addr
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	n := c.nodes[addr]
	if n == nil {
		select {
		case <-c.stop:
			return nil, ErrClosed
		default:
		}
		n = c.newNode(r)
		c.nodes[addr] = n
	}
	return n, nil
}

// allNodes are the nodes the client knows of.
func (c *Client) allNodes() []*node {
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	var out []*node
	if c.single != nil {
		out = append(out, c.single)
	}
	for _, n := range c.nodes {
		out = append(out, n)
	}
	return out
}

// ErrClosed is returned by a Client that was closed.
var ErrClosed = errors.New("client: closed")

// Close stops the client's tracking connections and probes. It does not
// close the go-redis client.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		for _, n := range c.allNodes() {
			if n.tracker != nil {
				n.tracker.close()
			}
		}
		c.wg.Wait()
	})
	return nil
}

// Allow decides one call on key: AllowN with n 1.
func (c *Client) Allow(ctx context.Context, key string, limit Limit) (Decision, error) {
	return c.AllowN(ctx, key, limit, 1)
}

// AllowN decides n calls at once on key under limit, as CL.THROTTLE key
// max_burst count period n does (n 0 reads the key's state without
// changing it). It answers from the refusal cache when it can, from the
// server otherwise, and from the fallback while the server does not answer
// within Options.Timeout. It returns an error only for an invalid limit
// (ErrInvalidLimit), a context the caller canceled, an error of the server
// that is the caller's (ERR ..., WRONGTYPE: the key holds another limiter's
// state; NOAUTH and the like), and once the client is closed.
func (c *Client) AllowN(ctx context.Context, key string, limit Limit, n int64) (Decision, error) {
	if c.closed.Load() {
		return Decision{}, ErrClosed
	}
	r, err := newRate(limit)
	if err != nil {
		return Decision{}, err
	}
	inc, err := r.increment(n)
	if err != nil {
		return Decision{}, err
	}
	c.stats.decisions.Add(1)
	if d, ok := c.cachedRefusal(key, &r, inc); ok {
		return d, nil
	}
	nd, err := c.nodeFor(ctx, key)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return Decision{}, err
		}
		return c.fallback(ctx, key, &r, n)
	}
	if nd.down.Load() {
		return c.fallback(ctx, key, &r, n)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opt.Timeout) // the wait and the round trip share it
	defer cancel()
	if nd.tracker.awaitRead(ctx, key) {
		// The key's state, read after a refusal a moment ago, has come:
		// it may answer this call too.
		if d, ok := c.cachedRefusal(key, &r, inc); ok {
			return d, nil
		}
	}
	reply, err := c.throttle(ctx, key, r.args(), n)
	c.stats.serverCalls.Add(1)
	if err != nil {
		if callerError(ctx, err) {
			return Decision{}, err
		}
		c.markDown(nd)
		return c.fallback(ctx, key, &r, n)
	}
	d, err := fromReply(reply)
	if err != nil {
		return Decision{}, err
	}
	if !d.Allowed && nd.tracker.usable() {
		nd.tracker.fetch(key)
	}
	return d, nil
}

// throttle sends CL.THROTTLE and returns its reply, or an error once ctx
// (Options.Timeout) has ended. go-redis bounds a call's socket reads and
// writes by its context only with ContextTimeoutEnabled; without it, the
// call runs on a goroutine of its own, which go-redis's own timeouts end,
// and the caller does not wait for it.
func (c *Client) throttle(ctx context.Context, key string, args [3]string, n int64) ([]int64, error) {
	if c.deadlines {
		return c.rdb.Do(ctx, "CL.THROTTLE", key, args[0], args[1], args[2], n).Int64Slice()
	}
	done := make(chan *redis.Cmd, 1)
	go func() { done <- c.rdb.Do(ctx, "CL.THROTTLE", key, args[0], args[1], args[2], n) }()
	select {
	case cmd := <-done:
		return cmd.Int64Slice()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// cachedRefusal answers a call on key from the cache when the TAT cached
// refuses it: until the instant the server would allow it, which is cut, by
// 1/1024 of the span from when the TAT was read, for the clocks' rates
// (NTP slews a clock by at most 500 ppm), or for good when it costs more
// than a burst holds.
func (c *Client) cachedRefusal(key string, r *rate, inc int64) (Decision, bool) {
	if c.cache == nil {
		return Decision{}, false
	}
	tat, read, ok := c.cache.get(key)
	if !ok {
		return Decision{}, false
	}
	now := c.now()
	d, _ := gcraDecide(r, tat, now, inc)
	if d.Allowed {
		if tat <= now {
			c.cache.dropExpired(key, tat) // it refuses nothing any more
		}
		return Decision{}, false
	}
	if inc <= r.dvt {
		until := tat + inc - r.dvt
		until -= (until - read) >> 10
		if now >= until {
			return Decision{}, false // so near the instant that the server decides
		}
		d.RetryAfter = time.Duration(until - now)
	}
	d.Local = true
	c.stats.cacheHits.Add(1)
	return d, true
}

// callerError reports whether err is the caller's to see rather than the
// fallback's to hide: the caller's context canceled, or the server refusing
// the command for what it says (a syntax or range error, a key of another
// type, authentication).
func callerError(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.Canceled) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	for _, prefix := range []string{"ERR ", "WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// args are r's burst, count and period as CL.THROTTLE is sent them.
func (r *rate) args() [3]string {
	return [3]string{strconv.FormatInt(r.burst, 10), strconv.FormatInt(r.count, 10), strconv.FormatInt(r.period, 10)}
}
