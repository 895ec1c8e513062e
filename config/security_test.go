package config

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/server"
)

func parseErr(t *testing.T, e env, args ...string) error {
	t.Helper()
	_, err := Parse(args, e.lookup, io.Discard)
	return err
}

// The limits' defaults are the server's, the flags take Redis's units, and
// --output-buffer-limit 0 means no limit, as in Redis.
func TestLimitFlags(t *testing.T) {
	cfg := parseWith(t, env{})
	require.Equal(t, server.Limits{MaxBulkLen: 1 << 20, MaxArgs: 65536, MaxInlineLen: 64 << 10, MaxQueryLen: 8 << 20,
		MaxOutput: 32 << 20, MaxClients: 10000, MaxKeyLen: 8 << 10, MaxOutputTotal: 256 << 20, WindowLogMax: 10000}, cfg.ServerLimits(slog.New(slog.DiscardHandler)))
	require.True(t, cfg.ProtectedMode)

	cfg = parseWith(t, env{"REDCELL_TIMEOUT": "300"}, "--proto-max-bulk-len", "64kb", "--max-args", "100",
		"--max-inline-len", "1k", "--query-buffer-limit", "1MB", "--output-buffer-limit", "0", "--maxclients", "50",
		"--max-key-len", "1kb", "--maxmemory-clients", "0", "--window-log-max", "500")
	require.Equal(t, server.Limits{MaxBulkLen: 64 << 10, MaxArgs: 100, MaxInlineLen: 1000, MaxQueryLen: 1 << 20,
		MaxOutput: -1, MaxClients: 50, IdleTimeout: 300 * time.Second, MaxKeyLen: 1 << 10, MaxOutputTotal: -1, WindowLogMax: 500},
		cfg.ServerLimits(slog.New(slog.DiscardHandler)))
	require.Equal(t, 90*time.Second, parseWith(t, env{}, "--timeout", "1m30s").Timeout)
	require.Equal(t, int64(2e9), parseWith(t, env{}, "--query-buffer-limit", "2g").QueryBufferLimit)
	require.Equal(t, server.DefaultEventLoops(), parseWith(t, env{}).EventLoops)
	require.Equal(t, 0, parseWith(t, env{"REDCELL_EVENT_LOOPS": "0"}).EventLoops)
	require.Equal(t, 3, parseWith(t, env{}, "--event-loops", "3").EventLoops)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--proto-max-bulk-len", "lots"}, `invalid value "lots" for --proto-max-bulk-len: must be a number of bytes, optionally with a unit: 64kb, 1mb, 1gb`},
		{[]string{"--proto-max-bulk-len", "-1"}, `invalid value "-1" for --proto-max-bulk-len: must be a number of bytes, optionally with a unit: 64kb, 1mb, 1gb`},
		{[]string{"--proto-max-bulk-len", "0"}, "--proto-max-bulk-len 0: must be at least 1"},
		{[]string{"--timeout", "-5"}, `invalid value "-5" for --timeout: must be whole seconds or a duration such as 90s or 5m`},
		{[]string{"--maxclients", "0"}, "--maxclients 0: must be at least 1"},
		{[]string{"--max-args", "0"}, "--max-args 0: must be at least 1"},
		{[]string{"--query-buffer-limit", "1kb"}, "--query-buffer-limit 1kb: must not be less than --proto-max-bulk-len 1mb"},
		{[]string{"--protected-mode", "maybe"}, `invalid value "maybe" for --protected-mode: must be yes or no`},
		{[]string{"--maxmemory-policy", "allkeys-lru"}, `--maxmemory-policy: maxmemory policy "allkeys-lru": redcell serves noeviction and volatile-ttl`},
		{[]string{"--max-key-len", "0"}, "--max-key-len 0: must be between 1 and 1gb"},
		{[]string{"--window-log-max", "0"}, "--window-log-max 0: must be between 1 and 1000000"},
		{[]string{"--window-log-max", "1000001"}, "--window-log-max 1000001: must be between 1 and 1000000"},
		{[]string{"--event-loops", "1025"}, "--event-loops 1025: must be between 0 and 1024"},
		{[]string{"--event-loops", "-1"}, "--event-loops -1: must be between 0 and 1024"},
	} {
		require.EqualError(t, parseErr(t, env{}, c.args...), c.want, "%v", c.args)
	}
}

