// Package protocol_test checks redcell as its users meet it: the real server
// on a real TCP port, driven by go-redis, rueidis, redis-cli and raw RESP
// bytes, on a manual clock so that no test sleeps.
//
// The files go by who meets the server that way. clients_* are programs
// written with client libraries (redis-py, ioredis, an HTTP middleware);
// ops_* what operators use (INFO, /metrics, logs, the exporter, CLIENT and
// MONITOR, the built binary's flags); hardening_* hostile and heavy clients
// (limits, malformed RESP, floods, TLS, memory, faults under load); the rest
// the Redis command surface as applications call it. internal/testkit/harness is what they
// share with protocol_test/availability: the servers (in process, the built
// binary, a real redis-server) and the external tools; raw RESP, and the built binary's process, are
// the test kit's (redcell/internal/testkit), which every package's tests
// share.
package protocol_test

import (
	"os"
	"testing"

	"github.com/redcell/redcell/internal/testkit"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m))
}
