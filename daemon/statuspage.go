package daemon

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redcell/redcell/rls"
)

// statusPage is the page at / on --metrics-addr for those without Grafana:
// one file, no framework, no external asset, polling statusHandler's JSON
// every second.
//
//go:embed status.html
var statusPage []byte

// rlsFacts tells the status page the rate limit service's rules in force
// and when they were put in force (zero: none yet); nil without --rls-addr.
type rlsFacts func() (rules []rls.ListedRule, since time.Time)

// rulesInForce is svc's rlsFacts.
func rulesInForce(svc *rls.Service) rlsFacts {
	return func() ([]rls.ListedRule, time.Time) { return svc.Rules().List(), svc.RulesSince() }
}

// statusHandler serves GET /status.json: the counters the page turns into
// rates (it reads them from the metrics registry, so page and /metrics
// agree), clients, role and replication, the top limited keys, the RLS.
func statusHandler(reg prometheus.Gatherer, top topFunc, rlsOf rlsFacts) http.Handler {
	type rlsStatus struct {
		Rules []rls.ListedRule `json:"rules"`
		Since int64            `json:"since"` // unix milliseconds; 0: no rules yet
	}
	type status struct {
		Time      int64            `json:"time"` // unix milliseconds
		Decisions map[string]int64 `json:"decisions"`
		Clients   int64            `json:"clients"`
		Role      string           `json:"role"`
		Replicas  map[string]int64 `json:"replicas,omitempty"`
		LinkUp    bool             `json:"link_up"`
		Top       []topEntry       `json:"top"`
		RLS       *rlsStatus       `json:"rls"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		families, err := reg.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		st := status{Time: time.Now().UnixMilli(), Decisions: map[string]int64{"allowed": 0, "limited": 0},
			Role: "master", Replicas: map[string]int64{"connected": 0, "good": 0}, Top: topEntries(top(10))}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				switch f.GetName() {
				case "redcell_decisions_total":
					st.Decisions[label(m, "result")] += int64(m.GetCounter().GetValue())
				case "redcell_connected_clients":
					st.Clients = int64(m.GetGauge().GetValue())
				case "redcell_connected_replicas":
					st.Replicas[label(m, "state")] = int64(m.GetGauge().GetValue())
				case "redcell_master_link_up":
					st.Role, st.LinkUp, st.Replicas = "replica", m.GetGauge().GetValue() == 1, nil
				}
			}
		}
		if rlsOf != nil {
			rules, since := rlsOf()
			st.RLS = &rlsStatus{Rules: rules}
			if st.RLS.Rules == nil {
				st.RLS.Rules = []rls.ListedRule{} // [], not null: the page lists none
			}
			if !since.IsZero() {
				st.RLS.Since = since.UnixMilli()
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(st)
	})
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
