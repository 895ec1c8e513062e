package config

import (
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/server"
)

// env is a fake environment for Parse.
type env map[string]string

func (e env) lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

func parseWith(t *testing.T, e env, args ...string) Config {
	t.Helper()
	cfg, err := Parse(args, e.lookup, io.Discard)
	require.NoError(t, err)
	return cfg
}

// The defaults, as docs/configuration.md's table states them.
func TestDefaults(t *testing.T) {
	cfg := parseWith(t, env{})
	require.Equal(t, Config{
		Bind:          "127.0.0.1",
		Port:          6379,
		Dir:           "./data",
		FlushInterval: time.Second,
		LogFormat:     "text",
		LogLevel:      slog.LevelInfo,
	}, stripUnset(cfg))
}

// stripUnset keeps the fields TestDefaults knows, so that a flag added
// later with a zero default does not break it.
func stripUnset(c Config) Config {
	return Config{Bind: c.Bind, Port: c.Port, Dir: c.Dir, FlushInterval: c.FlushInterval, LogFormat: c.LogFormat,
		LogLevel: c.LogLevel, RequirePass: c.RequirePass, Shards: c.Shards, InMemory: c.InMemory, PprofAddr: c.PprofAddr,
		MetricsAddr: c.MetricsAddr}
}

// Every setting comes from REDCELL_<FLAG> when the command line does not
// give it; the command line wins over the environment.
func TestEnvironmentOverridesDefaultsAndFlagsOverrideEnvironment(t *testing.T) {
	e := env{
		"REDCELL_BIND":           "0.0.0.0",
		"REDCELL_PORT":           "7000",
		"REDCELL_DIR":            "/var/lib/redcell",
		"REDCELL_FLUSH_INTERVAL": "250ms",
		"REDCELL_REQUIREPASS":    "s3cret",
		"REDCELL_SHARDS":         "64",
		"REDCELL_PPROF_ADDR":     "127.0.0.1:6060",
		"REDCELL_METRICS_ADDR":   "127.0.0.1:9379",
		"REDCELL_LOG_FORMAT":     "json",
		"REDCELL_LOG_LEVEL":      "debug",
		"REDCELL_IN_MEMORY":      "true",
		"REDCELL_UNRELATED":      "ignored",
	}
	require.Equal(t, Config{
		Bind: "0.0.0.0", Port: 7000, Dir: "/var/lib/redcell", FlushInterval: 250 * time.Millisecond,
		RequirePass: "s3cret", Shards: 64, PprofAddr: "127.0.0.1:6060", MetricsAddr: "127.0.0.1:9379",
		LogFormat: "json", LogLevel: slog.LevelDebug, InMemory: true,
	}, stripUnset(parseWith(t, e)))

	got := parseWith(t, e, "--port", "7001", "--flush-interval=0", "--log-format", "text", "--in-memory=false", "--dir", "./here")
	require.Equal(t, Config{
		Bind: "0.0.0.0", Port: 7001, Dir: "./here", FlushInterval: 0,
		RequirePass: "s3cret", Shards: 64, PprofAddr: "127.0.0.1:6060", MetricsAddr: "127.0.0.1:9379",
		LogFormat: "text", LogLevel: slog.LevelDebug, InMemory: false,
	}, stripUnset(got), "flags win over the environment, the rest still comes from it")
}

// Every flag has its variable: the mechanism is generic over the flag set,
// so a flag added later is covered without a change here.
func TestEveryFlagHasAnEnvironmentVariable(t *testing.T) {
	var help strings.Builder
	_, err := Parse([]string{"--help"}, env{}.lookup, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	flags := regexp.MustCompile(`(?m)^    --([a-z0-9-]+)`).FindAllStringSubmatch(help.String(), -1)
	require.GreaterOrEqual(t, len(flags), 14, "--help lists every flag:\n%s", help.String())
	for _, m := range flags {
		name := m[1]
		if actionFlags[name] {
			require.NotContains(t, help.String(), envName(name), "an action is not a setting")
			continue
		}
		require.Contains(t, help.String(), "(REDCELL_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_")), "--%s's variable is shown", name)
	}
	require.Equal(t, "REDCELL_FLUSH_INTERVAL", envName("flush-interval"))
	require.Equal(t, "REDCELL_DATA_DIR", envName("data-dir"))
}

