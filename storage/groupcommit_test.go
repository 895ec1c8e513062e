package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// countingBackend counts Apply calls, slowly, so that Syncs pile up.
type countingBackend struct {
	*memoryBackend
	mu    sync.Mutex
	calls int
}

func (c *countingBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // a disk sync takes time; waiters gather meanwhile
	return c.memoryBackend.Apply(changes, saved, sync)
}

func TestGroupCommitSharesSyncsAndPersistsBeforeReturning(t *testing.T) {
	s := New(Config{TrackChanges: true})
	b := &countingBackend{memoryBackend: newMemoryBackend()}
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.RunGroupCommit(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	r := mustRate(t, 0, 1, 60, 1)
	const writers = 64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i)
			if _, err := s.Throttle([]byte(key), r, t0); err != nil {
				errs <- err
				return
			}
			if err := f.Sync(); err != nil {
				errs <- err
				return
			}
			// Acknowledged: the key must already be in the backend.
			if _, ok := b.Snapshot()[key]; !ok {
				errs <- fmt.Errorf("%s acknowledged but not persisted", key)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Len(t, b.Snapshot(), writers)
	b.mu.Lock()
	calls := b.calls
	b.mu.Unlock()
	require.Less(t, calls, writers, "concurrent writers share syncs")
}

func TestSyncFailsOnceGroupCommitStops(t *testing.T) {
	s := New(Config{TrackChanges: true})
	f := NewFlusher(s, newMemoryBackend(), FlusherOptions{Now: fixedClock})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.RunGroupCommit(ctx)
	require.ErrorIs(t, f.Sync(), context.Canceled)
}
