package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Concurrency limits: Acquire takes one of at most limit leases on a key
// (CL.ACQUIRE), which the client renews in the background while it is
// held and ends with Release (CL.RELEASE). A process that dies stops
// renewing, and its lease ends by itself when lease passes.

// ErrInvalidLease is Acquire's error for a limit below 0 or a lease
// shorter than a millisecond.
var ErrInvalidLease = errors.New("client: a lease needs a limit of at least 0 and a duration of at least 1ms")

// Lease is the answer to Acquire: a lease held (Acquired) or a refusal,
// with what the server said of the key.
type Lease struct {
	// Acquired is true when the lease is held.
	Acquired bool
	// Limit is the most leases the key holds at once; Remaining, the
	// slots left free.
	Limit, Remaining int64
	// RetryAfter is, when refused, the time until the earliest lease on the
	// key ends (-1: none will; only a higher limit frees a slot).
	RetryAfter time.Duration
	// Token names the lease on the server (CL.LEASES lists it).
	Token string
	// Local is true when the fallback decided (Options.Fallback): the
	// server did not answer within Options.Timeout.
	Local bool

	c     *Client
	key   string
	lease time.Duration
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	lost  chan struct{}
	err   error // Release's
	// counted: the fallback counts it in Client.localLeases.
	counted bool
}

// Acquire takes one of at most limit leases on key for lease, renewed in
// the background every lease/3 until Release: the lease outlives a slow
// request, not a dead process. A refusal is a Lease with Acquired false and
// RetryAfter set, not an error. While the server does not answer within
// Options.Timeout, the fallback decides as it does for Allow: FallbackOpen
// grants, FallbackClosed refuses, FallbackLocal holds at most
// limit/Options.Instances leases per key in this process. It returns an
// error only for an invalid limit or lease (ErrInvalidLease), a context the
// caller canceled, an error of the server that is the caller's (WRONGTYPE:
// the key holds another limiter's state; NOAUTH and the like), and once
// the client is closed.
func (c *Client) Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (*Lease, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if limit < 0 || lease < time.Millisecond {
		return nil, ErrInvalidLease
	}
	nd, err := c.nodeFor(ctx, key)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return c.acquireLocally(ctx, key, limit, lease)
	}
	if nd.down.Load() {
		return c.acquireLocally(ctx, key, limit, lease)
	}
	cctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	reply, err := c.call(cctx, "CL.ACQUIRE", key, limit, lease.Milliseconds())
	c.stats.serverCalls.Add(1)
	if err != nil {
		if callerError(cctx, err) {
			return nil, err
		}
		c.markDown(nd)
		return c.acquireLocally(ctx, key, limit, lease)
	}
	l, err := leaseOf(reply)
	if err != nil {
		return nil, err
	}
	l.c, l.key, l.lease = c, key, lease
	if l.Acquired {
		l.hold()
	}
	return l, nil
}

// leaseOf reads CL.ACQUIRE's reply: four integers and the token.
func leaseOf(reply any) (*Lease, error) {
	v, ok := reply.([]any)
	if !ok || len(v) != 5 {
		return nil, fmt.Errorf("client: CL.ACQUIRE answered %v", reply)
	}
	var n [4]int64
	for i := range n {
		if n[i], ok = v[i].(int64); !ok {
			return nil, fmt.Errorf("client: CL.ACQUIRE answered %v", reply)
		}
	}
	l := &Lease{Acquired: n[0] == 0, Limit: n[1], Remaining: n[2], RetryAfter: -1}
	if n[3] >= 0 {
		l.RetryAfter = time.Duration(n[3]) * time.Millisecond
	}
	if l.Acquired {
		if l.Token, ok = v[4].(string); !ok {
			return nil, fmt.Errorf("client: CL.ACQUIRE answered %v", reply)
		}
	}
	return l, nil
}

// call sends one command within ctx, as throttle does.
func (c *Client) call(ctx context.Context, args ...any) (any, error) {
	if c.deadlines {
		return c.rdb.Do(ctx, args...).Result()
	}
	done := make(chan *redis.Cmd, 1)
	go func() { done <- c.rdb.Do(ctx, args...) }()
	select {
	case cmd := <-done:
		return cmd.Result()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// hold starts the renewals of a lease acquired.
func (l *Lease) hold() {
	l.stop, l.done, l.lost = make(chan struct{}), make(chan struct{}), make(chan struct{})
	l.c.wg.Add(1)
	go func() {
		defer l.c.wg.Done()
		defer close(l.done)
		l.renewWhileHeld()
	}()
}

// renewWhileHeld renews the lease every lease/3 until Release, the client's
// Close, or a renewal that finds it gone (Lost). A renewal the server does
// not answer is tried again at the next tick: the lease lives on the
// server until lease has passed since the last renewal that reached it.
func (l *Lease) renewWhileHeld() {
	tick := time.NewTicker(max(l.lease/3, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.c.stop:
			return
		case <-tick.C:
		}
		if l.Local {
			continue // nothing on the server to renew
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(l.c.opt.Timeout, l.lease/3))
		reply, err := l.c.call(ctx, "CL.RENEW", l.key, l.Token, l.lease.Milliseconds())
		cancel()
		if err == nil && reply == int64(0) {
			close(l.lost)
			return
		}
	}
}

// Lost is closed when a renewal found the lease gone: it expired (the
// server was not reached for a whole lease) or was released by another
// (CL.RELEASE with its token), or the key was reset. Work done under the
// lease is then no longer within the limit. Nil for a lease not acquired.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Release ends the lease: the renewals stop, and the server frees the slot
// (CL.RELEASE). It is safe to call more than once and on a refusal (a
// no-op). Its error is the server's, or ctx's; the slot is then freed when
// the lease passes, without renewals.
func (l *Lease) Release(ctx context.Context) error {
	if !l.Acquired {
		return nil
	}
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		if l.counted {
			l.c.localLeases.release(l.key)
		}
		if l.Local {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, max(l.c.opt.Timeout, 100*time.Millisecond))
		defer cancel()
		_, l.err = l.c.call(ctx, "CL.RELEASE", l.key, l.Token)
	})
	return l.err
}

// acquireLocally is Acquire's fallback (Options.Fallback).
func (c *Client) acquireLocally(ctx context.Context, key string, limit int64, lease time.Duration) (*Lease, error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}
	c.stats.fallbacks.Add(1)
	l := &Lease{Limit: limit, Local: true, RetryAfter: -1, c: c, key: key, lease: lease}
	switch c.opt.Fallback {
	case FallbackOpen:
		l.Acquired = true
	case FallbackClosed:
		l.RetryAfter = time.Second
	default:
		share := limit / int64(c.opt.Instances)
		if limit > 0 {
			share = max(1, share)
		}
		var held int64
		l.Acquired, held = c.localLeases.acquire(key, share)
		l.counted = l.Acquired
		l.Limit, l.Remaining = share, max(0, share-held)
		if !l.Acquired {
			l.RetryAfter = lease // a local lease ends at its Release: at most one lease away
		}
	}
	if l.Acquired {
		l.Token = "local:" + strconv.FormatInt(c.now(), 36)
		l.hold()
	}
	return l, nil
}

// localLeases counts the leases the fallback holds in this process, by key.
type localLeases struct {
	mu   sync.Mutex
	held map[string]int64
}

// acquire takes one of limit on key, and returns the count held after.
func (s *localLeases) acquire(key string, limit int64) (bool, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(map[string]int64)
	}
	if s.held[key] >= limit {
		return false, s.held[key]
	}
	s.held[key]++
	return true, s.held[key]
}

func (s *localLeases) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key)
	}
}