func TestEnvironmentErrorsNameTheVariable(t *testing.T) {
	for _, c := range []struct {
		env  env
		want string
	}{
		{env{"REDCELL_PORT": "abc"}, `invalid value "abc" for REDCELL_PORT: must be a whole number`},
		{env{"REDCELL_FLUSH_INTERVAL": "soon"}, `invalid value "soon" for REDCELL_FLUSH_INTERVAL: a duration is a number and a unit, as 1s, 500ms or 1m30s`},
		{env{"REDCELL_FLUSH_INTERVAL": "5"}, `invalid value "5" for REDCELL_FLUSH_INTERVAL: a duration needs a unit, as 1s or 500ms`},
		{env{"REDCELL_IN_MEMORY": "perhaps"}, `invalid value "perhaps" for REDCELL_IN_MEMORY: must be true or false`},
		{env{"REDCELL_LOG_LEVEL": "loud"}, `invalid value "loud" for REDCELL_LOG_LEVEL: slog: level string "loud": unknown name`},
		{env{"REDCELL_TIMEOUT": "5x"}, `invalid value "5x" for REDCELL_TIMEOUT: must be whole seconds or a duration such as 90s or 5m`},
		{env{"REDCELL_LOG_FORMAT": "xml"}, `--log-format "xml": must be text or json`},
		{env{"REDCELL_PORT": "70000"}, `--port 70000: must be between 0 and 65535`},
	} {
		_, err := Parse(nil, c.env.lookup, io.Discard)
		require.EqualError(t, err, c.want)
	}
}

// An action left in the environment must not turn the server into a
// one-shot command.
func TestActionsAreNotReadFromTheEnvironment(t *testing.T) {
	cfg := parseWith(t, env{"REDCELL_VERSION": "true", "REDCELL_HEALTHCHECK": "true"})
	require.False(t, cfg.Version)
	require.False(t, cfg.HealthCheck)
	require.True(t, parseWith(t, env{}, "--version").Version)
}

// Of the two names of the data directory, REDCELL_DIR wins in the
// environment, and either flag wins over both.
func TestDirAliases(t *testing.T) {
	e := env{"REDCELL_DATA_DIR": "/a", "REDCELL_DIR": "/b"}
	require.Equal(t, "/b", parseWith(t, e).Dir)
	require.Equal(t, "/a", parseWith(t, env{"REDCELL_DATA_DIR": "/a"}).Dir)
	require.Equal(t, "/c", parseWith(t, e, "--data-dir", "/c").Dir)
}

// --help reads like a man page's summary.
func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := Parse([]string{"-h"}, env{}.lookup, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	text := out.String()
	var headings []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line == strings.ToUpper(line) && !strings.HasPrefix(line, " ") {
			headings = append(headings, line)
		}
	}
	require.Equal(t, []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"}, headings)
	require.Contains(t, text, "    --flush-interval duration  (REDCELL_FLUSH_INTERVAL, default 1s)\n")
	require.Contains(t, text, "    --metrics-addr address  (REDCELL_METRICS_ADDR)\n")
	require.Contains(t, text, "    --version\n")
	for _, line := range strings.Split(text, "\n") {
		require.LessOrEqual(t, len(line), 80, "fits a terminal: %q", line)
	}
	// A mistake prints nothing itself: main prints the error and a hint.
	var quiet strings.Builder
	_, err = Parse([]string{"--no-such-flag"}, env{}.lookup, &quiet)
	require.EqualError(t, err, "unknown flag --no-such-flag")
	require.Empty(t, quiet.String())
}

// A flag's error names it as --help and docs/configuration.md write it, with two
// dashes, says what its value should look like, and suggests the flag
// meant.
func TestFlagErrorsNameFlagsAsTheManualDoes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--datadir", "x"}, "unknown flag --datadir: did you mean --data-dir?"},
		{[]string{"--flushinterval", "5s"}, "unknown flag --flushinterval: did you mean --flush-interval?"},
		{[]string{"--port"}, "--port needs a value"},
		{[]string{"--port", "abc"}, `invalid value "abc" for --port: must be a whole number`},
		{[]string{"--in-memory=perhaps"}, `invalid value "perhaps" for --in-memory: must be true or false`},
		{[]string{"--shards", "many"}, `invalid value "many" for --shards: must be a whole number`},
		{[]string{"--window-log-max", "1e3"}, `invalid value "1e3" for --window-log-max: must be a whole number`},
		{[]string{"--maxmemory", "lots"}, `invalid value "lots" for --maxmemory: must be a number of bytes, optionally with a unit: 64kb, 1mb, 1gb`},
		{[]string{"--port", "1", "extra"}, `unexpected argument "extra"`},
	} {
		require.EqualError(t, parseErr(t, env{}, c.args...), c.want, "%v", c.args)
	}
}

