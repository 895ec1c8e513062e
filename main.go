// Command redcell is a Redis-protocol rate-limiting server: a drop-in
// replacement for the redis-cell module's CL.THROTTLE.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --pprof-addr
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"redcell/clock"
	"redcell/config"
	"redcell/gcra"
	"redcell/server"
	"redcell/storage"
)

// commit is the VCS revision, set at build time with
// -ldflags "-X main.commit=<sha>" (the Dockerfile does); empty, the version
// line reads the one Go records (config.BuildCommit).
var commit string

func main() {
	if commit != "" {
		config.Commit = commit
	}
	cfg, err := config.Parse(os.Args[1:], os.LookupEnv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell:", err)
		fmt.Fprintln(os.Stderr, "Try 'redcell --help'.")
		os.Exit(2)
	}
	if cfg.Version {
		fmt.Println(config.VersionLine())
		return
	}
	if cfg.HealthCheck {
		if err := healthCheck(cfg, 3*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "redcell: health check:", err)
			os.Exit(1)
		}
		return
	}
	// As Redis: SIGHUP does not stop the server, and a write to a closed
	// pipe (a log shipper restarting) fails with EPIPE instead of killing
	// it with SIGPIPE before the final save.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := newLogger(cfg, os.Stderr)
	logger.Info("starting redcell", append([]any{"version", server.Version, "commit", config.BuildCommit(),
		"go", runtime.Version(), "pid", os.Getpid()}, cfg.LogAttrs()...)...)
	if err := run(ctx, cfg, logger, nil); err != nil {
		logger.Error("redcell stopped", "err", err)
		os.Exit(1)
	}
}

// newClock is the process's clock; tests replace it to step the wall clock.
var newClock = clock.New

// state is the keyspace and, unless persistence is off, its Pebble store.
type state struct {
	clock    *clock.Clock
	store    *storage.Store
	backend  *storage.PebbleBackend // nil when persistence is off
	flusher  *storage.Flusher       // nil when persistence is off
	flushes  *flushObserver         // the flusher's writes; nil when persistence is off
	loaded   int
	loadTime time.Duration
}