// As Redis's protected mode: without a password, redcell listens on the
// loopback only, unless told --protected-mode no; the refusal says how to
// set a password.
func TestProtectedMode(t *testing.T) {
	for _, bind := range []string{"127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"} {
		require.NoError(t, parseErr(t, env{}, "--bind", bind), bind)
	}
	for _, bind := range []string{"0.0.0.0", "::", "", "10.1.2.3", "redcell.example.com"} {
		err := parseErr(t, env{}, "--bind", bind)
		require.EqualError(t, err, "--bind "+bind+": protected mode refuses to listen on an address other than the loopback "+
			"without a password. Set one with --requirepass-file <file> or REDCELL_REQUIREPASS; or, "+
			"only where the network is trusted, start with --protected-mode no")
		require.NoError(t, parseErr(t, env{}, "--bind", bind, "--protected-mode", "no"), bind)
		require.NoError(t, parseErr(t, env{"REDCELL_PROTECTED_MODE": "no"}, "--bind", bind), bind)
		require.NoError(t, parseErr(t, env{"REDCELL_REQUIREPASS": "pw"}, "--bind", bind), bind)
	}
}

// With --aclfile the file's default user decides: the flags alone do not
// refuse the start, and CheckProtected, asked once the file is loaded,
// refuses a default user that takes any password.
func TestProtectedModeWithACLFile(t *testing.T) {
	cfg, err := Parse([]string{"--bind", "0.0.0.0", "--aclfile", "users.acl"}, env{}.lookup, io.Discard)
	require.NoError(t, err)
	require.NoError(t, cfg.CheckProtected(false))
	require.EqualError(t, cfg.CheckProtected(true), "--bind 0.0.0.0: protected mode refuses to listen on an address other than the loopback "+
		"without a password. Give the default user of --aclfile users.acl one (user default on >password ...), or set --requirepass "+
		"and leave it out of the file; or, only where the network is trusted, start with --protected-mode no")
	cfg, err = Parse([]string{"--bind", "0.0.0.0", "--aclfile", "users.acl", "--protected-mode", "no"}, env{}.lookup, io.Discard)
	require.NoError(t, err)
	require.NoError(t, cfg.CheckProtected(true))
}

// The password can come from a file, or the environment, so that ps does not
// show it.
func TestRequirePassFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	require.Equal(t, "s3cret pass", parseWith(t, env{}, "--requirepass-file", write("a", "s3cret pass\n")).RequirePass)
	require.Equal(t, "s3cret", parseWith(t, env{}, "--requirepass-file", write("b", "s3cret\r\nignored\n")).RequirePass)
	require.Equal(t, "no-newline", parseWith(t, env{"REDCELL_REQUIREPASS_FILE": write("c", "no-newline")}).RequirePass)
	require.Equal(t, "from-env", parseWith(t, env{"REDCELL_REQUIREPASS": "from-env"}).RequirePass)

	empty := write("d", "\nsecond line\n")
	require.EqualError(t, parseErr(t, env{}, "--requirepass-file", empty), "--requirepass-file "+empty+": the first line is empty")
	require.ErrorIs(t, parseErr(t, env{}, "--requirepass-file", filepath.Join(dir, "missing")), os.ErrNotExist)
	require.EqualError(t, parseErr(t, env{"REDCELL_REQUIREPASS": "x"}, "--requirepass-file", write("e", "y")),
		"--requirepass and --requirepass-file (or REDCELL_REQUIREPASS and REDCELL_REQUIREPASS_FILE) are both set: choose one")
	// A password from a file opens protected mode too.
	require.NoError(t, parseErr(t, env{}, "--bind", "0.0.0.0", "--requirepass-file", write("f", "pw")))
}

