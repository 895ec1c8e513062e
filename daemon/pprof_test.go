package daemon

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/stretchr/testify/require"
)

// --pprof-addr serves net/http/pprof, whose /debug/pprof/cmdline shows the
// process's arguments: with every secret flag's value redacted, in every
// form a flag takes, and the rest as they are. The profiles are served.
func TestPprofHidesSecretFlags(t *testing.T) {
	args := []string{"redcell", "--bind", "0.0.0.0", "--requirepass", "s3cret-1", "-masterauth=s3cret-2",
		"--cluster-auth-pass=s3cret-3", "-requirepass", "s3cret-4", "--masteruser", "repl", "--tls-key-file", "/etc/redcell/key.pem"}
	saved := os.Args
	os.Args = args
	t.Cleanup(func() { os.Args = saved })
	var logs testkit.LockedBuffer
	stop, err := servePprof("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(stop)
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, logs.String())
	base := "http://" + m[1]

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	cmdline := get("/debug/pprof/cmdline")
	require.Equal(t, strings.Join([]string{"redcell", "--bind", "0.0.0.0", "--requirepass", "REDACTED", "-masterauth=REDACTED",
		"--cluster-auth-pass=REDACTED", "-requirepass", "REDACTED", "--masteruser", "repl", "--tls-key-file", "/etc/redcell/key.pem"}, "\x00"), cmdline)
	require.NotContains(t, cmdline, "s3cret")
	require.Contains(t, get("/debug/pprof/"), "goroutine")
	require.Contains(t, get("/debug/pprof/goroutine?debug=1"), "goroutine profile:")
	require.Contains(t, get("/debug/pprof/heap?debug=1"), "heap profile:")
	require.Contains(t, get("/debug/pprof/symbol"), "num_symbols:")
}
