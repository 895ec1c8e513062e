package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/redcell/redcell/internal/cliflag"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

// Parse reads the configuration from args (the command line without the
// program's name) over the environment, read through lookup (os.LookupEnv
// in main), over the defaults, and validates it. --help prints the manual
// to stderr and returns flag.ErrHelp; an error is returned, never printed,
// and names a flag as the manual does (--dir) or the variable that set it.
func Parse(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	cfg, fs, given, err := parseSettings(args, lookup, stderr, false)
	if err == nil && cfg.RLSEnv {
		// Once more, with envoyproxy/ratelimit's environment under
		// redcell's own (applyReferenceEnv).
		cfg, fs, given, err = parseSettings(args, lookup, stderr, true)
	}
	if err != nil {
		return cfg, err
	}
	if err := cfg.readPassword(); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	_, inMemorySet := lookup(envName("in-memory"))
	if cfg.InMemory && (!cfg.RLSEnv || inMemorySet || slices.Contains(given, "in-memory")) {
		// Under --rls-env, memory is the default, and a --dir the image
		// sets is no mistake.
		cfg.warnings = append(cfg.warnings, unusedInMemory(fs, given, lookup)...)
	}
	return cfg, nil
}

// parseSettings reads the defaults, then the REDCELL_ variables (with
// referenceEnv, between envoyproxy/ratelimit's defaults and its variables
// set: referenceEnv.apply), then args, and returns the flags given on the
// command line.
func parseSettings(args []string, lookup func(string) (string, bool), stderr io.Writer, referenceEnv bool) (Config, *flag.FlagSet, []string, error) {
	var cfg Config
	fs := flagSet(&cfg)
	var warnings []Warning
	if referenceEnv {
		ref, err := readReferenceEnv(lookup)
		if err == nil {
			err = ref.apply(fs, false)
		}
		if err == nil {
			err = applyEnv(fs, lookup)
		}
		if err == nil {
			err = ref.apply(fs, true)
		}
		if err != nil {
			return cfg, fs, nil, err
		}
		warnings = ref.warnings
	} else if err := applyEnv(fs, lookup); err != nil {
		return cfg, fs, nil, err
	}
	given, rest, err := cliflag.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, stderr)
		}
		return cfg, fs, nil, err
	}
	if len(rest) > 0 {
		return cfg, fs, nil, fmt.Errorf("unexpected argument %q", rest[0])
	}
	cfg.warnings = warnings
	return cfg, fs, given, nil
}

// flagSet registers every flag on a new flag set, each writing to its field
// of cfg, which it sets to the flag's default.
func flagSet(cfg *Config) *flag.FlagSet {
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
	fs.Int64Var(&cfg.WindowLogMax, "window-log-max", window.DefaultLogMax,
		"most `entries` one CL.WINDOW exact log (PRECISION 0) may hold: a larger limit needs PRECISION m")
	fs.IntVar(&cfg.EventLoops, "event-loops", server.DefaultEventLoops(),
		"event `loops` serving plain TCP and Unix connections, as Redis's event loop (default: one per two CPUs); "+
			"0: a goroutine per connection. TLS connections and durable mode (--flush-interval 0) always have a goroutine each")
	cfg.DiskReserve = storage.DefaultReserve
	fs.Var((*size)(&cfg.DiskReserve), "disk-reserve",
		"disk space, in `bytes` or with a unit (16mb), kept in --dir/redcell.reserve and released to the store when the disk fills, "+
			"so that the writes under way complete; the start needs it and as much again free (0: none)")
	fs.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with (empty: none)")
	fs.IntVar(&cfg.Shards, "shards", 0, "lock stripes of the keyspace, rounded up to a power of two (0: 16 per CPU)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "",
		"serve net/http/pprof on this address, e.g. 127.0.0.1:6060 (empty: off), to anyone who reaches it: keep it on the loopback. "+
			"Its /debug/pprof/cmdline shows the command line with passwords redacted")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`address`/metrics, e.g. 127.0.0.1:9379 (empty: off)")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log to stderr in this `format`: text (logfmt) or json")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "least severe `level` logged: debug, info, warn or error (debug adds every client error)")
	addSecurityFlags(fs, cfg)
	addReplicationFlags(fs, cfg)
	addRLSFlags(fs, cfg)
	fs.StringVar(&cfg.ClusterEnabled, "cluster-enabled", "no",
		"`yes|no|emulated`: serve as a Redis Cluster node, with the topology pushed by CLUSTERX SETNODES (yes: no slot is served before "+
			"the first push; emulated: until then this node alone serves every slot)")
	fs.StringVar(&cfg.ClusterAuthUser, "cluster-auth-user", "",
		"the ACL `user` a cluster node authenticates to its peers as, to move a slot's keys, push a topology or run a planned "+
			"failover (as Sentinel's auth-user); it needs +clusterx +client|pause +client|unpause +role +info (empty: the default user)")
	fs.StringVar(&cfg.ClusterAuthPass, "cluster-auth-pass", "",
		"the `password` of --cluster-auth-user (empty: --requirepass)")
	fs.StringVar(&cfg.ClusterAnnounceIP, "cluster-announce-ip", "",
		"the `address` an emulated cluster node reports in CLUSTER SLOTS and NODES (default: --bind, or 127.0.0.1 for a wildcard bind)")
	fs.BoolVar(&cfg.Version, "version", false, "print the version, commit and Go version, and exit")
	fs.BoolVar(&cfg.HealthCheck, "healthcheck", false, "send PING to the server these settings describe; exit 0 if it answers PONG (for Docker's HEALTHCHECK)")
	return fs
}

