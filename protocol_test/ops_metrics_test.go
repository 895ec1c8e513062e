package protocol_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// /metrics counts exactly the decisions made: each step's reply says
// whether it was limited and the scrape after it says the same.
func TestMetricsCountExactlyTheDecisions(t *testing.T) {
	ts := harness.StartServer(t)
	url := metricsURL(t, ts)
	c := ts.Raw(t)

	// The dial returns once the kernel has the connection; the server counts
	// it when its accept loop takes it, a moment later.
	require.Eventually(t, func() bool {
		return scrapeMetrics(t, url).value(t, "redcell_connected_clients") == 1
	}, 5*time.Second, 5*time.Millisecond)
	m := scrapeMetrics(t, url)
	require.Equal(t, 0.0, m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "allowed"))
	require.Equal(t, 0.0, m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "limited"))

	// The first reference vector (gcratest) at t=0: max_burst 4, 1 per second
	// (limit 5).
	steps := []struct {
		quantity          string
		want              string
		allowed, limited  float64
		hits, misses      float64
		throttleCalls     float64
		keys              float64
		wantErrorsCommand float64
	}{
		{"6", testkit.Ints(1, 5, 5, -1, 0), 0, 1, 0, 1, 1, 0, 0}, // quantity above the limit: limited, key absent
		{"1", testkit.Ints(0, 5, 4, -1, 1), 1, 1, 0, 2, 2, 1, 0}, // creates k: a miss
		{"1", testkit.Ints(0, 5, 3, -1, 2), 2, 1, 1, 2, 3, 1, 0},
		{"0", testkit.Ints(0, 5, 3, -1, 2), 3, 1, 2, 2, 4, 1, 0}, // a peek is a decision too
		{"3", testkit.Ints(0, 5, 0, -1, 5), 4, 1, 3, 2, 5, 1, 0},
		{"1", testkit.Ints(1, 5, 0, 1, 5), 4, 2, 4, 2, 6, 1, 0},
		{"-1", testkit.Err("ERR quantity must not be negative"), 4, 2, 4, 2, 7, 1, 1}, // an error is no decision
	}
	for i, s := range steps {
		require.Equal(t, s.want, c.Do("CL.THROTTLE", "k", "4", "1", "1", s.quantity), "step %d", i)
		m := scrapeMetrics(t, url)
		for _, check := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"redcell_decisions_total", []string{"cmd", "cl.throttle", "result", "allowed"}, s.allowed},
			{"redcell_decisions_total", []string{"cmd", "cl.throttle", "result", "limited"}, s.limited},
			{"redcell_keyspace_hits_total", nil, s.hits},
			{"redcell_keyspace_misses_total", nil, s.misses},
			{"redcell_commands_total", []string{"cmd", "cl.throttle"}, s.throttleCalls},
			{"redcell_command_duration_seconds", []string{"cmd", "cl.throttle"}, s.throttleCalls},
			{"redcell_commands_failed_total", []string{"cmd", "cl.throttle"}, s.wantErrorsCommand},
			{"redcell_errors_total", []string{"kind", "command"}, s.wantErrorsCommand},
			{"redcell_keys", nil, s.keys},
		} {
			require.Equal(t, check.want, m.value(t, check.name, check.labels...), "step %d: %s%v", i, check.name, check.labels)
		}
	}

	// Refused commands: counted as errors of their kind and as rejected
	// calls, not as commands run.
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'cl.throttle' command"), c.Do("CL.THROTTLE", "k"))
	require.Equal(t, testkit.Err("ERR unknown command 'NOPE', with args beginning with: "), c.Do("NOPE"))
	require.Equal(t, testkit.Simple("string"), c.Do("TYPE", "k"))
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"))
	m = scrapeMetrics(t, url)
	require.Equal(t, 7.0, m.value(t, "redcell_commands_total", "cmd", "cl.throttle"))
	require.Equal(t, 1.0, m.value(t, "redcell_commands_rejected_total", "cmd", "cl.throttle"))
	require.Equal(t, 1.0, m.value(t, "redcell_errors_total", "kind", "wrong_arity"))
	require.Equal(t, 1.0, m.value(t, "redcell_errors_total", "kind", "unknown_command"))
	require.Equal(t, 5.0, m.value(t, "redcell_keyspace_hits_total"), "TYPE found k")
	require.Equal(t, 3.0, m.value(t, "redcell_keyspace_misses_total"), "GET did not find absent")
	_, called := m.lookup("redcell_commands_total", "cmd", "nope")
	require.False(t, called, "an unknown command has no series")

	// Expiry: the key's TAT passes and the sweeper frees it.
	ts.Clock.Advance(time.Hour)
	require.Equal(t, 1, ts.Store.ExpireSome(gcra.InstantOf(ts.Clock.Now()), 100))
	m = scrapeMetrics(t, url)
	require.Equal(t, 0.0, m.value(t, "redcell_keys"))
	require.Equal(t, 1.0, m.value(t, "redcell_expired_keys_total"))
	require.Equal(t, 1.0, m.value(t, "redcell_connections_received_total"))
}

