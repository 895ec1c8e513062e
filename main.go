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
	"syscall"
	"time"

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
	PprofAddr   string
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
func run(ctx context.Context, cfg Config, logger *slog.Logger, ready chan<- net.Addr) error {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("data directory %s: %w", cfg.Dir, err)
	}
	store := storage.New(storage.Config{Shards: cfg.Shards})
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
			cancel()
			return nil
		},
		Bind: cfg.Bind,
		Port: ln.Addr().(*net.TCPAddr).Port,
		Dir:  cfg.Dir,
	}, store)

	go store.RunExpiry(ctx, storage.DefaultExpiryInterval, storage.DefaultExpiryBatch, time.Now)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("ready to accept connections", "addr", ln.Addr().String(), "shards", store.Shards(), "dir", cfg.Dir)
	if ready != nil {
		ready <- ln.Addr()
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		_ = srv.Close()
		return <-served
	case err := <-served:
		return err
	}
}
