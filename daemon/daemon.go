// Package daemon is the redcell server's wiring: it opens the store, listens
// for RESP (and TLS), serves /metrics and pprof, runs the expiry, memory and
// flush goroutines, and saves and closes the store on the way out. main
// parses the configuration and calls Run.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/top"
)

// Options are what a caller sets besides the configuration. The zero value
// is what the command runs with.
type Options struct {
	// Clock is the clock decisions use; nil is clock.New() at the start of
	// Run. Tests give one whose wall clock steps.
	Clock *clock.Clock
	// Ready, if not nil, receives the RESP listener's address once
	// connections are accepted.
	Ready chan<- net.Addr
	// listening, if not nil, is called with the RESP listener's address
	// once it listens, before the store opens, and the start waits for it
	// to return: tests hold the load with it.
	listening func(net.Addr)
	// rlsReady, if not nil, is called with the rate limit service's address
	// once it serves.
	rlsReady func(net.Addr)
}

// Run serves cfg until ctx is done or a client sends SHUTDOWN, then closes
// every connection, makes the final save (unless SHUTDOWN NOSAVE) and
// closes the store. It logs the start-up line with every setting, then the
// configuration's warnings (config.Config.Warnings), the load,
// "ready to accept connections" and the shutdown to logger. It returns an
// error when a listener cannot be opened (before anything is written to
// cfg.Dir), the store cannot be opened, or serving or the final save fails.
func Run(ctx context.Context, cfg config.Config, logger *slog.Logger, opts Options) (err error) {
	// Log what runs, not what was asked: --shards 0 (the default) is 16
	// per CPU, and any count is rounded up to a power of two.
	cfg.Shards = storage.Config{Shards: cfg.Shards}.EffectiveShards()
	logger.Info("starting redcell", append([]any{"version", server.Version, "commit", config.BuildCommit(),
		"go", runtime.Version(), "pid", os.Getpid()}, cfg.LogAttrs()...)...)
	for _, w := range cfg.Warnings() {
		logger.Warn(w.Text, "setting", w.Setting)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.New()
	}
	// Every listener opens before the store, as Redis listens before it
	// loads: a port in use stops the start before anything is written to
	// --dir. A client that connects during the load waits in the kernel's
	// backlog until Serve accepts it, once the state is whole.
	ls, err := listen(cfg)
	if err != nil {
		return err
	}
	handedOver := false // to Serve, which closes the RESP listeners, and serveMetrics
	defer func() {
		if !handedOver {
			ls.close()
		}
	}()
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	// The ACL file must exist before anything is opened: a missing one
	// stopped the start only once the store had been opened, loaded and
	// saved again.
	if err := checkACLFile(cfg.ACLFile); err != nil {
		return err
	}
	// The rate limit service's listener and rules, before the store too:
	// a bad rules file stops the start with its file, line and reason.
	rlsSvc, err := openRLS(cfg, logger)
	if err != nil {
		return err
	}
	defer rlsSvc.close()
	if opts.listening != nil {
		opts.listening(ls.plain.Addr())
	}

	st, err := openState(ctx, cfg, clk, logger)
	if err != nil {
		return err
	}
	var saveOnExit atomic.Bool
	saveOnExit.Store(true)
	defer func() {
		if cerr := st.close(saveOnExit.Load(), logger); cerr != nil {
			err = errors.Join(err, fmt.Errorf("final save to %s: %w", cfg.Dir, cerr))
		}
	}()

	port := ls.plain.Addr().(*net.TCPAddr).Port
	repl, err := startReplication(cfg, st.store, port, logger)
	if err != nil {
		return err
	}
	defer repl.Close()

	var cl *cluster.State
	if cfg.ClusterMode() {
		if cl, err = startCluster(cfg, port, logger); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := server.New(server.Config{
		Clock:         st.clock,
		RequirePass:   cfg.RequirePass,
		ACLFile:       cfg.ACLFile,
		ProtectedMode: cfg.ProtectedMode,
		ClusterUser:   cfg.ClusterAuthUser,
		ClusterPass:   cfg.ClusterAuthPass,
		Shutdown: func(save bool) error {
			logger.Info("SHUTDOWN received", "save", save)
			saveOnExit.Store(save)
			cancel()
			return nil
		},
		Persistence:   st.persistence(),
		DurableWrites: st.flusher != nil && cfg.FlushInterval == 0,
		EventLoops:    eventLoops(cfg.EventLoops),
		Logger:        logger,
		LoadedKeys:    int64(st.loaded),
		LoadDuration:  st.loadTime,
		Bind:          cfg.Bind,
		Port:          port,
		Replication:   repl,
		Cluster:       cl,
		RewriteConfig: func() error { return rewriteRole(cfg, repl) },
		Dir:           cfg.Dir,
		FlushInterval: cfg.FlushInterval,
		Limits:        cfg.ServerLimits(logger),
	}, st.store)
	if err := loadUsers(cfg, srv, logger); err != nil {
		return err
	}
	if ls.metrics != nil {
		reg := registry(srv, st)
		if rlsSvc != nil {
			reg.MustRegister(rlsSvc.metrics.Collectors()...)
		}
		topOf := func(n int) []top.Entry { return st.store.Top(n, gcra.InstantOf(clk.Now())) }
		var rlsOf rlsFacts
		if rlsSvc != nil {
			rlsOf = rulesInForce(rlsSvc.svc)
		}
		stopMetrics := serveMetrics(ls.metrics, reg, topOf, rlsOf, logger)
		defer stopMetrics()
	}
	stopRLS := func() {}
	if rlsSvc != nil {
		stop, err := rlsSvc.serve(ctx, cfg, st, srv.Gate(), cl, port, logger)
		if err != nil {
			return err
		}
		stopRLS = sync.OnceFunc(stop)
		defer stopRLS()
		if opts.rlsReady != nil {
			opts.rlsReady(rlsSvc.ln.Addr())
		}
	}

	srv.FollowTopology()
	background := runBackground(ctx, cfg, st, logger)
	background.Go(func() { srv.WatchSentinels(ctx) })
	background.Go(func() { repl.WatchGoodReplicas(ctx) })
	served := make(chan error, 2)
	serving := 1
	handedOver = true
	go func() { served <- srv.Serve(ls.plain) }()
	readyAttrs := []any{"addr", ls.plain.Addr().String(), "shards", st.store.Shards()}
	if cfg.InMemory {
		// --dir and --flush-interval, set or not, are unused.
		readyAttrs = append(readyAttrs, "persistence", "off")
	} else {
		readyAttrs = append(readyAttrs, "dir", cfg.Dir, "flush_interval", cfg.FlushInterval)
	}
	if ls.tls != nil {
		serving++
		go func() { served <- srv.ServeTLS(ls.tls, ls.tlsCfg) }()
		readyAttrs = append(readyAttrs, "tls_addr", ls.tls.Addr().String())
	}
	logger.Info("ready to accept connections", readyAttrs...)
	if opts.Ready != nil {
		opts.Ready <- ls.plain.Addr()
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-served:
		serving--
		cancel()
	}
	stopRLS() // its calls under way end before the store's last changes
	_ = srv.Close()
	for ; serving > 0; serving-- {
		err = errors.Join(err, <-served)
	}
	// Connections are closed: nothing changes the store any more, and the
	// deferred close saves it.
	background.Wait()
	return err
}

// runBackground starts the goroutines that run beside the connections until
// ctx ends: expiry, the memory watch, tidying, and with persistence the
// flusher (on its interval, or group commits in durable mode) and the
// clean-up of stale keys. Wait on the result for them to end.
func runBackground(ctx context.Context, cfg config.Config, st *state, logger *slog.Logger) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		st.store.RunExpiry(ctx, storage.ExpiryOptions{Now: st.clock.Now, Logger: logger})
	})
	wg.Go(func() { st.store.RunMemoryWatch(ctx, storage.DefaultMemoryWatchInterval, logger) })
	wg.Go(func() { st.store.RunTidy(ctx, storage.DefaultTidyInterval, logger) })
	switch {
	case st.flusher == nil:
	case cfg.FlushInterval == 0:
		wg.Go(func() { st.flusher.RunGroupCommit(ctx) })
	default:
		wg.Go(func() { st.flusher.Run(ctx, cfg.FlushInterval) })
	}
	if st.flusher != nil {
		wg.Go(func() { st.flusher.CleanStaleAfter(ctx, storage.DefaultStaleGrace) })
	}
	return &wg
}

// eventLoops is server.Config.EventLoops for --event-loops n: 0 there means
// none, and the server's 0 means its own default.
func eventLoops(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// checkACLFile stops the start when --aclfile names a file that cannot be
// read, in Redis's words, and says how to make an empty one: Redis's start
// needs the file to exist too.
func checkACLFile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--aclfile: Error loading ACLs, opening file '%s': No such file or directory; create an empty one (touch %s) to start without users and keep those ACL SETUSER makes (ACL SAVE)", path, path)
		}
		return fmt.Errorf("--aclfile %s: %w", path, err)
	}
	return f.Close()
}

// loadUsers loads --aclfile's users, if any, and stops the start on an
// error in it, as Redis aborts its start; then protected mode looks at the
// default user they leave.
func loadUsers(cfg config.Config, srv *server.Server, logger *slog.Logger) error {
	if cfg.ACLFile == "" {
		return nil
	}
	if err := srv.LoadACLFile(); err != nil {
		return fmt.Errorf("--aclfile: %w", err)
	}
	users := srv.UserNames()
	logger.Info("ACL users loaded", "file", cfg.ACLFile, "users", len(users), "names", users)
	return cfg.CheckProtected(srv.DefaultUserOpen())
}
