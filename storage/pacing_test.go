package storage

import (
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// fakeCompactions is a DB as the pacer sees it: how many compactions it
// allows at once, and how many it has waiting.
type fakeCompactions struct {
	mu      sync.Mutex
	allowed int
	waiting int
	started []pebble.CompactionGrantHandle
}

func (f *fakeCompactions) GetAllowedWithoutPermission() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allowed
}

func (f *fakeCompactions) GetWaitingCompaction() (bool, pebble.WaitingCompaction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting > 0, pebble.WaitingCompaction{}
}

func (f *fakeCompactions) Schedule(h pebble.CompactionGrantHandle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == 0 {
		return false
	}
	f.waiting--
	f.started = append(f.started, h)
	return true
}

// The pacer runs as many compactions at once as the DB allows, and starts a
// waiting one when one finishes.
func TestCompactionPacerSchedules(t *testing.T) {
	db := &fakeCompactions{allowed: 1}
	p := newCompactionPacer()
	p.Register(1, db)
	defer p.Unregister()

	ok, h := p.TrySchedule()
	require.True(t, ok, "the first compaction")
	ok, _ = p.TrySchedule()
	require.False(t, ok, "one at a time while the DB allows one")

	db.mu.Lock()
	db.waiting = 2
	db.mu.Unlock()
	h.Started()
	h.Done()
	db.mu.Lock()
	require.Len(t, db.started, 1, "the finished compaction's slot went to a waiting one")
	next := db.started[0]
	db.mu.Unlock()

	db.mu.Lock()
	db.allowed = 2
	db.mu.Unlock()
	p.UpdateGetAllowedWithoutPermission()
	require.Eventually(t, func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return len(db.started) == 2
	}, 5*time.Second, time.Millisecond, "a raised allowance starts the other waiting compaction")
	next.Done()
	db.mu.Lock()
	h2 := db.started[1]
	db.mu.Unlock()
	h2.Done()
	p.mu.Lock()
	require.Zero(t, p.running)
	p.mu.Unlock()
}

// A compaction runs for a burst, then pauses for as long again (a duty of
// one half), never longer without a pause.
func TestCompactionPacerPausesAfterABurst(t *testing.T) {
	now := time.Unix(1000, 0)
	var slept []time.Duration
	p := newCompactionPacer()
	p.now = func() time.Time { return now }
	p.sleep = func(d time.Duration) { slept = append(slept, d); now = now.Add(d) }
	h := p.handle()
	h.Started()
	steps := []struct {
		ran  time.Duration
		want []time.Duration
	}{
		{300 * time.Microsecond, nil},
		{600 * time.Microsecond, nil}, // 0.9 ms since the start: under a burst
		{300 * time.Microsecond, []time.Duration{1200 * time.Microsecond}},
		{500 * time.Microsecond, []time.Duration{1200 * time.Microsecond}},
		{2 * time.Millisecond, []time.Duration{1200 * time.Microsecond, 2500 * time.Microsecond}},
	}
	for i, s := range steps {
		now = now.Add(s.ran)
		h.CumulativeStats(pebble.CompactionGrantHandleStats{})
		require.Equal(t, s.want, slept, "step %d", i)
	}
}
