package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"redcell/server"
)

// Security and limits: the flags that decide who may connect and what a
// client may cost, by Redis's names where Redis has the setting.

// addSecurityFlags registers the security and limit flags on fs.
func addSecurityFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RequirePassFile, "requirepass-file", "",
		"read the password clients must AUTH with from the first line of this `file`, "+
			"which keeps it out of the process's arguments (as REDCELL_REQUIREPASS does)")
	cfg.ProtectedMode = true
	fs.Var((*yesNo)(&cfg.ProtectedMode), "protected-mode",
		"refuse (`yes|no`) to listen on an address other than the loopback without a password, as Redis's protected mode")
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

// readPassword reads --requirepass-file into RequirePass.
func (c *Config) readPassword() error {
	if c.RequirePassFile == "" {
		return nil
	}
	if c.RequirePass != "" {
		return errors.New("--requirepass and --requirepass-file (or REDCELL_REQUIREPASS and REDCELL_REQUIREPASS_FILE) are both set: choose one")
	}
	b, err := os.ReadFile(c.RequirePassFile)
	if err != nil {
		return fmt.Errorf("--requirepass-file: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		return fmt.Errorf("--requirepass-file %s: the first line is empty", c.RequirePassFile)
	}
	c.RequirePass = string(line)
	return nil
}

// validateSecurity reports the first security or limit setting that cannot
// work, and refuses to listen beyond the loopback without a password while
// protected mode is on.
func (c Config) validateSecurity() error {
	switch {
	case c.MaxClients < 1:
		return fmt.Errorf("--maxclients %d: must be at least 1", c.MaxClients)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout %v: must not be negative", c.Timeout)
	case c.ProtoMaxBulkLen < 1:
		return fmt.Errorf("--proto-max-bulk-len %d: must be at least 1", c.ProtoMaxBulkLen)
	case c.MaxArgs < 1:
		return fmt.Errorf("--max-args %d: must be at least 1", c.MaxArgs)
	case c.MaxInlineLen < 1:
		return fmt.Errorf("--max-inline-len %d: must be at least 1", c.MaxInlineLen)
	case c.QueryBufferLimit < c.ProtoMaxBulkLen:
		q, b := size(c.QueryBufferLimit), size(c.ProtoMaxBulkLen)
		return fmt.Errorf("--query-buffer-limit %s: must not be less than --proto-max-bulk-len %s", q.String(), b.String())
	case c.OutputBufferLimit < 0:
		return fmt.Errorf("--output-buffer-limit %d: must not be negative", c.OutputBufferLimit)
	case c.TLSPort < 0 || c.TLSPort > 65535:
		return fmt.Errorf("--tls-port %d: must be between 0 and 65535", c.TLSPort)
	case c.TLSPort != 0 && c.TLSPort == c.Port:
		return fmt.Errorf("--tls-port %d: the plain --port uses it", c.TLSPort)
	case c.TLSPort != 0 && (c.TLSCertFile == "" || c.TLSKeyFile == ""):
		return errors.New("--tls-port needs --tls-cert-file and --tls-key-file")
	case c.TLSPort == 0 && (c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSCACertFile != ""):
		return errors.New("--tls-cert-file, --tls-key-file and --tls-ca-cert-file need --tls-port")
	case c.TLSAuthClients != "yes" && c.TLSAuthClients != "no" && c.TLSAuthClients != "optional":
		return fmt.Errorf("--tls-auth-clients %q: must be yes, optional or no", c.TLSAuthClients)
	case c.TLSAuthClients == "optional" && c.TLSCACertFile == "":
		return errors.New("--tls-auth-clients optional needs --tls-ca-cert-file to check certificates against")
	}
	if c.ProtectedMode && c.RequirePass == "" && !loopback(c.Bind) {
		return fmt.Errorf("--bind %s: protected mode refuses to listen on an address other than the loopback "+
			"without a password. Set one with --requirepass-file <file> or REDCELL_REQUIREPASS; or, "+
			"only where the network is trusted, start with --protected-mode no", c.Bind)
	}
	return nil
}

// loopback reports whether bind reaches this host only. An address that is
// not an IP is taken as not loopback, except "localhost".
func loopback(bind string) bool {
	if strings.EqualFold(bind, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(bind, "[]"))
	return ip != nil && ip.IsLoopback()
}

// serverLimits are the server's limits from the flags, with maxclients
// lowered to fit the open-files limit as Redis lowers it.
func (c Config) serverLimits(logger *slog.Logger) server.Limits {
	output := c.OutputBufferLimit
	if output == 0 {
		output = -1 // no limit
	}
	total := c.MaxMemoryClients
	if total == 0 {
		total = -1 // no limit
	}
	return server.Limits{
		MaxBulkLen:     c.ProtoMaxBulkLen,
		MaxArgs:        c.MaxArgs,
		MaxInlineLen:   c.MaxInlineLen,
		MaxQueryLen:    c.QueryBufferLimit,
		MaxOutput:      output,
		MaxClients:     fitMaxClients(c.MaxClients, logger),
		IdleTimeout:    c.Timeout,
		MaxKeyLen:      int(c.MaxKeyLen),
		MaxOutputTotal: total,
	}
}

// reservedFiles are file descriptors kept for everything but clients: the
// listeners, Pebble's files, the log, as Redis's CONFIG_MIN_RESERVED_FDS.
const reservedFiles = 32

// fitMaxClients lowers n to what the open-files limit allows (Go raises the
// soft limit to the hard one at start), with a warning, as Redis does.
func fitMaxClients(n int, logger *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= uint64(n+reservedFiles) {
		return n
	}
	fit := max(int(lim.Cur)-reservedFiles, 1)
	logger.Warn("maxclients lowered to fit the open-files limit; raise it with ulimit -n",
		"requested", n, "maxclients", fit, "open_files_limit", lim.Cur)
	return fit
}

// tlsFiles are the TLS flags as the server takes them.
func (c Config) tlsFiles() server.TLSFiles {
	return server.TLSFiles{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, CAFile: c.TLSCACertFile, AuthClients: c.TLSAuthClients}
}

// yesNo is a bool flag spelled yes or no, as Redis's settings are.
type yesNo bool

func (v *yesNo) String() string {
	if v != nil && *v {
		return "yes"
	}
	return "no"
}

func (v *yesNo) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes":
		*v = true
	case "no":
		*v = false
	default:
		return errors.New("must be yes or no")
	}
	return nil
}

