package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

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