// Under concurrent pipelined traffic the counters still add up exactly to
// what the clients were told.
func TestMetricsUnderConcurrentTraffic(t *testing.T) {
	ts := harness.StartServer(t)
	url := metricsURL(t, ts)
	const clients, rounds, depth = 4, 20, 25
	var mu sync.Mutex
	var allowed, limited int
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			rdb := ts.GoRedis(t)
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, depth)
				for i := range cmds {
					cmds[i] = pipe.Do(harness.Ctx(t), "CL.THROTTLE", "key"+strconv.Itoa(rng.IntN(8)), 9, 1, 60, 1+rng.IntN(3))
				}
				_, err := pipe.Exec(harness.Ctx(t))
				if !assert.NoError(t, err) {
					return
				}
				a, l := 0, 0
				for _, cmd := range cmds {
					r, err := cmd.Int64Slice()
					if !assert.NoError(t, err) {
						return
					}
					if r[0] == 1 {
						l++
					} else {
						a++
					}
				}
				mu.Lock()
				allowed, limited = allowed+a, limited+l
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, clients*rounds*depth, allowed+limited)
	require.Positive(t, limited, "the traffic is heavy enough to be limited")
	m := scrapeMetrics(t, url)
	require.Equal(t, float64(allowed), m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "allowed"))
	require.Equal(t, float64(limited), m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "limited"))
	require.Equal(t, float64(allowed+limited), m.value(t, "redcell_commands_total", "cmd", "cl.throttle"))
	require.Equal(t, float64(allowed+limited),
		m.value(t, "redcell_keyspace_hits_total")+m.value(t, "redcell_keyspace_misses_total"))
	require.Equal(t, 8.0, m.value(t, "redcell_keyspace_misses_total"), "each of the 8 keys was absent once")
}

