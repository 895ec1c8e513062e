package httplimit

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/redcell/redcell/client"
)

// DefaultLease is how long a request's lease lasts between renewals when
// ConcurrencyConfig.Lease is not set: the client renews it every third of
// that while the request runs, so a request may take longer; a process that
// dies frees its requests' slots within a lease.
const DefaultLease = 30 * time.Second

// ConcurrencyConfig configures ConcurrencyLimit. Limit is required; the
// other fields have defaults.
type ConcurrencyConfig struct {
	// Limit is the most requests in flight per key, across every process
	// that limits with the same server.
	Limit int64
	// Lease is the lease each request holds (client.Acquire). The default
	// is DefaultLease.
	Lease time.Duration
	// Key is the key a request is limited under. The default is RemoteIP.
	Key func(*http.Request) string
	// Status answers a refused request: 429 Too Many Requests (the
	// default), or 503 Service Unavailable for a limit that protects a
	// backend rather than meters a client. Either carries Retry-After.
	Status int
	// OnError is called when the limiter returns an error (an invalid
	// Limit, a key that holds another limiter's state). The default
	// serves the request without a limit.
	OnError func(w http.ResponseWriter, r *http.Request, next http.Handler, err error)
}

// ConcurrencyLimit returns middleware that lets at most cfg.Limit requests
// per key run at once: each holds a lease (client.Acquire) while the next
// handler runs, released when it returns, or by the lease's end if the
// process dies. A refused request is answered cfg.Status with Retry-After
// (the time until the earliest lease on the key ends, at least a second)
// and X-ConcurrencyLimit-Limit and -Remaining.
func ConcurrencyLimit(c *client.Client, cfg ConcurrencyConfig) func(http.Handler) http.Handler {
	if cfg.Key == nil {
		cfg.Key = RemoteIP
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Status == 0 {
		cfg.Status = http.StatusTooManyRequests
	}
	if cfg.OnError == nil {
		cfg.OnError = func(w http.ResponseWriter, r *http.Request, next http.Handler, _ error) { next.ServeHTTP(w, r) }
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l, err := c.Acquire(r.Context(), cfg.Key(r), cfg.Limit, cfg.Lease)
			if err != nil {
				cfg.OnError(w, r, next, err)
				return
			}
			h := w.Header()
			h.Set("X-ConcurrencyLimit-Limit", strconv.FormatInt(l.Limit, 10))
			h.Set("X-ConcurrencyLimit-Remaining", strconv.FormatInt(l.Remaining, 10))
			if !l.Acquired {
				retry := int64(1)
				if l.RetryAfter > 0 {
					retry = max(1, seconds(l.RetryAfter))
				}
				h.Set("Retry-After", strconv.FormatInt(retry, 10))
				http.Error(w, http.StatusText(cfg.Status), cfg.Status)
				return
			}
			// Released on the way out, a panic in next included; on a
			// context of its own: the request's may be canceled by now.
			defer func() { _ = l.Release(context.WithoutCancel(r.Context())) }()
			next.ServeHTTP(w, r)
		})
	}
}