// Every duration-valued flag, on the command line and in the environment,
// says that a duration needs a unit: --flush-interval 5 is not 5 s (nor
// 5 ns). --timeout reads a bare number as seconds, as Redis's timeout does.
func TestDurationFlagsSayWhatADurationIs(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  env
		want string
	}{
		{[]string{"--flush-interval", "5"}, nil, `invalid value "5" for --flush-interval: a duration needs a unit, as 1s or 500ms`},
		{[]string{"--flush-interval=soon"}, nil, `invalid value "soon" for --flush-interval: a duration is a number and a unit, as 1s, 500ms or 1m30s`},
		{[]string{"--flush-interval", "1sec"}, nil, `invalid value "1sec" for --flush-interval: unknown unit "sec" in a duration: the units are ns, us, ms, s, m and h`},
		{nil, env{"REDCELL_FLUSH_INTERVAL": "5"}, `invalid value "5" for REDCELL_FLUSH_INTERVAL: a duration needs a unit, as 1s or 500ms`},
		{[]string{"--rls-reload-interval", "5"}, nil, `invalid value "5" for --rls-reload-interval: a duration needs a unit, as 1s or 500ms`},
		{[]string{"--timeout", "soon"}, nil, `invalid value "soon" for --timeout: must be whole seconds or a duration such as 90s or 5m`},
		{nil, env{"REDCELL_TIMEOUT": "soon"}, `invalid value "soon" for REDCELL_TIMEOUT: must be whole seconds or a duration such as 90s or 5m`},
	} {
		require.EqualError(t, parseErr(t, c.env, c.args...), c.want, "%v %v", c.args, c.env)
	}
	require.Equal(t, time.Duration(0), parseWith(t, env{}, "--flush-interval", "0").FlushInterval, "0 needs no unit")
	require.Equal(t, 5*time.Second, parseWith(t, env{}, "--timeout", "5").Timeout)
	var durations []string
	fs := flagSet(&Config{})
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				durations = append(durations, f.Name)
			}
		}
	})
	require.Equal(t, []string{"flush-interval", "rls-reload-interval"}, durations, "the flags this test covers; --timeout is of type seconds")
}

func TestVersionLine(t *testing.T) {
	require.Equal(t, "redcell "+server.Version+" (commit "+BuildCommit()+", "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+
		"; Redis protocol of Redis "+server.RedisVersion+")", VersionLine())
	defer func(c string) { Commit = c }(Commit)
	Commit = "abc123"
	require.Contains(t, VersionLine(), "(commit abc123, ")
}

// The start-up line carries every setting, and never a password.
func TestStartupSettingsHidePasswords(t *testing.T) {
	var out strings.Builder
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := parseWith(t, env{}, "--requirepass", "hunter2", "--port", "7007")
	logger.Info("starting redcell", cfg.LogAttrs()...)
	line := out.String()
	require.NotContains(t, line, "hunter2")
	require.Contains(t, line, `"require_pass":true`)
	require.Contains(t, line, `"port":7007`)
	require.Contains(t, line, `"flush_interval":`, "as 1s in the process's logs: main's newLogger")
	require.Contains(t, line, `"metrics_addr":""`)
	require.NotContains(t, line, `"version"`)
	require.NotContains(t, line, `"health_check"`)
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{"FlushInterval": "flush_interval", "Port": "port", "TLSCertFile": "tls_cert_file",
		"RequirePass": "require_pass", "InMemory": "in_memory", "MaxClients": "max_clients", "TLSPort": "tls_port",
		"TLSCACertFile": "tls_ca_cert_file", "ClusterAnnounceIP": "cluster_announce_ip", "CAIP": "ca_ip", "HTTPServer": "http_server"} {
		require.Equal(t, want, snake(in), in)
	}
}

// The start-up line's name of every setting splits each run of capitals
// in its field's name into words: a run of two initialisms or more, as
// TLSCA in TLSCACertFile (logged as tlsca_cert_file before), is made of
// the initialisms snake knows, as --tls-ca-cert-file is.
func TestEveryFieldsLogNameSplitsItsInitialisms(t *testing.T) {
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		for _, w := range camelWords(f.Name) {
			if len(w) < 2 || strings.ToUpper(w) != w {
				continue
			}
			if !slices.Contains(initialisms, w) {
				require.NotNil(t, splitInitialisms(w), "%s: add the initialisms of %s to initialisms", f.Name, w)
			}
		}
	}
	var keys []string
	for _, a := range (Config{}).LogAttrs() {
		keys = append(keys, a.(slog.Attr).Key)
	}
	require.Contains(t, keys, "tls_ca_cert_file")
	require.NotContains(t, keys, "tlsca_cert_file")
}

