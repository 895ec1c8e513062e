package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"redcell/server"
)

// The environment: every flag can also be set as REDCELL_<FLAG>, upper case
// with dashes as underscores (--flush-interval is REDCELL_FLUSH_INTERVAL).
// A flag on the command line wins over the environment, which wins over the
// default. Of two aliases (--dir, --data-dir) set in the environment, the
// one later in alphabetical order wins: REDCELL_DIR.
const envPrefix = "REDCELL_"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
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
		if serr := fs.Set(f.Name, v); serr != nil {
			shown := strconv.Quote(v)
			if f.Name == "requirepass" {
				shown = "(hidden)"
			}
			err = fmt.Errorf("%s=%s: %w", name, shown, serr)
		}
	})
	return err
}

// commit is the VCS revision, set at build time with
// -ldflags "-X main.commit=<sha>" (the Dockerfile does) or read from the
// build information Go records when building inside a git checkout.
var commit string

// buildCommit returns the commit the binary was built from, or "unknown"
// (go build -buildvcs=false, or a source tree without .git).
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// versionLine is what --version prints.
func versionLine() string {
	return fmt.Sprintf("redcell %s (commit %s, %s, %s/%s; Redis protocol of Redis %s)",
		server.Version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, server.RedisVersion)
}

// usage prints --help: a man page's summary, with every flag, its
// environment variable and its default.
func usage(fs *flag.FlagSet, w io.Writer) {
	b := bufio.NewWriter(w)
	defer b.Flush()
	fmt.Fprint(b, `NAME
    redcell - a Redis-protocol rate-limiting server, a drop-in for redis-cell

SYNOPSIS
    redcell [--bind addr] [--port n] [--dir path | --in-memory] [option ...]
    redcell --healthcheck [option ...]
    redcell --version | --help

DESCRIPTION
    redcell answers CL.THROTTLE key max_burst count period [quantity] with
    redis-cell's five integers (limited, limit, remaining, retry_after,
    reset_after), decided by GCRA, for any Redis client. State is kept in
    memory and flushed to a Pebble store under --dir every --flush-interval,
    on SAVE/BGSAVE, and on SIGTERM, SIGINT or SHUTDOWN; a restart loads it.

    Every option can also be set in the environment as REDCELL_<OPTION>,
    upper case with dashes as underscores: REDCELL_FLUSH_INTERVAL=5s. A flag
    on the command line wins over the environment, which wins over the
    default.

OPTIONS
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		head := "--" + f.Name
		if name != "" {
			head += " " + name
		}
		var notes []string
		if !actionFlags[f.Name] {
			notes = append(notes, envName(f.Name))
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			notes = append(notes, "default "+f.DefValue)
		}
		if len(notes) > 0 {
			head += "  (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(b, "    %s\n", head)
		for _, line := range wrap(text, 68) {
			fmt.Fprintf(b, "        %s\n", line)
		}
	})
	fmt.Fprint(b, `
SIGNALS
    SIGTERM, SIGINT  write every change to disk, then exit 0.

EXIT STATUS
    0 after a clean stop, 1 if serving failed (the log says why), 2 for a
    bad option. --healthcheck exits 0 when the server answers PONG, else 1.

EXAMPLES
    redcell --dir /var/lib/redcell --metrics-addr 127.0.0.1:9379
    REDCELL_REQUIREPASS=secret redcell --bind 0.0.0.0 --log-format json
    redis-cli CL.THROTTLE user123 15 30 60

SEE ALSO
    README.md (configuration, Docker, clients, HTTP header mapping),
    https://github.com/brandur/redis-cell
`)
}

// wrap splits text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// healthCheck sends PING (after AUTH when a password is set) to the server
// cfg describes and returns nil if it answers PONG within timeout. A server
// bound to every address is reached on the loopback.
func healthCheck(cfg Config, timeout time.Duration) error {
	host := cfg.Bind
	switch host {
	case "", "0.0.0.0", "*":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	rd := bufio.NewReader(conn)
	send := func(args ...string) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(conn, b.String()); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		return strings.TrimRight(line, "\r\n"), err
	}
	if cfg.RequirePass != "" {
		reply, err := send("AUTH", cfg.RequirePass)
		if err != nil {
			return err
		}
		if reply != "+OK" {
			return fmt.Errorf("%s: AUTH answered %q", addr, reply)
		}
	}
	reply, err := send("PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("%s: PING answered %q", addr, reply)
	}
	return nil
}

// newLogger builds the process's logger from --log-format and --log-level.
func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
