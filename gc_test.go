package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// After a collection, tuneGC has set GOGC from the live heap: a small test
// heap gets a large percentage, within the bounds.
func TestTuneGCSetsGOGCFromTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(100)
	stop := tuneGC()
	defer stop()
	require.Eventually(t, func() bool {
		runtime.GC()
		pct := debug.SetGCPercent(100)
		debug.SetGCPercent(pct)
		return pct > 100 && pct <= maxGCPercent
	}, 5*time.Second, 10*time.Millisecond)
}
