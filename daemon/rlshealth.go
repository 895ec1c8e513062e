package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/redcell/redcell/rls"
)

// rlsHealth is envoyproxy/ratelimit's HTTP health check, which Envoy
// Gateway's probes ask (GET /healthcheck on its HOST:PORT, 8080): 200 "OK"
// while the service serves, 500 once it stops, and with needsRules 500
// too while the rules in force have no domain (the reference's
// HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED). Before the first rules from an
// xDS management server it answers OK, as the reference forced to start
// does: the gRPC answers say UNAVAILABLE meanwhile, and a probe that
// failed would have the pod killed while its management server is away.
type rlsHealth struct {
	ln         net.Listener
	svc        *rls.Service
	needsRules bool
	stopping   atomic.Bool
}

func listenRLSHealth(addr string, svc *rls.Service, needsRules bool) (*rlsHealth, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--rls-healthcheck-addr %s: %w", addr, err)
	}
	return &rlsHealth{ln: ln, svc: svc, needsRules: needsRules}, nil
}

func (h *rlsHealth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/healthcheck" {
		http.NotFound(w, req)
		return
	}
	if h.stopping.Load() || (h.needsRules && len(h.svc.Rules().Domains()) == 0) {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte("OK"))
}

// serve answers until the returned stop, which first fails the check (so
// that a load balancer lets go of the pod) and then closes the listener.
// A nil h serves nothing.
func (h *rlsHealth) serve(logger *slog.Logger) (stop func()) {
	if h == nil {
		return func() {}
	}
	stopServing := serveHTTP(h.ln, h, "the rate limit service's health check", logger,
		"addr", "http://"+h.ln.Addr().String()+"/healthcheck")
	return func() {
		h.stopping.Store(true)
		stopServing()
	}
}

// close closes the listener when serving never began.
func (h *rlsHealth) close() {
	if h != nil {
		_ = h.ln.Close()
	}
}
