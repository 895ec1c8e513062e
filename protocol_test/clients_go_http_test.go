package protocol_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// rateLimit is docs/clients.md's HTTP middleware: 30 requests a minute per
// client address, bursts of 16, the reply mapped to the usual headers.
func rateLimit(rdb *redis.Client, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := rdb.Do(r.Context(), "CL.THROTTLE", "ip:"+r.RemoteAddr, 15, 30, 60).Int64Slice()
		if err != nil {
			next.ServeHTTP(w, r) // fail open: an outage of the limiter is not an outage of the API
			return
		}
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.FormatInt(res[1], 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(res[2], 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(res[4], 10))
		if res[0] == 1 {
			h.Set("Retry-After", strconv.FormatInt(res[3], 10))
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// The middleware's headers, request by request, on a clock that stands
// still: 16 allowed, counting down, then 429 with Retry-After.
func TestHTTPHeaderMapping(t *testing.T) {
	ts := harness.StartServer(t)
	handler := rateLimit(ts.GoRedis(t), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	serve := func() *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.1"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Result()
	}
	for i := 1; i <= 16; i++ {
		resp := serve()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "request %d", i)
		require.Equal(t, "16", resp.Header.Get("X-RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(16-i), resp.Header.Get("X-RateLimit-Remaining"), "request %d", i)
		require.Equal(t, strconv.Itoa(2*i), resp.Header.Get("X-RateLimit-Reset"), "request %d: 2 s per request until the burst is whole", i)
		require.Empty(t, resp.Header.Get("Retry-After"))
	}
	resp := serve()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "one emission interval")
	require.Equal(t, "32", resp.Header.Get("X-RateLimit-Reset"))
}
