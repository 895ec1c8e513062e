package protocol_test

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"
)

// redis-py, as Debian packages it (python3-redis), runs docs/clients.md's
// calls against redcell: CL.THROTTLE's exact replies, the HTTP headers made
// from them, a pipeline, its default transactional pipeline (MULTI/EXEC),
// WATCH, an error, PTTL and DEL.
func TestRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	ts := harness.StartServer(t)
	out, err := exec.Command(python, "testdata/python/throttle.py", strconv.Itoa(ts.Port)).Output()
	require.NoError(t, err, "%s", stderrOf(err))
	checkClientRun(t, out, true, "max_burst must not be negative",
		"Command # 2 (CL.NOSUCH txabort) of pipeline caused error: unknown command 'CL.NOSUCH', with args beginning with: 'txabort' ")
}

// redis-py's username= authenticates as an ACL user (AUTH app ...): the
// user decides on its prefix, and its refusals raise NoPermissionError with
// Redis's words; a wrong password is refused with WRONGPASS.
func TestRedisPyUsername(t *testing.T) {
	python := pythonWithRedis(t)
	ts := harness.StartServer(t)
	appUser(t, ts.Raw(t))
	out, err := exec.Command(python, "testdata/python/acl.py", strconv.Itoa(ts.Port)).Output()
	require.NoError(t, err, "%s", stderrOf(err))
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, map[string]any{
		"decision":        []any{0.0, 16.0, 15.0, -1.0, 2.0},
		"key_refused":     "No permissions to access a key",
		"command_refused": "User app has no permissions to run the 'flushall' command",
		"whoami_refused":  "User app has no permissions to run the 'acl|whoami' command",
		"wrong_password":  "WRONGPASS invalid username-password pair or user is disabled.",
	}, got)
}

// pythonWithRedis finds a Python that can import redis: Debian's
// /usr/bin/python3 first (python3 on PATH may be a pyenv one without
// Debian's packages).
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	harness.Unavailable(t, "no python3 that can import redis", "`apt-get install python3-redis`")
	return ""
}

func stderrOf(err error) string {
	if exit, ok := err.(*exec.ExitError); ok {
		return string(exit.Stderr)
	}
	return ""
}
