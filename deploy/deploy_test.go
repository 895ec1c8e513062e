// Package deploy holds what operators deploy beside redcell (the compose
// files' Prometheus and Grafana provisioning, the alert rules, the
// dashboard), and tests them against the real tools: promtool for the
// rules, a real Prometheus scraping a real redcell for the dashboard.
package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/internal/testkit/harness"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

const promInstall = "`apt-get install prometheus` (Debian: promtool and prometheus)"

// The alert rules load, and every alert fires on the series that should
// fire it and stays quiet on one that should not (alerts_test.yml).
func TestAlertRules(t *testing.T) {
	promtool := harness.NeedTool(t, promInstall, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/alerts.yml"},
		{"test", "rules", "prometheus/alerts_test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, string(out), "SUCCESS")
	}
}

// dashboard is what the test reads of deploy/grafana/redcell.json.
type dashboard struct {
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("grafana/redcell.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	return d
}

// The dashboard asks for its data source and instance by variable: nothing
// of one deployment is written into it.
func TestDashboardHasNothingHardCoded(t *testing.T) {
	d := readDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.AllValue
	}
	require.Contains(t, vars, "datasource")
	require.Equal(t, ".*", vars["instance"])
	require.NotEmpty(t, d.Panels)
	for _, p := range d.Panels {
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			require.Contains(t, tg.Expr, `instance=~"$instance"`, "%s: every query filters on $instance", p.Title)
			require.NotContains(t, tg.Expr, "127.0.0.1", p.Title)
		}
	}
}

// A real Prometheus (the Debian package, 1 s scrapes) scrapes a real
// redcell master with a replica and the rate limit service, and a durable
// one (--flush-interval 0, for the commit log's fsync), while allowed and
// limited traffic runs; then every query of every panel of the dashboard
// returns data, and the alert rules load without error.
func TestEveryPanelQueryReturnsData(t *testing.T) {
	prometheus := harness.NeedTool(t, promInstall, "prometheus")
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n"), 0o600))
	rlsPort := harness.FreePort(t)
	master := harness.StartBinary(t, nil, harness.OnLoopback("--metrics-addr", "127.0.0.1:0",
		"--rls-addr", "127.0.0.1:"+strconv.Itoa(rlsPort), "--rls-config", rules, "--flush-interval", "1s")...)
	replica := harness.StartBinary(t, nil, harness.OnLoopback("--metrics-addr", "127.0.0.1:0",
		"--replicaof", "127.0.0.1 "+strconv.Itoa(master.Port))...)
	durable := harness.StartBinary(t, nil, harness.OnLoopback("--metrics-addr", "127.0.0.1:0", "--flush-interval", "0")...)

	promPort := harness.FreePort(t)
	target := func(u string) string { p, _ := url.Parse(u); return p.Host }
	alerts, err := filepath.Abs("prometheus/alerts.yml")
	require.NoError(t, err)
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: redcell
    static_configs: [{targets: [%q, %q, %q]}]
`, alerts, target(master.MetricsURL), target(replica.MetricsURL), target(durable.MetricsURL))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))
	prom := exec.Command(prometheus, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort))
	var promLog testkit.LockedBuffer
	prom.Stdout, prom.Stderr = &promLog, &promLog
	require.NoError(t, prom.Start())
	t.Cleanup(func() { _ = prom.Process.Kill(); _ = prom.Wait() })
	api := "http://127.0.0.1:" + strconv.Itoa(promPort)

	// Traffic: decisions allowed and limited of every limiter, an error,
	// the RLS's OK and OVER_LIMIT; the replica streams all of it; a few
	// decisions on the durable node, each waiting for its group commit.
	rdb, rdbDurable := master.GoRedis(t), durable.GoRedis(t)
	ctx := harness.Ctx(t)
	conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(rlsPort)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	rls := pb.NewRateLimitServiceClient(conn)
	require.Eventually(t, func() bool {
		for i := range 200 {
			rdb.Do(ctx, "CL.THROTTLE", "user:"+strconv.Itoa(i%20), 5, 10, 60)
		}
		rdb.Do(ctx, "CL.WINDOW", "w", 3, 60)
		rdb.Do(ctx, "CL.ACQUIRE", "db", 2, 60000)
		rdb.Do(ctx, "CL.THROTTLE", "bad", "x", 1, 1)
		for range 5 { // allowed, so each changes the key and waits for a group commit
			rdbDurable.Do(ctx, "CL.THROTTLE", "durable", 1_000_000, 1_000_000, 1)
		}
		_, _ = rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbc.RateLimitDescriptor{
			{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: "a"}}}}})
		return queryHasData(api, `rate(redcell_decisions_total{result="limited"}[5s]) > 0`) &&
			queryHasData(api, `redcell_replica_lag_bytes`) && queryHasData(api, `rate(redcell_rls_over_limit_total[5s]) > 0`) &&
			queryHasData(api, `redcell_last_flush_success_timestamp_seconds > 0`) && queryHasData(api, `rate(redcell_flush_duration_seconds_count[5s]) > 0`) &&
			queryHasData(api, `rate(redcell_commit_log_sync_duration_seconds_count[5s]) > 0`)
	}, 60*time.Second, 500*time.Millisecond, "Prometheus never had the traffic's series; its log:\n%s", &promLog)

	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			q := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `10s`).Replace(tg.Expr)
			require.True(t, queryHasData(api, q), "panel %q: no data for %s", p.Title, q)
		}
	}
	var rulesResp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name   string `json:"name"`
					Health string `json:"health"`
					Error  string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, api+"/api/v1/rules", &rulesResp)
	require.Len(t, rulesResp.Data.Groups, 1)
	require.Len(t, rulesResp.Data.Groups[0].Rules, 7)
	for _, r := range rulesResp.Data.Groups[0].Rules {
		require.NotEqual(t, "err", r.Health, "%s: %s", r.Name, r.Error)
	}
}

// queryHasData reports whether Prometheus answers query with at least one
// sample that is a number: a quantile of a histogram nothing was observed
// in is NaN, a series with no data behind it.
func queryHasData(api, query string) bool {
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"` // [time, "value"]
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || r.Status != "success" || r.Data.ResultType != "vector" {
		return false
	}
	for _, sample := range r.Data.Result {
		if v, ok := sample.Value[1].(string); ok && v != "NaN" {
			return true
		}
	}
	return false
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
