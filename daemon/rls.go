package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
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
// listeners, opened with the others, its rules (loaded before the store
// opens, so that a bad file stops the start before anything is written, or
// followed from an xDS management server once serving), and once serving
// the gRPC server, the watcher of its rules and the health check.
type rlsService struct {
	ln      net.Listener
	svc     *rls.Service
	watcher *rls.Watcher // nil with --rls-xds-server
	xds     *rls.XDS     // nil with --rls-config
	health  *rlsHealth   // nil without --rls-healthcheck-addr
	metrics *rls.Metrics
	grpc    *grpc.Server
	cluster *rls.Cluster
}

// openRLS listens on --rls-addr and loads --rls-config (or readies the
// client of --rls-xds-server); nil without --rls-addr.
func openRLS(cfg config.Config, logger *slog.Logger) (*rlsService, error) {
	if cfg.RLSAddr == "" {
		return nil, nil
	}
	m := rls.NewMetrics()
	svc := rls.NewService(nil, nil, nil, rls.Options{KeyPrefix: cfg.RLSKeyPrefix, ResponseHeaders: cfg.RLSResponseHeaders,
		ShadowMode: cfg.RLSShadowMode, QuotaMode: cfg.RLSQuotaMode, DynamicMetadata: cfg.RLSResponseDynamicMetadata,
		StopIncrementWhenOverLimit: cfg.RLSStopIncrementOverLimit, NearLimitRatio: cfg.RLSNearLimitRatio,
		LimitHeader: cfg.RLSLimitHeader, RemainingHeader: cfg.RLSRemainingHeader, ResetHeader: cfg.RLSResetHeader}, m)
	r := &rlsService{svc: svc, metrics: m}
	opts := rls.LoadOptions{MergeDomains: cfg.RLSMergeDomains, WindowLogMax: cfg.WindowLogMax}
	if cfg.RLSXDSServer != "" {
		x, err := newXDS(cfg, svc, opts, m, logger)
		if err != nil {
			return nil, err
		}
		r.xds = x
	} else {
		r.watcher = &rls.Watcher{Path: cfg.RLSConfig, Service: svc, Logger: logger, Metrics: m, Options: opts}
		if err := r.watcher.Load(); err != nil {
			return nil, fmt.Errorf("--rls-config %s: %w", cfg.RLSConfig, err)
		}
	}
	var err error
	if r.ln, err = listenRLS(cfg.RLSAddr); err != nil {
		return nil, fmt.Errorf("--rls-addr %s: %w", cfg.RLSAddr, err)
	}
	if cfg.RLSHealthcheckAddr != "" {
		if r.health, err = listenRLSHealth(cfg.RLSHealthcheckAddr, svc, cfg.RLSHealthcheckNeedsRules); err != nil {
			_ = r.ln.Close()
			return nil, err
		}
	}
	return r, nil
}

// listenRLS listens on --rls-addr: host:port, or unix:path for a Unix
// socket (the reference's GRPC_UDS). A socket file left by a process that
// ended is removed first, as Redis removes its unixsocket's; any other file
// there is not.
func listenRLS(addr string) (net.Listener, error) {
	path, unix := config.RLSUnixPath(addr)
	if !unix {
		return net.Listen("tcp", addr)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("listen unix %s: another process serves it", path)
		}
		_ = os.Remove(path)
	}
	return net.Listen("unix", path)
}

// requireClientName makes cfg accept only a client certificate, verified
// against its CAs, that names name (--rls-tls-client-name, the reference's
// GRPC_CLIENT_TLS_SAN): a client without one is refused too, whatever
// --tls-auth-clients says, since a name was asked for.
func requireClientName(cfg *tls.Config, name string) {
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.VerifyPeerCertificate = func(_ [][]byte, chains [][]*x509.Certificate) error {
		if len(chains) == 0 || len(chains[0]) == 0 {
			return errors.New("no client certificate")
		}
		return chains[0][0].VerifyHostname(name)
	}
}

// newXDS is the client of --rls-xds-server, its TLS files read now: a
// missing one stops the start.
func newXDS(cfg config.Config, svc *rls.Service, opts rls.LoadOptions, m *rls.Metrics, logger *slog.Logger) (*rls.XDS, error) {
	md, _ := config.ParsePairs(cfg.RLSXDSNodeMetadata, "=") // Validate read them
	headers, _ := config.ParsePairs(cfg.RLSXDSHeaders, ":")
	x := &rls.XDS{Server: cfg.RLSXDSServer, Node: rls.XDSNode(cfg.RLSXDSNodeID, md), Headers: headers,
		Options: opts, Service: svc, Logger: logger, Metrics: m}
	if cfg.RLSXDSTLS {
		tlsCfg, err := rls.XDSTLSConfig(cfg.RLSXDSTLSCACertFile, cfg.RLSXDSTLSCertFile, cfg.RLSXDSTLSKeyFile, cfg.RLSXDSTLSServerName)
		if err != nil {
			return nil, fmt.Errorf("--rls-xds-tls: %w", err)
		}
		x.TLS = tlsCfg
	}
	return x, nil
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
		if cfg.RLSTLSClientName != "" {
			requireClientName(tlsCfg, cfg.RLSTLSClientName)
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
		switch {
		case r.xds != nil:
			r.xds.Run(wctx)
		case cfg.RLSReloadInterval > 0:
			r.watcher.Run(wctx, cfg.RLSReloadInterval)
		}
	}()
	stopHealth := r.health.serve(logger)
	logger.Info("serving Envoy's rate limit service", "addr", r.ln.Addr().String(), "config", cfg.RLSConfig,
		"xds_server", cfg.RLSXDSServer, "domains", len(r.svc.Rules().Domains()), "tls", cfg.TLSCertFile != "")
	return func() {
		stopHealth()
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

// close closes the listeners when serving never began.
func (r *rlsService) close() {
	if r != nil && r.grpc == nil {
		_ = r.ln.Close()
		r.health.close()
	}
}
