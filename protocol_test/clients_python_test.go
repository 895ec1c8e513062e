package protocol_test

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// redis-py, as Debian packages it (python3-redis), runs the README's
// calls against redcell: CL.THROTTLE's exact replies, the HTTP headers made
// from them, a pipeline, its default transactional pipeline (MULTI/EXEC),
// WATCH, an error, PTTL and DEL.
func TestRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	ts := startServer(t)
	out, err := exec.Command(python, "testdata/python/throttle.py", strconv.Itoa(ts.Port)).Output()
	require.NoError(t, err, "%s", stderrOf(err))
	checkClientRun(t, out, true, "max_burst must not be negative",
		"Command # 2 (CL.NOSUCH txabort) of pipeline caused error: unknown command 'CL.NOSUCH', with args beginning with: 'txabort' ")
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
	unavailable(t, "no python3 that can import redis", "`apt-get install python3-redis`")
	return ""
}

func stderrOf(err error) string {
	if exit, ok := err.(*exec.ExitError); ok {
		return string(exit.Stderr)
	}
	return ""
}
