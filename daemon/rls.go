package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/rls"
)

// rlsService is Envoy's rate limit service as the daemon runs it: its
// listener, opened with the others, its rules, loaded before the store
// opens (a bad file stops the start before anything is written), and once
// serving the gRPC server and the watcher of its rules.
type rlsService struct {
	ln      net.Listener
	svc     *rls.Service
	watcher *rls.Watcher
	metrics *rls.Metrics
	grpc    *grpc.Server
	cluster *rls.Cluster
}

// openRLS listens on --rls-addr and loads --rls-config; nil without
// --rls-addr.
func openRLS(cfg config.Config, logger *slog.Logger) (*rlsService, error) {
	if cfg.RLSAddr == "" {
		return nil, nil
	}
	m := rls.NewMetrics()
	svc := rls.NewService(nil, nil, nil, rls.Options{KeyPrefix: cfg.RLSKeyPrefix, ResponseHeaders: cfg.RLSResponseHeaders}, m)
	w := &rls.Watcher{Path: cfg.RLSConfig, Service: svc, Logger: logger, Metrics: m,
		Options: rls.LoadOptions{MergeDomains: cfg.RLSMergeDomains, WindowLogMax: cfg.WindowLogMax}}
	if err := w.Load(); err != nil {
		return nil, fmt.Errorf("--rls-config %s: %w", cfg.RLSConfig, err)
	}
	ln, err := net.Listen("tcp", cfg.RLSAddr)
	if err != nil {
		return nil, fmt.Errorf("--rls-addr %s: %w", cfg.RLSAddr, err)
	}
	return &rlsService{ln: ln, svc: svc, watcher: w, metrics: m}, nil
}

// serve decides on st's store (or, in cluster mode, on each key's node)
// and serves gRPC until stop; it returns once serving has begun.
func (r *rlsService) serve(ctx context.Context, cfg config.Config, st *state, gate *admission.Gate, cl *cluster.State,
	port int, logger *slog.Logger) (stop func(), err error) {
	// The server's gate: the service refuses as the RESP commands do.
	local := &rls.Local{Store: st.store, WindowLogMax: cfg.WindowLogMax, Gate: gate}
	if st.flusher != nil && cfg.FlushInterval == 0 {
		local.Sync = st.flusher.Sync
	}
	var decider rls.Decider = local
	if cl != nil {
		host := cfg.Bind
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		r.cluster = &rls.Cluster{Local: local, State: cl, Self: net.JoinHostPort(host, strconv.Itoa(port)),
			User: cfg.ClusterAuthUser, Password: cfg.ClusterAuthPass}
		if r.cluster.Password == "" {
			r.cluster.Password = cfg.RequirePass
		}
		decider = r.cluster
	}
	r.svc.Use(decider, st.clock.Now)
	var opts []grpc.ServerOption
	if cfg.TLSCertFile != "" {
		tlsCfg, err := engine.LoadTLSConfig(cfg.TLSFiles())
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	r.grpc = rls.NewGRPCServer(logger, opts...)
	rls.Register(r.grpc, r.svc)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := r.grpc.Serve(r.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			logger.Error("rate limit service stopped", "err", err)
		}
	}()
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if cfg.RLSReloadInterval > 0 {
			r.watcher.Run(wctx, cfg.RLSReloadInterval)
		}
	}()
	logger.Info("serving Envoy's rate limit service", "addr", r.ln.Addr().String(), "config", cfg.RLSConfig,
		"domains", len(r.svc.Rules().Domains()), "tls", cfg.TLSCertFile != "")
	return func() {
		cancel()
		<-watched
		// Calls under way end, new ones are refused; past a few seconds
		// the rest are cut.
		done := make(chan struct{})
		go func() { r.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			r.grpc.Stop()
		}
		<-served
		if r.cluster != nil {
			r.cluster.Close()
		}
	}, nil
}

// close closes the listener when serving never began.
func (r *rlsService) close() {
	if r != nil && r.grpc == nil {
		_ = r.ln.Close()
	}
}
