package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/rls"
	"github.com/redcell/redcell/top"
)

// /status.json, what the status page shows, from the metrics a node
// exports: decisions summed over the commands, clients, a master's
// replicas or a replica's link, the most limited keys, the RLS's rules and
// when they came into force (and none: not serving, or no rules yet).
func TestStatusJSON(t *testing.T) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcell_decisions_total"}, []string{"cmd", "result"})
	decisions.WithLabelValues("cl.throttle", "allowed").Add(7)
	decisions.WithLabelValues("cl.window", "allowed").Add(3)
	decisions.WithLabelValues("cl.throttle", "limited").Add(5)
	clients := prometheus.NewGauge(prometheus.GaugeOpts{Name: "redcell_connected_clients"})
	clients.Set(4)
	replicas := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "redcell_connected_replicas"}, []string{"state"})
	replicas.WithLabelValues("connected").Set(2)
	replicas.WithLabelValues("good").Set(1)
	master := prometheus.NewRegistry()
	master.MustRegister(decisions, clients, replicas)
	topOf := func(n int) []top.Entry {
		require.Equal(t, 10, n, "the page's ten")
		return []top.Entry{{Key: "<b>hot</b>", Limited: 9, Allowed: 1, Error: 2}}
	}
	loaded := time.UnixMilli(1_700_000_000_123)
	rulesOf := func() ([]rls.ListedRule, time.Time) {
		return []rls.ListedRule{{Name: "api.user", Limit: "2/hour", Where: "rules.yaml:3"}}, loaded
	}

	require.JSONEq(t, `{"decisions": {"allowed": 10, "limited": 5}, "clients": 4, "role": "master",
		"replicas": {"connected": 2, "good": 1}, "link_up": false,
		"top": [{"key": "<b>hot</b>", "limited": 9, "allowed": 1}],
		"rls": {"rules": [{"name": "api.user", "limit": "2/hour", "where": "rules.yaml:3"}], "since": 1700000000123}}`,
		getStatus(t, statusHandler(master, topOf, rulesOf)))

	linkUp := prometheus.NewGauge(prometheus.GaugeOpts{Name: "redcell_master_link_up"})
	linkUp.Set(1)
	replica := prometheus.NewRegistry()
	replica.MustRegister(linkUp)
	noRulesYet := func() ([]rls.ListedRule, time.Time) { return nil, time.Time{} }
	require.JSONEq(t, `{"decisions": {"allowed": 0, "limited": 0}, "clients": 0, "role": "replica", "link_up": true,
		"top": [], "rls": {"rules": [], "since": 0}}`,
		getStatus(t, statusHandler(replica, func(int) []top.Entry { return nil }, noRulesYet)))
	require.Contains(t, getStatus(t, statusHandler(replica, func(int) []top.Entry { return nil }, nil)), `"rls":null`,
		"not serving the RLS")
}

// getStatus answers GET /status.json from h, its time left out.
func getStatus(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	var m map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m))
	require.InDelta(t, float64(time.Now().UnixMilli()), m["time"], 60_000, "the server's clock, in ms")
	delete(m, "time")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// GET /top: CL.TOP's answer as JSON, ten keys unless count says, and a
// count that is not a whole number from 0 to 10,000 a 400 that says so.
func TestTopJSON(t *testing.T) {
	var asked []int
	h := topHandler(func(n int) []top.Entry {
		asked = append(asked, n)
		return []top.Entry{{Key: "a", Limited: 3, Allowed: 4, Error: 1}}
	})
	for _, c := range []struct {
		query string
		code  int
		body  string
	}{
		{"", 200, `[{"key":"a","limited":3,"allowed":4}]`},
		{"?count=0", 200, `[{"key":"a","limited":3,"allowed":4}]`},
		{"?count=10000", 200, `[{"key":"a","limited":3,"allowed":4}]`},
		{"?count=10001", 400, "count must be a whole number from 0 to 10000"},
		{"?count=-1", 400, "count must be a whole number from 0 to 10000"},
		{"?count=x", 400, "count must be a whole number from 0 to 10000"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/top"+c.query, nil))
		require.Equal(t, c.code, rec.Code, c.query)
		require.Equal(t, c.body+"\n", rec.Body.String(), c.query)
	}
	require.Equal(t, []int{10, 0, 10000}, asked)
}
