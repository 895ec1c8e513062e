package daemon

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// After a collection, TuneGC has set GOGC from the live heap, within the
// bounds: 100 (the runtime's default, set below) only if the live heap were
// exactly gcHeadroom.
func TestTuneGCSetsGOGCFromTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(100)
	stop := TuneGC()
	defer stop()
	require.Eventually(t, func() bool {
		runtime.GC()
		pct := debug.SetGCPercent(100)
		debug.SetGCPercent(pct)
		return pct != 100 && pct >= minGCPercent && pct <= maxGCPercent
	}, 5*time.Second, 10*time.Millisecond)
}