// openState opens the store under cfg.Dir and loads every live key from it.
// The open is given up when ctx ends first (SIGTERM during a start that
// waits on the disk).
func openState(ctx context.Context, cfg config.Config, logger *slog.Logger) (*state, error) {
	clk := newClock()
	policy, _ := storage.ParseEvictionPolicy(cfg.MaxMemoryPolicy) // checked by Validate
	scfg := storage.Config{Shards: cfg.Shards, MaxMemory: cfg.MaxMemory, Eviction: policy}
	if cfg.InMemory {
		logger.Warn("persistence is off: state is lost on restart")
		return &state{clock: clk, store: storage.New(scfg)}, nil
	}
	scfg.TrackChanges = true
	st := &state{clock: clk, store: storage.New(scfg)}
	type opened struct {
		backend *storage.PebbleBackend
		stats   storage.LoadStats
		err     error
	}
	done := make(chan opened, 1)
	start := time.Now()
	go func() {
		reserve := cfg.DiskReserve
		if reserve == 0 {
			reserve = -1 // storage's "none"; its zero is the default
		}
		b, stats, err := storage.OpenPebble(cfg.Dir, storage.PebbleOptions{Logger: logger, Reserve: reserve},
			gcra.InstantOf(clk.Now()), st.store.Restore)
		done <- opened{b, stats, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("open store %s: interrupted before it opened", cfg.Dir)
	}
	if o.err != nil {
		return nil, o.err
	}
	st.backend, st.loaded, st.loadTime = o.backend, o.stats.Loaded, time.Since(start)
	logger.Info("loaded state", "dir", cfg.Dir, "keys", o.stats.Loaded, "stale_kept", o.stats.Stale, "duration", st.loadTime)
	st.flushes = newFlushObserver(st.backend, cfg.FlushInterval, logger)
	st.flusher = storage.NewFlusher(st.store, st.flushes, storage.FlusherOptions{
		WallOffset: clk.WallOffset,
		Logger:     logger.With("dir", cfg.Dir),
	})
	return st, nil
}

func (st *state) persistence() server.Persistence {
	if st.flusher == nil {
		return nil // not a typed nil: the server checks for nil
	}
	return st.flusher
}

// close writes every change on the way out (unless save is false), then
// closes the store. On a full or failing disk the save fails within the
// store's stall timeout, is reported, and the process exits anyway.
func (st *state) close(save bool, logger *slog.Logger) error {
	if st.backend == nil {
		return nil
	}
	// A BGSAVE begun before the stop may still be writing, and Pebble
	// panics when closed under it. No command runs any more (Serve has
	// returned), so none can begin another.
	st.flusher.Wait()
	var err error
	if save {
		start := time.Now()
		if err = st.flusher.Flush(); err == nil {
			logger.Info("saved state", "keys", st.flusher.Stats().LastCount, "duration", time.Since(start))
		} else {
			logger.Error("the final save failed; changes since the last good flush are lost", "pending", st.flusher.Pending(), "err", err)
		}
	} else {
		logger.Info("exiting without the final save (SHUTDOWN NOSAVE)")
	}
	return errors.Join(err, st.backend.Close())
}

// run serves until ctx is done or a client sends SHUTDOWN. ready, if not nil,
// receives the listening address once connections are accepted.
func run(ctx context.Context, cfg config.Config, logger *slog.Logger, ready chan<- net.Addr) (err error) {
	st, err := openState(ctx, cfg, logger)
	if err != nil {
		return err
	}
	store := st.store
	var saveOnExit atomic.Bool
	saveOnExit.Store(true)
	defer func() {
		if cerr := st.close(saveOnExit.Load(), logger); cerr != nil {
			err = errors.Join(err, fmt.Errorf("final save to %s: %w", cfg.Dir, cerr))
		}
	}()

	if cfg.PprofAddr != "" {
		pln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof-addr %s: %w", cfg.PprofAddr, err)
		}
		ps := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = ps.Serve(pln) }()
		defer ps.Close()
		logger.Info("serving pprof", "addr", pln.Addr().String())
	}

	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	tlsLn, tlsCfg, err := listenTLS(cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := server.New(server.Config{
		Clock:       st.clock,
		RequirePass: cfg.RequirePass,
		Shutdown: func(save bool) error {
			logger.Info("SHUTDOWN received", "save", save)
			saveOnExit.Store(save)
			cancel()
			return nil
		},
		Persistence:   st.persistence(),
		DurableWrites: st.flusher != nil && cfg.FlushInterval == 0,
		Logger:        logger,
		LoadedKeys:    int64(st.loaded),
		LoadDuration:  st.loadTime,
		Bind:          cfg.Bind,
		Port:          ln.Addr().(*net.TCPAddr).Port,
		Dir:           cfg.Dir,
		FlushInterval: cfg.FlushInterval,
		Limits:        cfg.ServerLimits(logger),
	}, store)
	if cfg.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(cfg.MetricsAddr, registry(srv, st), logger)
		if err != nil {
			_ = ln.Close()
			if tlsLn != nil {
				_ = tlsLn.Close()
			}
			return err
		}
		defer stopMetrics()
	}

	var background sync.WaitGroup
	background.Go(func() {
		store.RunExpiry(ctx, storage.DefaultExpiryInterval, storage.DefaultExpiryBatch, st.clock.Now)
	})
	background.Go(func() { store.RunMemoryWatch(ctx, storage.DefaultMemoryWatchInterval) })
	switch {
	case st.flusher == nil:
	case cfg.FlushInterval == 0:
		background.Go(func() { st.flusher.RunGroupCommit(ctx) })
	default:
		background.Go(func() { st.flusher.Run(ctx, cfg.FlushInterval) })
	}
	if st.flusher != nil {
		background.Go(func() { st.flusher.CleanStaleAfter(ctx, storage.DefaultStaleGrace) })
	}

	served := make(chan error, 2)
	listeners := 1
	go func() { served <- srv.Serve(ln) }()
	readyAttrs := []any{"addr", ln.Addr().String(), "shards", store.Shards(), "dir", cfg.Dir, "flush_interval", cfg.FlushInterval}
	if tlsLn != nil {
		listeners++
		go func() { served <- srv.ServeTLS(tlsLn, tlsCfg) }()
		readyAttrs = append(readyAttrs, "tls_addr", tlsLn.Addr().String())
	}
	logger.Info("ready to accept connections", readyAttrs...)
	if ready != nil {
		ready <- ln.Addr()
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-served:
		listeners--
		cancel()
	}
	_ = srv.Close()
	for ; listeners > 0; listeners-- {
		err = errors.Join(err, <-served)
	}
	// Connections are closed: nothing changes the store any more, and the
	// deferred close saves it.
	background.Wait()
	return err
}

// listenTLS opens the TLS listener --tls-port asks for, if any, with its
// certificates loaded.
func listenTLS(cfg config.Config) (net.Listener, *tls.Config, error) {
	if cfg.TLSPort == 0 {
		return nil, nil, nil
	}
	tlsCfg, err := server.LoadTLSConfig(cfg.TLSFiles())
	if err != nil {
		return nil, nil, err
	}
	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for TLS on %s: %w", addr, err)
	}
	return ln, tlsCfg, nil
}