// The built binary serves /metrics on --metrics-addr: names follow
// Prometheus's conventions (promlint), flushes are measured, the start-up
// load is reported, and the decisions counted are the ones made.
func TestBuiltBinaryServesMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	dir := t.TempDir()
	srv := harness.StartBinary(t, nil, harness.OnLoopback("--dir", dir, "--metrics-addr", "127.0.0.1:0", "--flush-interval", "1h")...)
	require.NotEmpty(t, srv.MetricsURL, "log:\n%s", srv.Log())

	resp, err := http.Get(srv.MetricsURL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "Prometheus naming conventions")

	m := scrapeMetrics(t, srv.MetricsURL)
	info := m["redcell_build_info"].GetMetric()
	require.Len(t, info, 1)
	labels := map[string]string{}
	for _, l := range info[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, server.Version, labels["version"])
	require.Equal(t, runtime.Version(), labels["goversion"])
	require.NotEmpty(t, labels["commit"], "a revision, or unknown when built without VCS information")
	require.Equal(t, 1.0, info[0].GetGauge().GetValue())
	require.Equal(t, 0.0, m.value(t, "redcell_loaded_keys"))
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "redcell_load_duration_seconds", "redcell_disk_bytes"} {
		require.Contains(t, m, name)
	}
	require.Equal(t, 0.0, m.value(t, "redcell_flush_duration_seconds"), "no flush yet: the interval is an hour")

	rdb := srv.GoRedis(t)
	allowed, limited := 0, 0
	for i := range 30 {
		r, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "user"+strconv.Itoa(i%3), 4, 1, 60).Int64Slice()
		require.NoError(t, err)
		if r[0] == 1 {
			limited++
		} else {
			allowed++
		}
	}
	require.Equal(t, 15, allowed, "5 for each of 3 keys")
	require.Equal(t, "OK", rdb.Do(harness.Ctx(t), "SAVE").Val())

	m = scrapeMetrics(t, srv.MetricsURL)
	require.Equal(t, float64(allowed), m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "allowed"))
	require.Equal(t, float64(limited), m.value(t, "redcell_decisions_total", "cmd", "cl.throttle", "result", "limited"))
	require.Equal(t, 3.0, m.value(t, "redcell_keys"))
	require.Equal(t, 1.0, m.value(t, "redcell_flush_duration_seconds"), "SAVE flushed once")
	require.Equal(t, 3.0, m["redcell_flush_keys"].GetMetric()[0].GetHistogram().GetSampleSum(), "of 3 keys")
	require.Equal(t, 0.0, m.value(t, "redcell_flush_failures_total"))
	require.Equal(t, 0.0, m.value(t, "redcell_pending_changes"))
	require.Positive(t, m.value(t, "redcell_disk_bytes"))
	require.InDelta(t, float64(time.Now().Unix()), m.value(t, "redcell_last_flush_success_timestamp_seconds"), 60)

	// GET /top is CL.TOP's answer as JSON: every key limited 5 times, the
	// one made hot first.
	for range 3 {
		rdb.Do(harness.Ctx(t), "CL.THROTTLE", "user1", 4, 1, 60)
	}
	topURL := strings.TrimSuffix(srv.MetricsURL, "/metrics") + "/top"
	resp, err = http.Get(topURL + "?count=2")
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `[{"key":"user1","limited":8,"allowed":0},{"key":"user0","limited":5,"allowed":0}]`, string(body))
	require.Equal(t, rdb.Do(harness.Ctx(t), "CL.TOP", "COUNT", 2).Val(),
		[]any{[]any{"user1", int64(8), int64(0)}, []any{"user0", int64(5), int64(0)}}, "the same as CL.TOP")
	resp, err = http.Get(topURL + "?count=-1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// A restart loads the three keys and says so.
	require.NoError(t, srv.Stop(syscall.SIGTERM), "log:\n%s", srv.Log())
	again := harness.StartBinary(t, nil, harness.OnLoopback("--dir", dir, "--metrics-addr", "127.0.0.1:0")...)
	require.Equal(t, 3.0, scrapeMetrics(t, again.MetricsURL).value(t, "redcell_loaded_keys"))
}

// Malformed RESP is answered with Redis's protocol error and the connection
// closed; it counts as an error reply of kind protocol.
func TestMetricsCountProtocolErrors(t *testing.T) {
	ts := harness.StartServer(t)
	url := metricsURL(t, ts)
	c := ts.Raw(t)
	c.Write("*1\r\n$x\r\n")
	require.Equal(t, testkit.Err("ERR Protocol error: invalid bulk length"), c.Read())
	c.ExpectClosed()
	require.Eventually(t, func() bool {
		m, err := tryScrape(url)
		if err != nil {
			return false
		}
		v, _ := m.lookup("redcell_errors_total", "kind", "protocol")
		return v == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 0.0, scrapeMetrics(t, url).value(t, "redcell_errors_total", "kind", "command"))
}
