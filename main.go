// Command redcell is a Redis-protocol rate-limiting server: a drop-in
// replacement for the redis-cell module's CL.THROTTLE.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --pprof-addr
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"redcell/gcra"
	"redcell/server"
	"redcell/storage"
)

// Config is everything the command line sets.
type Config struct {
	Bind        string
	Port        int
	Dir         string
	RequirePass string
	Shards      int
	// FlushInterval is how often changes are written to disk; 0 writes
	// (and syncs) before every reply.
	FlushInterval time.Duration
	// InMemory keeps state in memory only, lost on restart: no --dir.
	InMemory  bool
	PprofAddr string
}

// Defaults, as documented in the README and --help.
const (
	DefaultBind = "127.0.0.1"
	DefaultPort = 6379
	DefaultDir  = "./data"
)

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--port %d: must be between 0 and 65535", c.Port)
	}
	if c.Dir == "" {
		return errors.New("--dir must not be empty")
	}
	if c.FlushInterval < 0 {
		return fmt.Errorf("--flush-interval %v: must not be negative", c.FlushInterval)
	}
	if err := (storage.Config{Shards: c.Shards}).Validate(); err != nil {
		return fmt.Errorf("--shards %d: %w", c.Shards, err)
	}
	return nil
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("redcell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Bind, "bind", DefaultBind, "address to listen on")
	fs.IntVar(&cfg.Port, "port", DefaultPort, "TCP port to listen on (0 picks a free one)")
	fs.StringVar(&cfg.Dir, "dir", DefaultDir, "directory for persisted state (created if missing)")
	fs.StringVar(&cfg.Dir, "data-dir", DefaultDir, "same as --dir")
	fs.BoolVar(&cfg.InMemory, "in-memory", false, "keep state in memory only, lost on restart (no --dir)")
	fs.DurationVar(&cfg.FlushInterval, "flush-interval", storage.DefaultFlushInterval,
		"how often changed keys are written and synced to disk; 0 syncs before every reply (durable mode)")
	fs.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with (empty: none)")
	fs.IntVar(&cfg.Shards, "shards", 0, "lock stripes of the keyspace, rounded up to a power of two (0: 16 per CPU)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve net/http/pprof on this address, e.g. 127.0.0.1:6060 (empty: off)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, cfg, logger, nil); err != nil {
		logger.Error("redcell stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx is done or a client sends SHUTDOWN. ready, if not nil,
// receives the listening address once connections are accepted.
// state is the keyspace and, unless persistence is off, its Pebble store.
type state struct {
	store    *storage.Store
	backend  *storage.PebbleBackend // nil when persistence is off
	flusher  *storage.Flusher       // nil when persistence is off
	loaded   int
	loadTime time.Duration
}

// openState opens the store under cfg.Dir and loads every live key from it.
func openState(cfg Config, logger *slog.Logger) (*state, error) {
	if cfg.InMemory {
		logger.Warn("persistence is off: state is lost on restart")
		return &state{store: storage.New(storage.Config{Shards: cfg.Shards})}, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.Dir, err)
	}
	backend, err := storage.OpenPebble(cfg.Dir, logger)
	if err != nil {
		return nil, err
	}
	st := &state{store: storage.New(storage.Config{Shards: cfg.Shards, TrackChanges: true}), backend: backend}
	start := time.Now()
	loaded, dropped, err := storage.LoadInto(st.store, backend, gcra.InstantOf(start))
	if err != nil {
		backend.Close()
		return nil, fmt.Errorf("load store %s: %w", cfg.Dir, err)
	}
	st.loaded, st.loadTime = loaded, time.Since(start)
	logger.Info("loaded state", "dir", cfg.Dir, "keys", loaded, "expired_dropped", dropped, "duration", st.loadTime)
	st.flusher = storage.NewFlusher(st.store, backend, time.Now)
	return st, nil
}

func (st *state) persistence() server.Persistence {
	if st.flusher == nil {
		return nil // not a typed nil: the server checks for nil
	}
	return st.flusher
}

// save writes every change on the way out, then closes the store.
func (st *state) close(save bool, logger *slog.Logger) error {
	if st.backend == nil {
		return nil
	}
	var err error
	if save {
		start := time.Now()
		if err = st.flusher.Flush(true); err == nil {
			logger.Info("saved state", "keys", st.flusher.Stats().LastCount, "duration", time.Since(start))
		}
	} else {
		logger.Info("exiting without the final save (SHUTDOWN NOSAVE)")
	}
	return errors.Join(err, st.backend.Close())
}

func run(ctx context.Context, cfg Config, logger *slog.Logger, ready chan<- net.Addr) (err error) {
	st, err := openState(cfg, logger)
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

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := server.New(server.Config{
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
	}, store)

	var background sync.WaitGroup
	background.Go(func() {
		store.RunExpiry(ctx, storage.DefaultExpiryInterval, storage.DefaultExpiryBatch, time.Now)
	})
	logFlushError := func(err error) {
		logger.Error("flush failed; changes kept for the next one", "dir", cfg.Dir, "err", err)
	}
	switch {
	case st.flusher == nil:
	case cfg.FlushInterval == 0:
		background.Go(func() { st.flusher.RunGroupCommit(ctx) })
	default:
		background.Go(func() { st.flusher.Run(ctx, cfg.FlushInterval, logFlushError) })
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("ready to accept connections", "addr", ln.Addr().String(), "shards", store.Shards(),
		"dir", cfg.Dir, "flush_interval", cfg.FlushInterval)
	if ready != nil {
		ready <- ln.Addr()
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		_ = srv.Close()
		err = <-served
	case err = <-served:
		cancel()
	}
	// Connections are closed: nothing changes the store any more, and the
	// deferred close saves it.
	background.Wait()
	return err
}
