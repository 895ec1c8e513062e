package harness

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

// Unavailable ends a test that needs what is missing: skipped, saying how
// to install it, or failed when CI is set, since CI must run every test.
func Unavailable(t testing.TB, missing, install string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(missing + ", and CI is set, so this is a failure: install it with " + install)
	}
	t.Skip(missing + ": this test was skipped; install it with " + install)
}

// NeedTool returns the path of the first of names on PATH (or at an
// absolute path); without any the test is unavailable.
func NeedTool(t testing.TB, install string, names ...string) string {
	t.Helper()
	testkit.SkipIfShort(t)
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Unavailable(t, strings.Join(names, " or ")+" not found in PATH", install)
	return ""
}

// RedisCLI returns the path of redis-cli.
func RedisCLI(t testing.TB) string {
	t.Helper()
	return NeedTool(t, "`apt-get install redis-tools` (Debian/Ubuntu) or `brew install redis`", "redis-cli")
}

// CLI runs redis-CLI against port with args, feeding stdin, and returns
// what it printed. Its output is not a terminal, so it prints raw replies.
// Anything on stderr fails the test.
func CLI(t testing.TB, port int, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, err := RunCLI(RedisCLI(t), port, stdin, args...)
	require.NoError(t, err, "redis-cli %v (stderr %q)", args, stderr)
	require.Empty(t, stderr, "redis-cli %v stderr", args)
	return stdout
}

// RunCLI runs redis-cli without touching the test, for use inside
// require.Eventually. An exit status reporting a command error is not an
// error: the error text is in stdout.
func RunCLI(path string, port int, stdin string, args ...string) (stdout, stderr string, err error) {
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

// SkipIfShortSleeps skips, under `go test -short`, a test that waits out
// real timeouts of seconds (the idle timeout's): the full run has it.
func SkipIfShortSleeps(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("waits out timeouts of seconds: run without -short")
	}
}
