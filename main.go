// Command redcell is a Redis-protocol rate-limiting server: a drop-in
// replacement for the redis-cell module's CL.THROTTLE.
//
// main reads the configuration (package config), handles the signals and
// the exit status, and runs the server (package daemon); `redcell cluster
// ...` is an operator's command instead (package clusteradmin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/clusteradmin"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/daemon"
)

// commit is the VCS revision, set at build time with
// -ldflags "-X main.commit=<sha>" (the Dockerfile does); empty, the version
// line reads the one Go records (config.BuildCommit).
var commit string

// newClock is the process's clock; tests replace it to step the wall clock.
var newClock = clock.New

func main() {
	if commit != "" {
		config.Commit = commit
	}
	if len(os.Args) > 1 && os.Args[1] == "cluster" {
		os.Exit(clusteradmin.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// Run as `ratelimit`, it reads envoyproxy/ratelimit's environment.
	cfg, err := config.ParseEnviron(os.Args[1:], config.ProgramEnviron(os.Args[0], os.Environ()), os.Stderr)
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
		// No log here: the warnings the server logs at its start go to
		// stderr, for the health check that fails on a misspelled port.
		for _, w := range cfg.Warnings() {
			fmt.Fprintln(os.Stderr, "redcell: warning:", w.Text)
		}
		if err := daemon.HealthCheck(cfg, 3*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "redcell: health check:", err)
			os.Exit(1)
		}
		return
	}
	// As Redis: SIGHUP does not stop the server, and a write to a closed
	// pipe (a log shipper restarting) fails with EPIPE instead of killing
	// it with SIGPIPE before the final save.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	daemon.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := newLogger(cfg, os.Stderr)
	if err := daemon.Run(ctx, cfg, logger, daemon.Options{Clock: newClock()}); err != nil {
		logger.Error("redcell stopped", "err", err)
		os.Exit(1)
	}
}

// newLogger builds the process's logger from --log-format and --log-level.
// A duration reads as the flags write one, 1s, in JSON too, where slog
// would write nanoseconds (1000000000).
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel, ReplaceAttr: durationAsText}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationAsText is a slog ReplaceAttr that writes a time.Duration as its
// String (1.5s, 1h0m0s), as the text handler already does.
func durationAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
