package protocol_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"
)

// ioredis runs docs/clients.md's calls against redcell: CL.THROTTLE's exact
// replies, the HTTP headers made from them, a pipeline, multi() (MULTI/EXEC),
// WATCH, an error, PTTL and DEL. ioredis checks INFO for loading:0 before its
// first command.
func TestIORedis(t *testing.T) {
	node := harness.NeedTool(t, "`apt-get install nodejs`", "node", "nodejs")
	if _, err := os.Stat("testdata/node/node_modules/ioredis/package.json"); err != nil {
		harness.Unavailable(t, "ioredis is not installed", "`npm ci --prefix protocol_test/testdata/node`")
	}
	ts := harness.StartServer(t)
	out, err := exec.Command(node, "testdata/node/throttle.js", strconv.Itoa(ts.Port)).Output()
	require.NoError(t, err, "%s", stderrOf(err))
	checkClientRun(t, out, "PONG", "ERR max_burst must not be negative", "EXECABORT Transaction discarded because of previous errors.")
}
