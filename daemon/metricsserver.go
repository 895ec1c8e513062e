package daemon

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/top"
)

// serveMetrics serves reg at /metrics on ln (listen's, on --metrics-addr),
// top's answer at /top (topHandler) and the status page at / (statusPage,
// statusHandler), until the returned stop is called,
// which closes ln and waits for the HTTP server to end.
func serveMetrics(ln net.Listener, reg *prometheus.Registry, top topFunc, rls rlsFacts, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}))
	mux.Handle("GET /top", topHandler(top))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(statusPage)
	})
	mux.Handle("GET /status.json", statusHandler(reg, top, rls))
	return serveHTTP(ln, mux, "metrics", logger, "metrics", "http://"+ln.Addr().String()+"/metrics")
}

type topFunc func(n int) []top.Entry

// topHandler serves GET /top?count=n: CL.TOP's answer as a JSON array of
// {"key","limited","allowed"}, most limited first; count defaults to
// CL.TOP's, and one that is not a whole number from 0 to 10000 is a 400.
func topHandler(f topFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := server.DefaultTopCount
		if q := r.URL.Query().Get("count"); q != "" {
			v, err := strconv.Atoi(q)
			if err != nil || v < 0 || v > 10000 {
				http.Error(w, "count must be a whole number from 0 to 10000", http.StatusBadRequest)
				return
			}
			n = v
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(topEntries(f(n)))
	})
}

// topEntry is one key of /top and of the status page.
type topEntry struct {
	Key     string `json:"key"`
	Limited int64  `json:"limited"`
	Allowed int64  `json:"allowed"`
}

func topEntries(es []top.Entry) []topEntry {
	out := make([]topEntry, 0, len(es))
	for _, e := range es {
		out = append(out, topEntry{e.Key, e.Limited, e.Allowed})
	}
	return out
}
