package httplimit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
	"github.com/redcell/redcell/client/httplimit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// startLimiter starts an in-process redcell on the real clock and returns
// a client.Client on it, whose tracking connection is up.
func startLimiter(t *testing.T) (*client.Client, *redis.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := server.New(server.Config{}, storage.New(storage.Config{}))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() { require.NoError(t, srv.Close()); require.NoError(t, <-done) })
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := client.New(rdb, client.Options{})
	t.Cleanup(func() { _ = c.Close() })
	require.Eventually(t, func() bool { return c.Stats().TrackingConnects > 0 }, 10*time.Second, time.Millisecond)
	return c, rdb
}

// headers are the rate limit headers of a response, and its status.
type headers struct {
	status                                     int
	limit, remaining, reset, retry, policy, rl string
}

func get(t *testing.T, url string) headers {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	h := resp.Header
	return headers{resp.StatusCode, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"),
		h.Get("Retry-After"), h.Get("RateLimit-Policy"), h.Get("RateLimit")}
}

// The README's mapping, request by request, for CL.THROTTLE key 15 30 60:
// the first answered "0 16 15 -1 2", the 16th emptying the burst, the 17th
// refused by the server and the 18th by the client's cache, with the same
// headers; what the handler behind sees only for the allowed ones.
func TestHeadersRequestByRequest(t *testing.T) {
	c, rdb := startLimiter(t)
	served := 0
	h := httplimit.Middleware(c, httplimit.Config{Limit: client.Limit{Burst: 15, Count: 30, Period: time.Minute}})(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++; _, _ = w.Write([]byte("ok")) }))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)

	require.Equal(t, headers{200, "16", "15", "2", "", `"burst";q=16;w=32`, `"burst";r=15;t=2`}, get(t, ts.URL))
	for i := 2; i <= 16; i++ {
		got := get(t, ts.URL)
		require.Equal(t, 200, got.status, "request %d", i)
	}
	refused := headers{429, "16", "0", "32", "2", `"burst";q=16;w=32`, `"burst";r=0;t=32`}
	require.Equal(t, refused, get(t, ts.URL), "refused by the server")
	require.Eventually(t, func() bool { return c.Stats().Cached == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, refused, get(t, ts.URL), "refused by the cache, the same headers")
	require.EqualValues(t, 1, c.Stats().CacheHits)
	require.Equal(t, 16, served)

	// The key is the caller's IP: another key is another limit.
	v, err := rdb.Do(context.Background(), "CL.THROTTLE", "ip:127.0.0.1", 15, 30, 60, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 16, 0, -1, 32}, v)
}

// A request costing more than a whole burst can never pass: 429 without a
// Retry-After. A Key and a Cost of one's own; an error of the limiter (a
// limit the server refuses) is the OnError's, which by default serves the
// request.
func TestKeyCostAndErrors(t *testing.T) {
	c, _ := startLimiter(t)
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	byUser := httplimit.Middleware(c, httplimit.Config{
		Limit: client.Limit{Burst: 4, Count: 1, Period: time.Second},
		Key:   func(r *http.Request) string { return "user:" + r.URL.Query().Get("u") },
		Cost:  func(r *http.Request) int64 { return int64(len(r.URL.Query().Get("cost"))) },
	})(next)
	ts := httptest.NewServer(byUser)
	t.Cleanup(ts.Close)
	require.Equal(t, headers{429, "5", "5", "0", "", `"burst";q=5;w=5`, `"burst";r=5;t=0`}, get(t, ts.URL+"?u=a&cost=xxxxxx"))
	require.Equal(t, headers{200, "5", "2", "3", "", `"burst";q=5;w=5`, `"burst";r=2;t=3`}, get(t, ts.URL+"?u=a&cost=xxx"))
	require.Equal(t, headers{200, "5", "4", "1", "", `"burst";q=5;w=5`, `"burst";r=4;t=1`}, get(t, ts.URL+"?u=b&cost=x"))

	var seen error
	broken := httplimit.Middleware(c, httplimit.Config{Limit: client.Limit{Burst: -1, Count: 1, Period: time.Second}})(next)
	ts2 := httptest.NewServer(broken)
	t.Cleanup(ts2.Close)
	require.Equal(t, 200, get(t, ts2.URL).status, "served without a limit")
	custom := httplimit.Middleware(c, httplimit.Config{Limit: client.Limit{Burst: -1, Count: 1, Period: time.Second},
		OnError: func(w http.ResponseWriter, _ *http.Request, _ http.Handler, err error) {
			seen = err
			http.Error(w, "limiter misconfigured", http.StatusInternalServerError)
		}})(next)
	ts3 := httptest.NewServer(custom)
	t.Cleanup(ts3.Close)
	require.Equal(t, 500, get(t, ts3.URL).status)
	require.True(t, errors.Is(seen, client.ErrInvalidLimit))
}
