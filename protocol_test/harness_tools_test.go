package protocol_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/stretchr/testify/require"
)

// unavailable ends a test that needs what is missing: skipped, saying how
// to install it, or failed when CI is set, since CI must run every test.
func unavailable(t testing.TB, missing, install string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(missing + ", and CI is set, so this is a failure: install it with " + install)
	}
	t.Skip(missing + ": this test was skipped; install it with " + install)
}

// needTool returns the path of the first of names on PATH (or at an
// absolute path); without any the test is unavailable.
func needTool(t testing.TB, install string, names ...string) string {
	t.Helper()
	testkit.SkipIfShort(t)
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	unavailable(t, strings.Join(names, " or ")+" not found in PATH", install)
	return ""
}

// redisCLI returns the path of redis-cli.
func redisCLI(t testing.TB) string {
	t.Helper()
	return needTool(t, "`apt-get install redis-tools` (Debian/Ubuntu) or `brew install redis`", "redis-cli")
}

// cli runs redis-cli against port with args, feeding stdin, and returns
// what it printed. Its output is not a terminal, so it prints raw replies.
// Anything on stderr fails the test.
func cli(t testing.TB, port int, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runCLI(redisCLI(t), port, stdin, args...)
	require.NoError(t, err, "redis-cli %v (stderr %q)", args, stderr)
	require.Empty(t, stderr, "redis-cli %v stderr", args)
	return stdout
}

// runCLI runs redis-cli without touching the test, for use inside
// require.Eventually. An exit status reporting a command error is not an
// error: the error text is in stdout.
func runCLI(path string, port int, stdin string, args ...string) (stdout, stderr string, err error) {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, path, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil
	}
	return out.String(), errOut.String(), err
}

// skipIfShortSleeps skips, under `go test -short`, a test that waits out
// real timeouts of seconds (the idle timeout's): the full run has it.
func skipIfShortSleeps(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("waits out timeouts of seconds: run without -short")
	}
}