// A REDCELL_ variable that sets nothing is named in a warning, with the
// variable meant when one is near; it does not stop the start, and the
// variables that are set still apply.
func TestUnknownEnvironmentVariablesAreWarnedAbout(t *testing.T) {
	cfg, err := ParseEnviron(nil, []string{
		"HOME=/root",
		"REDCELL_PROT=6555",
		"REDCELL_PORT=7000",
		"REDCELL_FLUSHINTERVAL=5s",
		"REDCELL_UNRELATED=1",
		"REDCELL_log_level=debug",
		"REDCELL_VERSION=1",
		"REDCELLTEST_CHILD=1",
		"REDCELLTEST_ARGS=--port 0",
		"REDCELLTEST_WALL_SHIFT=48h",
		"REDCELLTEST_RECORD_FUZZ_SEEDS=1",
		"REDCELL_COMMIT=abc123",
		"redcell_port=1",
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 7000, cfg.Port)
	require.Equal(t, []Warning{
		{"REDCELL_FLUSHINTERVAL", "REDCELL_FLUSHINTERVAL is not a redcell setting and is ignored; did you mean REDCELL_FLUSH_INTERVAL?"},
		{"REDCELL_PROT", "REDCELL_PROT is not a redcell setting and is ignored; did you mean REDCELL_PORT?"},
		{"REDCELL_UNRELATED", "REDCELL_UNRELATED is not a redcell setting and is ignored"},
		{"REDCELL_log_level", "REDCELL_log_level is not a redcell setting and is ignored; did you mean REDCELL_LOG_LEVEL?"},
	}, cfg.Warnings())

	cfg, err = ParseEnviron([]string{"--port", "1"}, []string{"REDCELL_PORT=7000", "REDCELL_DIR=/x"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, cfg.Port)
	require.Equal(t, "/x", cfg.Dir)
	require.Empty(t, cfg.Warnings())
}

// Every REDCELL_ variable the repository's tests, scripts, compose files
// and Dockerfile set is known: the harnesses that run the server with them
// must not make it warn. (This package's tests, which misspell on purpose,
// are left out, and so is REDCELL_PROT, the misspelling the README and
// TestMisspelledVariableIsWarnedAbout show.)
func TestTheRepositorysVariablesAreKnown(t *testing.T) {
	name := regexp.MustCompile(`REDCELL_[A-Za-z0-9_]*`)
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || path == filepath.Join("..", "config") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".yml", ".yaml", ".sh", ".md", ".toml", ".json":
		default:
			if d.Name() != "Dockerfile" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(b), -1) {
			if !strings.HasSuffix(n, "_") && n != "REDCELL_PROT" { // not a prefix, as REDCELL_
				seen[n] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, seen["REDCELL_PORT"] && seen["REDCELL_COMMIT"], "the walk found the repository's variables: %v", seen)
	require.False(t, seen["REDCELL_TEST_CHILD"], "the test harness's variables have their own prefix, REDCELLTEST_")
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Empty(t, unknownVariables(names))
}

// --in-memory writes nothing to disk: a --dir (or REDCELL_DIR), a
// --disk-reserve or a --flush-interval set beside it is accepted with a
// warning naming it, as the user set it. The defaults say nothing.
func TestInMemoryWarnsOfTheDiskSettingsItIgnores(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  env
		want []Warning
	}{
		{[]string{"--in-memory"}, nil, nil},
		{[]string{"--dir", "x"}, nil, nil},
		{[]string{"--in-memory", "--dir", "x"}, nil, []Warning{{"--dir", "--dir x is ignored: --in-memory keeps no state on disk"}}},
		{[]string{"--data-dir=x", "--in-memory"}, nil, []Warning{{"--data-dir", "--data-dir x is ignored: --in-memory keeps no state on disk"}}},
		{nil, env{"REDCELL_IN_MEMORY": "true", "REDCELL_DIR": "/data"},
			[]Warning{{"REDCELL_DIR", "REDCELL_DIR=/data is ignored: --in-memory keeps no state on disk"}}},
		{[]string{"--in-memory"}, env{"REDCELL_DATA_DIR": "/a", "REDCELL_DIR": "/b"},
			[]Warning{{"REDCELL_DIR", "REDCELL_DIR=/b is ignored: --in-memory keeps no state on disk"}}},
		{[]string{"--in-memory", "--dir", "x"}, env{"REDCELL_DIR": "/data"},
			[]Warning{{"--dir", "--dir x is ignored: --in-memory keeps no state on disk"}}},
		{[]string{"--in-memory", "--flush-interval", "0", "--disk-reserve", "1mb"}, nil, []Warning{
			{"--disk-reserve", "--disk-reserve 1mb is ignored: --in-memory keeps no state on disk"},
			{"--flush-interval", "--flush-interval 0s is ignored: --in-memory keeps no state on disk"},
		}},
		{[]string{"--in-memory=false", "--dir", "x"}, env{"REDCELL_IN_MEMORY": "true"}, nil},
	} {
		require.Equal(t, c.want, parseWith(t, c.env, c.args...).Warnings(), "%v %v", c.args, c.env)
	}
}
