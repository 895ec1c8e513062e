package server

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// The collector exposes the same counters in Prometheus's text format.
func TestCollector(t *testing.T) {
	tc := newTestClient(t, Config{})
	tc.do("CL.THROTTLE", "k", "1", "1", "1")
	tc.do("CL.THROTTLE", "k", "1", "1", "1")
	tc.do("CL.THROTTLE", "k", "1", "1", "1")
	tc.do("CL.THROTTLE", "k", "x", "1", "1")
	tc.do("FOO")

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tc.srv.Collector()))
	text := gatherText(t, reg)
	for _, line := range []string{
		`redcell_decisions_total{cmd="cl.throttle",result="allowed"} 2`,
		`redcell_decisions_total{cmd="cl.throttle",result="limited"} 1`,
		`redcell_keyspace_hits_total 2`,
		`redcell_keyspace_misses_total 1`,
		`redcell_commands_total{cmd="cl.throttle"} 4`,
		`redcell_commands_failed_total{cmd="cl.throttle"} 1`,
		`redcell_commands_rejected_total{cmd="cl.throttle"} 0`,
		`redcell_errors_total{kind="command"} 1`,
		`redcell_errors_total{kind="unknown_command"} 1`,
		`redcell_errors_total{kind="noauth"} 0`,
		`redcell_command_duration_seconds_bucket{cmd="cl.throttle",le="2.5e-07"} 4`,
		`redcell_command_duration_seconds_bucket{cmd="cl.throttle",le="+Inf"} 4`,
		`redcell_command_duration_seconds_count{cmd="cl.throttle"} 4`,
		`redcell_keys 1`,
		`redcell_keys_by_kind{kind="string"} 1`,
		`redcell_keys_by_kind{kind="window"} 0`,
		`redcell_keys_by_kind{kind="leases"} 0`,
		`redcell_expired_keys_total 0`,
		`redcell_connected_clients 1`,
		`redcell_connections_received_total 1`,
		`redcell_rejected_connections_total 0`,
		`redcell_pending_changes 0`,
	} {
		require.Contains(t, text, "\n"+line+"\n")
	}
	require.NotContains(t, text, `cmd="foo"`, "unknown commands have no series")
	require.NotContains(t, text, `cmd="ping"`, "commands never called have no series")
}

// Each scrape measures the memory: without --maxmemory nothing else does
// (the memory watch runs only with a limit), and the gauge read the first
// measure ever taken, however the keys grew after.
func TestMemoryIsMeasuredAtEachScrape(t *testing.T) {
	tc := newTestClient(t, Config{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tc.srv.Collector()))
	used := func() float64 {
		t.Helper()
		m := regexp.MustCompile(`\nredcell_memory_used_bytes (\S+)\n`).FindStringSubmatch(gatherText(t, reg))
		require.NotNil(t, m)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	before := used()
	rate, err := gcra.NewRate(9, 1, 3600, 1)
	require.NoError(t, err)
	for i := range 500_000 { // 16 MiB of slots at least, outside the Go heap
		_, err := tc.srv.store.Throttle(strconv.AppendInt([]byte("key:"), int64(i), 10), rate, gcra.InstantOf(t0))
		require.NoError(t, err)
	}
	require.Greater(t, used()-before, float64(8<<20))
}

func gatherText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString("\n")
	for _, mf := range families {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		require.NoError(t, err)
	}
	return b.String()
}

// redcell_errors_total's HELP text names every kind the metric has a series
// for, each once, in the order of the one list of kinds (errorKinds), where
// it was written out by hand and had fallen behind ten kinds.
func TestErrorsHelpNamesEveryKind(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(New(Config{}, storage.New(storage.Config{})).Collector()))
	families, err := reg.Gather()
	require.NoError(t, err)
	var help string
	var series []string
	for _, mf := range families {
		if mf.GetName() != "redcell_errors_total" {
			continue
		}
		help = mf.GetHelp()
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				series = append(series, l.GetValue())
			}
		}
	}
	list, ok := strings.CutPrefix(help, "Error replies by kind: ")
	require.True(t, ok, help)
	var named []string
	for _, item := range strings.Split(strings.TrimSuffix(list, "."), ", ") {
		name, _, _ := strings.Cut(item, " (")
		named = append(named, name)
	}
	require.Len(t, series, int(numErrorKinds))
	require.ElementsMatch(t, series, named, "HELP %q", help)
	require.Contains(t, help, "command (bad arguments and other ERR)")
	require.Contains(t, help, ", crossslot, internal (a command that panicked: its connection is closed), other (any other prefix).")
}

// A master's replicas and a replica's link, for the dashboard's replication
// panels and the alerts on lag and min-replicas: one series a replica.
func TestCollectorReplication(t *testing.T) {
	m, r := startReplNode(t), startReplNode(t)
	require.Equal(t, "OK", m.do(t, "CONFIG", "SET", "min-replicas-to-write", 1))
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool { return m.node.GoodReplicas() == 1 }, 10*time.Second, time.Millisecond)
	m.do(t, "CL.THROTTLE", "k", 1, 1, 60)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m.srv.Collector()))
	text := gatherText(t, reg)
	for _, line := range []string{
		`redcell_connected_replicas{state="connected"} 1`,
		`redcell_connected_replicas{state="good"} 1`,
		`redcell_min_replicas_to_write 1`,
		`redcell_memory_max_bytes 0`,
		`redcell_evicted_keys_total 0`,
	} {
		require.Contains(t, text, "\n"+line+"\n")
	}
	require.Regexp(t, `\nredcell_replica_lag_seconds\{replica="127\.0\.0\.1:\d+"\} \d`, text)
	require.Regexp(t, `\nredcell_replica_lag_bytes\{replica="127\.0\.0\.1:\d+"\} \d+\n`, text)
	require.Regexp(t, `\nredcell_memory_used_bytes [1-9]`, text)
	require.Regexp(t, `\nredcell_memory_arena_garbage_bytes \d+\n`, text)

	// The master counts the replica good once it acknowledges; the
	// replica says its link is up once it has loaded the snapshot: wait
	// for that too.
	require.Eventually(t, func() bool { return r.info(t, "master_link_status") == "up" }, 10*time.Second, time.Millisecond)
	reg = prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(r.srv.Collector()))
	require.Contains(t, gatherText(t, reg), "\nredcell_master_link_up 1\n")
}
