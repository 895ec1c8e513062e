package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
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
	// FlushInterval is how often changes are written to disk; 0 writes
	// (and syncs) before every reply.
	FlushInterval time.Duration
	// InMemory keeps state in memory only, lost on restart: no --dir.
	InMemory bool
	// MaxMemory (bytes, 0: none) and MaxMemoryPolicy are Redis's maxmemory
	// and maxmemory-policy (noeviction or volatile-ttl).
	MaxMemory       int64
	MaxMemoryPolicy string
	// MaxKeyLen bounds a created key's name; MaxMemoryClients the replies
	// waiting for all clients together (Redis's maxmemory-clients).
	MaxKeyLen        int64
	MaxMemoryClients int64
	// DiskReserve is the disk space the store holds back for Pebble to
	// finish its writes when the disk fills (storage.DefaultReserve); 0
	// holds none.
	DiskReserve int64
	PprofAddr   string
	// MetricsAddr, when set, serves Prometheus metrics at /metrics there.
	MetricsAddr string
	// LogFormat is "text" (the default) or "json"; LogLevel is the least
	// severe level logged (the default is info).
	LogFormat string
	LogLevel  slog.Level

	// Security and limits (security.go): who may connect, what one client
	// may cost.
	RequirePassFile   string
	ProtectedMode     bool
	MaxClients        int
	Timeout           time.Duration
	ProtoMaxBulkLen   int64
	MaxArgs           int64
	MaxInlineLen      int64
	QueryBufferLimit  int64
	OutputBufferLimit int64
	TLSPort           int
	TLSCertFile       string
	TLSKeyFile        string
	TLSCACertFile     string
	TLSAuthClients    string

	// Actions instead of serving: print the version; ping the server this
	// configuration describes and exit 0 if it answers (cli.go).
	Version     bool
	HealthCheck bool
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
	if _, err := storage.ParseEvictionPolicy(c.MaxMemoryPolicy); err != nil {
		return fmt.Errorf("--maxmemory-policy: %w", err)
	}
	if c.MaxKeyLen < 1 || c.MaxKeyLen > 1<<30 {
		return fmt.Errorf("--max-key-len %d: must be between 1 and 1gb", c.MaxKeyLen)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: must be text or json", c.LogFormat)
	}
	return c.validateSecurity()
}

// parseFlags reads the configuration from args over the environment
// (REDCELL_<FLAG>, cli.go) over the defaults.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	return parseFlagsEnv(args, os.LookupEnv, stderr)
}

// parseFlagsEnv is parseFlags with the environment read through lookup.
func parseFlagsEnv(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("redcell", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and main prints them once
	fs.StringVar(&cfg.Bind, "bind", DefaultBind, "address to listen on")
	fs.IntVar(&cfg.Port, "port", DefaultPort, "TCP port to listen on (0 picks a free one)")
	fs.StringVar(&cfg.Dir, "dir", DefaultDir, "directory for persisted state (created if missing)")
	fs.StringVar(&cfg.Dir, "data-dir", DefaultDir, "same as --dir")
	fs.BoolVar(&cfg.InMemory, "in-memory", false, "keep state in memory only, lost on restart (no --dir)")
	fs.DurationVar(&cfg.FlushInterval, "flush-interval", storage.DefaultFlushInterval,
		"how often changed keys are written and synced to disk; 0 syncs before every reply (durable mode)")
	fs.Var((*size)(&cfg.MaxMemory), "maxmemory",
		"memory limit in `bytes` or with a unit (1gb), as Redis's maxmemory: past it a command that would create a key "+
			"answers OOM (noeviction) or evicts the key nearest its expiry (volatile-ttl); 0: none")
	fs.StringVar(&cfg.MaxMemoryPolicy, "maxmemory-policy", "noeviction", "what `policy` applies past --maxmemory: noeviction (refuse new keys) or volatile-ttl (evict the key nearest its expiry)")
	cfg.MaxKeyLen, cfg.MaxMemoryClients = server.DefaultMaxKeyLen, server.DefaultMaxOutputTotal
	fs.Var((*size)(&cfg.MaxKeyLen), "max-key-len",
		"longest key name, in `bytes`, a command may create; longer is refused with ERR key too long (Redis: 512mb)")
	fs.Var((*size)(&cfg.MaxMemoryClients), "maxmemory-clients",
		"most reply `bytes` waiting for all clients together (each one's first 64 KiB aside), as Redis's maxmemory-clients: "+
			"the client whose replies would pass it is disconnected; 0: no limit")
	cfg.DiskReserve = storage.DefaultReserve
	fs.Var((*size)(&cfg.DiskReserve), "disk-reserve",
		"disk space, in `bytes` or with a unit (16mb), kept in --dir/redcell.reserve and released to the store when the disk fills, "+
			"so that the writes under way complete; the start needs it and as much again free (0: none)")
	fs.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with (empty: none)")
	fs.IntVar(&cfg.Shards, "shards", 0, "lock stripes of the keyspace, rounded up to a power of two (0: 16 per CPU)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "", "serve net/http/pprof on this address, e.g. 127.0.0.1:6060 (empty: off)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`address`/metrics, e.g. 127.0.0.1:9379 (empty: off)")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log to stderr in this `format`: text (logfmt) or json")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "least severe `level` logged: debug, info, warn or error (debug adds every client error)")
	addSecurityFlags(fs, &cfg)
	fs.BoolVar(&cfg.Version, "version", false, "print the version, commit and Go version, and exit")
	fs.BoolVar(&cfg.HealthCheck, "healthcheck", false, "send PING to the server these settings describe; exit 0 if it answers PONG (for Docker's HEALTHCHECK)")
	fs.Usage = func() {} // --help prints the manual below; an error says to try it
	if err := applyEnv(fs, lookup); err != nil {
		return cfg, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, stderr)
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.readPassword(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}
