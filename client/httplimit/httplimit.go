// Package httplimit is net/http middleware that rate-limits requests with
// a client.Client: each request is one call on the key a function of the
// request names (the caller's IP by default). A refused request is answered
// 429 Too Many Requests with Retry-After; every response carries the limit,
// what remains and when the burst is whole again, as X-RateLimit-* headers
// and as the IETF's RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers, revisions 08 and later), mapped as
// redcell's docs/clients.md (HTTP header mapping) maps CL.THROTTLE's reply:
//
//	X-RateLimit-Limit: 16
//	X-RateLimit-Remaining: 15
//	X-RateLimit-Reset: 2
//	RateLimit-Policy: "burst";q=16;w=32
//	RateLimit: "burst";r=15;t=2
//	Retry-After: 2                 (on a 429 only)
package httplimit

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redcell/redcell/client"
)

// Config configures the middleware. Limit is required; the other fields
// have defaults.
type Config struct {
	// Limit is the limit every key gets.
	Limit client.Limit
	// Key is the key a request is limited under. The default is "ip:" and
	// the IP of the request's remote address (behind a proxy, give a Key
	// that reads the header the proxy sets).
	Key func(*http.Request) string
	// Cost is how many calls a request counts for. The default is 1.
	Cost func(*http.Request) int64
	// OnError is called when the limiter returns an error, which it does
	// only for what must be fixed (an invalid Limit, a key that holds
	// another limiter's state), never because the server is away (the
	// client's fallback answers then). The default serves the request
	// without a limit: a broken limiter is not a broken API.
	OnError func(w http.ResponseWriter, r *http.Request, next http.Handler, err error)
}

// Middleware returns the middleware that limits requests with c as cfg
// says.
func Middleware(c *client.Client, cfg Config) func(http.Handler) http.Handler {
	if cfg.Key == nil {
		cfg.Key = RemoteIP
	}
	if cfg.OnError == nil {
		cfg.OnError = func(w http.ResponseWriter, r *http.Request, next http.Handler, _ error) { next.ServeHTTP(w, r) }
	}
	window := policyWindow(cfg.Limit)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := int64(1)
			if cfg.Cost != nil {
				n = cfg.Cost(r)
			}
			d, err := c.AllowN(r.Context(), cfg.Key(r), cfg.Limit, n)
			if err != nil {
				cfg.OnError(w, r, next, err)
				return
			}
			SetHeaders(w.Header(), d, window)
			if !d.Allowed {
				if d.RetryAfter >= 0 {
					w.Header().Set("Retry-After", strconv.FormatInt(seconds(d.RetryAfter), 10))
				}
				http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// SetHeaders sets the rate limit headers of d on h (not Retry-After): the
// X-RateLimit-* fields and the IETF's, whose policy window is window
// seconds (PolicyWindow).
func SetHeaders(h http.Header, d client.Decision, window int64) {
	limit, remaining, reset := strconv.FormatInt(d.Limit, 10), strconv.FormatInt(d.Remaining, 10), strconv.FormatInt(seconds(d.ResetAfter), 10)
	h.Set("X-RateLimit-Limit", limit)
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset", reset)
	h.Set("RateLimit-Policy", `"burst";q=`+limit+`;w=`+strconv.FormatInt(window, 10))
	h.Set("RateLimit", `"burst";r=`+remaining+`;t=`+reset)
}

// PolicyWindow is RateLimit-Policy's w for l: the seconds a whole burst
// takes to come back (limit * period / count), rounded up.
func PolicyWindow(l client.Limit) int64 { return policyWindow(l) }

func policyWindow(l client.Limit) int64 {
	if l.Count <= 0 {
		return 0
	}
	burst := time.Duration(l.Burst + 1)
	if l.Period > 0 && burst > (1<<63-1)/l.Period {
		return (1<<63 - 1) / int64(time.Second)
	}
	return seconds(burst * l.Period / time.Duration(l.Count))
}

// seconds is d in whole seconds as redis-cell rounds them: the whole
// seconds, and one more for a remainder of a millisecond or more.
func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second >= time.Millisecond {
		s++
	}
	return s
}

// RemoteIP is the default Key: "ip:" and the IP the request came from.
func RemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