func TestTLSFlags(t *testing.T) {
	cfg := parseWith(t, env{}, "--tls-port", "6380", "--tls-cert-file", "c.pem", "--tls-key-file", "k.pem", "--tls-ca-cert-file", "ca.pem")
	require.Equal(t, engine.TLSFiles{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem", AuthClients: "yes"}, cfg.TLSFiles())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-port", "6380"}, "--tls-port needs --tls-cert-file and --tls-key-file"},
		{[]string{"--tls-port", "6379", "--tls-cert-file", "c", "--tls-key-file", "k"}, "--tls-port 6379: the plain --port uses it"},
		{[]string{"--tls-port", "70000"}, "--tls-port 70000: must be between 0 and 65535"},
		{[]string{"--tls-cert-file", "c"}, "--tls-cert-file, --tls-key-file and --tls-ca-cert-file need --tls-port or --rls-addr"},
		{[]string{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-auth-clients", "sometimes"},
			`--tls-auth-clients "sometimes": must be yes, optional or no`},
		{[]string{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-auth-clients", "optional"},
			"--tls-auth-clients optional needs --tls-ca-cert-file to check certificates against"},
	} {
		require.EqualError(t, parseErr(t, env{}, c.args...), c.want, "%v", c.args)
	}
}

// As Redis, maxclients is lowered to what the open-files limit allows.
func TestMaxClientsFitsTheOpenFilesLimit(t *testing.T) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	require.Equal(t, 10, fitMaxClients(10, slog.New(slog.DiscardHandler)))
	if lim.Cur > 1<<40 {
		t.Skip("no open-files limit to fit")
	}
	require.Equal(t, int(lim.Cur)-reservedFiles, fitMaxClients(int(lim.Cur)+1000, slog.New(slog.DiscardHandler)))
}

// RedactArgs hides every secret flag's value, in each form a flag takes,
// and leaves everything else as it is.
func TestRedactArgs(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"redcell", "--bind", "0.0.0.0", "--requirepass", "pw", "--port", "1"},
			[]string{"redcell", "--bind", "0.0.0.0", "--requirepass", Redacted, "--port", "1"}},
		{[]string{"redcell", "-requirepass=pw", "--masterauth=a=b", "-cluster-auth-pass", "c"},
			[]string{"redcell", "-requirepass=" + Redacted, "--masterauth=" + Redacted, "-cluster-auth-pass", Redacted}},
		{[]string{"redcell", "--masterauth", "--port"}, []string{"redcell", "--masterauth", Redacted}}, // Parse takes it as the password
		{[]string{"redcell", "--requirepass="}, []string{"redcell", "--requirepass=" + Redacted}},
		{[]string{"redcell", "--requirepass"}, []string{"redcell", "--requirepass"}},
		{[]string{"redcell", "--requirepass-file", "/run/secrets/pw", "--tls-key-file=k.pem", "--masteruser", "repl", "pw"},
			[]string{"redcell", "--requirepass-file", "/run/secrets/pw", "--tls-key-file=k.pem", "--masteruser", "repl", "pw"}},
		{nil, nil},
	} {
		in := slices.Clone(c.in)
		require.Equal(t, c.want, RedactArgs(c.in), "%q", c.in)
		require.Equal(t, in, c.in, "the arguments themselves are left alone")
	}
}

// Every flag whose name suggests a secret is either one (secretFlags, which
// RedactArgs hides) or named here with why it is not: a new flag holding a
// password, a token or a key fails this test until it is sorted.
func TestSecretFlagsAreKnown(t *testing.T) {
	notSecret := map[string]string{
		"requirepass-file":         "a path; the password is in the file",
		"tls-key-file":             "a path",
		"tls-cert-file":            "a path",
		"tls-ca-cert-file":         "a path",
		"tls-auth-clients":         "yes, no or optional",
		"cluster-auth-user":        "a user's name",
		"max-key-len":              "a size",
		"rls-key-prefix":           "a prefix of keys",
		"rls-xds-tls-ca-cert-file": "a path",
		"rls-xds-tls-cert-file":    "a path",
		"rls-xds-tls-key-file":     "a path",
		"rls-response-headers":     "on or off",
		"rls-limit-header":         "a header's name",
		"rls-tls-client-name":      "a name in a certificate",
		"rls-remaining-header":     "a header's name",
		"rls-reset-header":         "a header's name",
	}
	suggestive := regexp.MustCompile(`pass|auth|secret|token|key|cred|bearer|cookie|private|cert|header`)
	var cfg Config
	var seen []string
	flagSet(&cfg).VisitAll(func(f *flag.Flag) {
		if !suggestive.MatchString(f.Name) {
			return
		}
		seen = append(seen, f.Name)
		_, plain := notSecret[f.Name]
		if !plain && !slices.Contains(secretFlags, f.Name) {
			t.Errorf("--%s: a secret? add it to secretFlags, or to this test's notSecret with why not", f.Name)
		}
	})
	for _, name := range secretFlags {
		require.Contains(t, seen, name, "secretFlags names a flag that exists")
	}
}