// addSecurityFlags registers the flags that decide who may connect and what
// a client may cost, by Redis's names where Redis has the setting.
func addSecurityFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RequirePassFile, "requirepass-file", "",
		"read the password clients must AUTH with from the first line of this `file`, "+
			"which keeps it out of the process's arguments (as REDCELL_REQUIREPASS does)")
	fs.StringVar(&cfg.ACLFile, "aclfile", "",
		"load ACL users from this `file` at the start, in Redis's ACL file format (\"user <name> <rules>\" lines); ACL LOAD reloads it "+
			"and ACL SAVE writes the users in force to it. It must exist (an empty file is fine). Its default user, if it has one, "+
			"wins over --requirepass")
	cfg.ProtectedMode = true
	fs.Var((*yesNo)(&cfg.ProtectedMode), "protected-mode",
		"refuse (`yes|no`), as Redis's protected mode, connections from other hosts while the default user has no password, "+
			"and to start on an address other than the loopback without one (with --aclfile: while its default user takes any password)")
	fs.IntVar(&cfg.MaxClients, "maxclients", server.DefaultMaxClients,
		"most open client `connections`; one more is answered ERR max number of clients reached (lowered to fit the open-files limit)")
	fs.Var((*seconds)(&cfg.Timeout), "timeout",
		"close a client that has sent nothing and read nothing for this many `seconds` (or a duration: 90s, 5m); 0: never")
	cfg.ProtoMaxBulkLen, cfg.MaxArgs, cfg.MaxInlineLen = server.DefaultMaxBulkLen, server.DefaultMaxArgs, server.DefaultMaxInlineLen
	cfg.QueryBufferLimit, cfg.OutputBufferLimit = server.DefaultMaxQueryLen, server.DefaultMaxOutput
	fs.Var((*size)(&cfg.ProtoMaxBulkLen), "proto-max-bulk-len",
		"longest argument, in `bytes` or with a unit as Redis's (kb, mb; k = 1000); longer is refused "+
			"with ERR Protocol error: invalid bulk length and the connection closed (Redis: 512mb)")
	fs.Int64Var(&cfg.MaxArgs, "max-args", server.DefaultMaxArgs,
		"most `arguments` in one command; more is refused with ERR Protocol error: invalid multibulk length")
	fs.Var((*size)(&cfg.MaxInlineLen), "max-inline-len",
		"longest inline (telnet-style) command line, in `bytes`; longer is refused with ERR Protocol error: too big inline request")
	fs.Var((*size)(&cfg.QueryBufferLimit), "query-buffer-limit",
		"most `bytes` one command may announce; a client announcing more is disconnected, as past Redis's client-query-buffer-limit (Redis: 1gb)")
	fs.Var((*size)(&cfg.OutputBufferLimit), "output-buffer-limit",
		"most reply `bytes` waiting for one client; past it the client is disconnected, as past Redis's client-output-buffer-limit; 0: no limit (Redis's default for normal clients)")
	fs.IntVar(&cfg.TLSPort, "tls-port", 0, "also accept TLS connections on this `port`, at --bind (0: no TLS)")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "the server's TLS certificate chain, a PEM `file`")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key-file", "", "the TLS certificate's private key, a PEM `file`")
	fs.StringVar(&cfg.TLSCACertFile, "tls-ca-cert-file", "",
		"CA certificates, a PEM `file`, that client certificates must chain to; given, TLS clients must present one (see --tls-auth-clients)")
	fs.StringVar(&cfg.TLSAuthClients, "tls-auth-clients", "yes",
		"whether TLS clients must present a certificate that --tls-ca-cert-file vouches for: `yes|optional|no` (optional: checked when presented)")
}

// EnvPrefix begins the environment variable of every flag: each can also be
// set as REDCELL_<FLAG>, upper case with dashes as underscores
// (--flush-interval is REDCELL_FLUSH_INTERVAL). A flag on the command line
// wins over the environment, which wins over the default. Of two aliases
// (--dir, --data-dir) set in the environment, the one later in alphabetical
// order wins: REDCELL_DIR.
const EnvPrefix = "REDCELL_"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// actionFlags are not settings, so the environment does not set them: a
// REDCELL_VERSION=1 left in a container must not stop the server starting.
var actionFlags = map[string]bool{"version": true, "healthcheck": true}

// applyEnv sets every flag of fs whose variable lookup finds. Call it
// before fs.Parse, so that the command line wins.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || actionFlags[f.Name] {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if serr := cliflag.Set(fs, f.Name, v); serr != nil {
			shown := strconv.Quote(v)
			if f.Name == "requirepass" {
				shown = "(hidden)"
			}
			err = fmt.Errorf("invalid value %s for %s: %w", shown, name, serr)
		}
	})
	return err
}
