package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client/httplimit"
)

// At most Limit requests of a key run at once: the ones over it are
// answered 503 with Retry-After at once, and once the requests in flight
// return their slots are free again.
func TestConcurrencyLimitBoundsRequestsInFlight(t *testing.T) {
	c, rdb := startLimiter(t)
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(2)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			running.Done()
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(httplimit.ConcurrencyLimit(c, httplimit.ConcurrencyConfig{
		Limit: 2, Lease: time.Minute, Status: http.StatusServiceUnavailable,
		Key: func(*http.Request) string { return "backend" },
	})(handler))
	t.Cleanup(srv.Close)

	var slow sync.WaitGroup
	for range 2 {
		slow.Go(func() {
			resp, err := http.Get(srv.URL + "/slow")
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	running.Wait() // both hold their leases

	resp, err := http.Get(srv.URL + "/fast")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "60", resp.Header.Get("Retry-After"), "the earliest lease ends in a minute")
	require.Equal(t, "2", resp.Header.Get("X-ConcurrencyLimit-Limit"))
	require.Equal(t, "0", resp.Header.Get("X-ConcurrencyLimit-Remaining"))
	held, err := rdb.Do(t.Context(), "CL.LEASES", "backend").Slice()
	require.NoError(t, err)
	require.Len(t, held, 2)

	close(release)
	slow.Wait()
	resp, err = http.Get(srv.URL + "/fast")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "the slots came back when the requests returned")
	require.Equal(t, "1", resp.Header.Get("X-ConcurrencyLimit-Remaining"))
	n, err := rdb.Exists(t.Context(), "backend").Result()
	require.NoError(t, err)
	require.Zero(t, n, "every lease released")
}
