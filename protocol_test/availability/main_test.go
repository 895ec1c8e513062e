// Package availability_test checks redcell's high availability as
// operators run it: replicas (redcell's own, and a real redis-server as a
// replica of redcell), real Redis Sentinel deciding failovers, a network
// partition made with namespaces, Redis Cluster with real cluster clients,
// resharding and a cluster that heals itself, and the Go client through
// all of them. Its tests start many processes and wait out Sentinel's
// timeouts, so they live apart from protocol_test's: go test runs the two
// packages side by side. Both use internal/testkit/harness.
package availability_test

import (
	"os"
	"testing"

	"github.com/redcell/redcell/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