// size is a byte count written as Redis writes memory settings: 1024, 1k
// (1000), 1kb (1024), 1m, 1mb, 1g, 1gb, in either case.
type size int64

var sizeUnits = []struct {
	suffix string
	mul    int64
}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}}

func (v *size) String() string {
	if v == nil {
		return "0"
	}
	n := int64(*v)
	for _, u := range sizeUnits[:3] {
		if n != 0 && n%u.mul == 0 {
			return strconv.FormatInt(n/u.mul, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (v *size) Set(s string) error {
	text, mul := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(text, u.suffix) {
			text, mul = strings.TrimSuffix(text, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return errors.New("must be a number of bytes, optionally with a unit: 64kb, 1mb, 1gb")
	}
	*v = size(n * mul)
	return nil
}

// seconds is a duration written as Redis's timeout, in whole seconds, or
// as a Go duration.
type seconds time.Duration

func (v *seconds) String() string {
	if v == nil || *v == 0 {
		return "0"
	}
	d := time.Duration(*v)
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return d.String()
}

func (v *seconds) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && n <= int64(time.Duration(1<<62)/time.Second) {
		*v = seconds(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return errors.New("must be whole seconds or a duration such as 90s or 5m")
	}
	*v = seconds(d)
	return nil
}

// listenTLS opens the TLS listener --tls-port asks for, if any, with its
// certificates loaded.
func listenTLS(cfg Config) (net.Listener, *tls.Config, error) {
	if cfg.TLSPort == 0 {
		return nil, nil, nil
	}
	tlsCfg, err := server.LoadTLSConfig(cfg.tlsFiles())
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
