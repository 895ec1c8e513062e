package protocol_test

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"
)

// The standard Redis exporter (oliver006/redis_exporter, Debian's
// prometheus-redis-exporter) reads redcell as it reads Redis: up, the
// clients, every command's calls and time, keyspace hits and misses, the
// keys, errors, configuration. Its own log stays free of errors, so no
// command it sends is refused.
func TestRedisExporterReadsRedcell(t *testing.T) {
	exporter := harness.NeedTool(t, "`apt-get install prometheus-redis-exporter` (Debian) or from github.com/oliver006/redis_exporter",
		"prometheus-redis-exporter", "redis_exporter")
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for i := range 4 {
		c.Do("CL.THROTTLE", "user"+strconv.Itoa(i%2), "1", "1", "60") // 2 allowed fresh, 2 allowed live
	}
	c.Do("CL.THROTTLE", "user0", "1", "1", "60") // limited, live
	c.Do("CL.THROTTLE", "user0", "x", "1", "60") // failed
	c.Do("CL.THROTTLE", "user0")                 // rejected
	c.Do("GET", "nobody")                        // miss

	listen := harness.LoopbackEndpoint(harness.FreePort(t)).Addr
	cmd := exec.Command(exporter, "-redis.addr", "redis://"+ts.Addr, "-web.listen-address", listen, "-redis-only-metrics")
	var logs testkit.LockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + listen + "/metrics"
	// Wait for its port without an HTTP request: every request is a
	// scrape, and this test counts the exporter's connections.
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", listen)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, 15*time.Second, 20*time.Millisecond, "the exporter listens; log:\n%s", logs.String())

	m := scrapeMetrics(t, url)
	for _, check := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"redis_up", nil, 1},
		{"redis_connected_clients", nil, 2}, // the test's and the exporter's
		{"redis_commands_total", []string{"cmd", "cl.throttle"}, 6},
		{"redis_commands_duration_seconds_total", []string{"cmd", "cl.throttle"}, 0}, // the manual clock
		{"redis_commands_failed_calls_total", []string{"cmd", "cl.throttle"}, 1},
		{"redis_commands_rejected_calls_total", []string{"cmd", "cl.throttle"}, 1},
		{"redis_keyspace_hits_total", nil, 3},
		{"redis_keyspace_misses_total", nil, 3},
		{"redis_db_keys", []string{"db", "db0"}, 2},
		{"redis_db_keys_expiring", []string{"db", "db0"}, 2},
		{"redis_db_avg_ttl_seconds", []string{"db", "db0"}, 120}, // two calls of 60 s each
		{"redis_errors_total", []string{"err", "ERR"}, 2},
		{"redis_expired_keys_total", nil, 0},
		{"redis_rejected_connections_total", nil, 0},
		{"redis_config_maxclients", nil, 10000},
		{"redis_config_maxmemory", nil, 0},
		{"redis_slowlog_length", nil, 0},
		{"redis_connections_received_total", nil, 2},
	} {
		require.Equal(t, check.want, m.value(t, check.name, check.labels...), "%s%v; exporter log:\n%s", check.name, check.labels, logs.String())
	}
	server := sectionFields(parseInfo(t, bulkBody(t, c.Do("INFO", "server"))), "Server")
	info := m["redis_instance_info"].GetMetric()
	require.Len(t, info, 1)
	labels := map[string]string{}
	for _, l := range info[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	for name, want := range map[string]string{"redis_version": "7.2.0", "redis_mode": "standalone", "role": "master",
		"tcp_port": strconv.Itoa(ts.Port), "run_id": server["run_id"], "process_id": server["process_id"], "maxmemory_policy": "noeviction"} {
		require.Equal(t, want, labels[name], "redis_instance_info{%s}", name)
	}
	require.Contains(t, m, "redis_latency_percentiles_usec", "Latencystats became a summary")
	require.NotContains(t, strings.ToLower(logs.String()), "level=error", "the exporter met no error")
}
