package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// GC pacing. The keyspace lives outside the Go heap (storage maps its large
// arrays), and serving a command allocates nothing, so the heap the
// collector sees is small and its garbage comes from persistence: each flush
// copies the changed keys out and hands them to Pebble. Under GOGC=100 a
// heap of 8 MiB live may hold 8 MiB of such garbage before it is collected;
// a flush that briefly holds 60 MB of changes lets the heap reach 120 MB.
// TuneGC asks for about gcHeadroom bytes between collections instead: after
// each collection it sets GOGC to gcHeadroom/live, bounded to
// [minGCPercent, maxGCPercent]. So a small heap is collected rarely and a
// large transient one grows by a quarter, not double.
//
// The headroom was 16 MiB while redcon's reader made garbage of every
// command. Measured with bench/run.sh's memory fill (~1M new keys a second)
// once commands allocated nothing: 4 MiB took RSS growth from about 81 to
// 62 B/key, and the pipelined loads ran one collection in six seconds.
const (
	gcHeadroom   = 4 << 20
	minGCPercent = 25
	// maxGCPercent also bounds the heap's floor, which the runtime sets to
	// 4 MiB * GOGC/100: at 400 it is 16 MiB.
	maxGCPercent = 400
)

// TuneGC starts pacing the collector, unless the GOGC environment variable
// is set: an operator's explicit choice wins. The pacing is the process's,
// not one Run's, so main calls it once; stop ends it after the next
// collection (for tests).
func TuneGC() (stop func()) {
	var stopped atomic.Bool
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// The sentinel becomes garbage at once; its cleanup runs after the
		// next collection, reads what that collection found live, and
		// re-arms for the one after.
		runtime.AddCleanup(new(gcSentinel), func(struct{}) {
			if stopped.Load() {
				return
			}
			metrics.Read(live)
			pct := 100 * gcHeadroom / max(live[0].Value.Uint64(), 1)
			debug.SetGCPercent(int(min(max(pct, minGCPercent), maxGCPercent)))
			arm()
		}, struct{}{})
	}
	arm()
	return func() { stopped.Store(true) }
}

// gcSentinel holds a pointer so that it is not batched with other tiny
// objects, which would delay its cleanup.
type gcSentinel struct{ _ *byte }
