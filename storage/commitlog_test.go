package storage

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// logStore is a store persisting to Pebble on fs in durable mode: its
// flusher's group commits append to the backend's commit log.
func logStore(t *testing.T, fs vfs.FS, capacity int64) (*PebbleBackend, *Store, *Flusher, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	s := New(Config{Shards: 4, TrackChanges: true})
	opts := PebbleOptions{FS: fs, StallTimeout: 200 * time.Millisecond, Logger: logs.logger(), Reserve: -1}
	if capacity > 0 {
		opts.Reserve = reserve
	}
	p, _, err := OpenPebble("/store", opts, t0, s.Restore)
	require.NoError(t, err)
	f := NewFlusher(s, p, FlusherOptions{Now: fixedClock, Logger: logs.logger(), Log: p})
	return p, s, f, logs
}

// loadAll opens the store on fs, as a restart does, and returns its keys.
func loadAll(t *testing.T, fs vfs.FS) (map[string]gcra.Instant, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	got := map[string]gcra.Instant{}
	p, _, err := OpenPebble("/store", PebbleOptions{FS: fs, Reserve: -1, Logger: logs.logger()}, t0, func(k []byte, _ Kind, tat gcra.Instant, _ []byte) error {
		got[string(k)] = tat
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	return got, logs
}

func commitLogNames(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	seqs, _, err := commitLogFiles(fs, "/store")
	require.NoError(t, err)
	var names []string
	for _, n := range seqs {
		names = append(names, commitLogName(n))
	}
	return names
}

// again makes keys prefix:0 to prefix:n-1 live for an hour more (decide
// refuses a second call).
func again(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	r := mustRate(t, 10, 1, 3600, 1)
	for i := range n {
		res, err := s.Throttle(fmt.Appendf(nil, "%s:%d", prefix, i), r, t0)
		require.NoError(t, err)
		require.False(t, res.Limited)
	}
}

// tats returns what the store holds for keys prefix:0 to prefix:n-1.
func tats(t *testing.T, s *Store, prefix string, n int) map[string]gcra.Instant {
	t.Helper()
	out := map[string]gcra.Instant{}
	for i := range n {
		key := fmt.Sprintf("%s:%d", prefix, i)
		tat, _, ok := s.Get([]byte(key), t0)
		require.True(t, ok, key)
		out[key] = tat
	}
	return out
}

// What a group commit acknowledged is in the commit log only, until a
// checkpoint: a stop without one (a crash) leaves it there, and the next
// open applies it before it loads the store, then removes the file.
func TestCommitLogKeepsWhatSyncAcknowledgedAcrossACrash(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 50)
	require.NoError(t, f.Sync())
	again(t, s, "a", 50) // the same keys again: a later TAT wins
	decide(t, s, "b", 10)
	require.NoError(t, f.Sync())
	require.Equal(t, 0, f.Pending())
	want := tats(t, s, "a", 50)
	maps.Copy(want, tats(t, s, "b", 10))
	require.NoError(t, p.Close()) // no checkpoint: as a crash leaves it
	require.Equal(t, []string{commitLogName(1)}, commitLogNames(t, fs))

	got, logs := loadAll(t, fs)
	require.Equal(t, want, got)
	require.Contains(t, logs.String(), `msg="applied the commit log left by a stop in durable mode" dir=/store files=1 changes=110`)
	require.Empty(t, commitLogNames(t, fs), "applied, the log is removed")
	got, _ = loadAll(t, fs)
	require.Equal(t, want, got, "and the store holds it")
}

// A checkpoint (Flush) applies the logged changes to the store and drops the
// log files they were in; later commits go to a new file.
func TestCheckpointAppliesTheCommitLogAndDropsIt(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 20)
	require.NoError(t, f.Sync())
	require.Equal(t, []string{commitLogName(1)}, commitLogNames(t, fs))
	decide(t, s, "b", 5) // not yet committed: the checkpoint logs it first
	require.NoError(t, f.Flush())
	require.Empty(t, commitLogNames(t, fs))

	// A key changed after the checkpoint: its logged TAT, newer, wins
	// over the one the checkpoint wrote.
	again(t, s, "a", 1)
	require.NoError(t, f.Sync())
	require.Equal(t, []string{commitLogName(2)}, commitLogNames(t, fs))
	want := tats(t, s, "a", 20)
	maps.Copy(want, tats(t, s, "b", 5))
	require.Equal(t, t0+sec(7200), want["a:0"])
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Equal(t, want, got)
}

// A checkpoint that applies several logged changes of one key writes the
// newest: the keys changed twice hold their second TAT, the others their
// first, in the store a restart reads.
func TestCheckpointAppliesTheNewestLoggedChangeOfAKey(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 40)
	require.NoError(t, f.Sync())
	again(t, s, "a", 20) // a:0 to a:19 twice, in a later commit
	require.NoError(t, f.Sync())
	want := tats(t, s, "a", 40)
	require.Equal(t, t0+sec(7200), want["a:0"])
	require.Equal(t, t0+sec(3600), want["a:39"])
	require.NoError(t, f.Flush())
	require.Empty(t, commitLogNames(t, fs), "applied, the log is dropped")
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Equal(t, want, got)
}

// A crash in the middle of a log write leaves its record cut short: what
// was read before it is applied, the rest ignored, and the open succeeds.
func TestCommitLogRecordCutShortIsIgnored(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 3)
	require.NoError(t, f.Sync())
	want := tats(t, s, "a", 3)
	decide(t, s, "b", 3)
	require.NoError(t, f.Sync())
	require.NoError(t, p.Close())

	name := fs.PathJoin("/store", commitLogName(1))
	data, err := readAll(fs, name)
	require.NoError(t, err)
	for _, cut := range []int{1, 9, 20} { // into the payload, the header, the key
		file, err := fs.Create(name, vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		_, err = file.Write(data[:len(data)-cut])
		require.NoError(t, err)
		require.NoError(t, file.Close())
		got, _ := loadAll(t, fs)
		require.Equal(t, want, got, "cut %d bytes", cut)
	}
}

// A log write that fails (a full disk) acknowledges nothing: Sync fails, the
// changes count as pending, and the next commit that succeeds logs them.
func TestFailedLogWriteKeepsChangesForTheNextCommit(t *testing.T) {
	fs := newFaultFS("/store", 32<<20)
	p, s, f, _ := logStore(t, fs, 32<<20)
	decide(t, s, "a", 100)
	fs.fill()
	require.ErrorIs(t, f.Sync(), ErrDiskFull)
	require.True(t, f.Failing())
	require.Equal(t, 100, f.Pending())
	decide(t, s, "b", 10)
	require.ErrorIs(t, f.Sync(), ErrDiskFull)
	require.Equal(t, 110, f.Pending())

	fs.other.Store(0)
	require.NoError(t, f.Sync())
	require.False(t, f.Failing())
	require.Equal(t, 0, f.Pending())
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Len(t, got, 110)
}

// A checkpoint that cannot write the store (a full disk) keeps the log:
// nothing logged is lost, and the next checkpoint applies it and drops it.
func TestFailedCheckpointKeepsTheCommitLog(t *testing.T) {
	fs := newFaultFS("/store", 32<<20)
	p, s, f, logs := logStore(t, fs, 32<<20)
	decide(t, s, "a", 100)
	require.NoError(t, f.Sync())
	fs.fill()
	require.ErrorIs(t, f.Flush(), ErrDiskFull)
	require.Contains(t, logs.String(), "applying the commit log to the store failed; it is kept")
	require.Equal(t, []string{commitLogName(1)}, commitLogNames(t, fs))
	require.Equal(t, 0, f.Pending(), "logged is durable")

	fs.other.Store(0)
	require.NoError(t, f.Flush())
	require.Empty(t, commitLogNames(t, fs))
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Len(t, got, 100)
}

// Group commits from many goroutines, with checkpoints between them, never
// lose an acknowledged change: after the last, a crash (no checkpoint) and a
// reopen hold every key with the TAT it was acknowledged with.
func TestCommitLogUnderConcurrentCommitsAndCheckpoints(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	r := mustRate(t, 100, 1, 3600, 1)
	const writers, rounds = 8, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var checkpoints sync.WaitGroup
	checkpoints.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				require.NoError(t, f.Flush())
			}
		}
	})
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				key := fmt.Appendf(nil, "w%d:%d", w, i%5)
				if _, err := s.Throttle(key, r, t0); err != nil {
					t.Error(err)
					return
				}
				if err := f.Sync(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	checkpoints.Wait()
	want := map[string]gcra.Instant{}
	for w := range writers {
		for i := range 5 {
			key := fmt.Sprintf("w%d:%d", w, i)
			tat, _, ok := s.Get([]byte(key), t0)
			require.True(t, ok)
			require.Equal(t, t0+sec(3600*(rounds/5)), tat, key)
			want[key] = tat
		}
	}
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Equal(t, want, got)
}

// A checkpoint keeps the newest file it retires, and the next commit writes
// over it: the old records after the new ones are never applied, though
// they hold keys deleted since; and the numbers go on growing across opens,
// so that a recycled file's old records never pass for new ones.
func TestRecycledCommitLogFileAppliesOnlyItsNewRecords(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 50)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Flush())
	free := fs.PathJoin("/store", commitLogFreeName(1))
	fi, err := fs.Stat(free)
	require.NoError(t, err, "the retired file is kept")
	old := fi.Size()

	for i := range 50 {
		require.True(t, s.Delete(fmt.Appendf(nil, "a:%d", i), t0))
	}
	decide(t, s, "b", 1)
	require.NoError(t, f.Sync())
	require.Equal(t, []string{commitLogName(2)}, commitLogNames(t, fs))
	fi, err = fs.Stat(fs.PathJoin("/store", commitLogName(2)))
	require.NoError(t, err)
	require.Equal(t, old, fi.Size(), "written over, not appended to")
	want := tats(t, s, "b", 1)
	require.NoError(t, p.Close()) // a crash

	got, _ := loadAll(t, fs)
	require.Equal(t, want, got)

	// The next run numbers its files past the recycled one's.
	p, s, f, _ = logStore(t, fs, 0)
	decide(t, s, "c", 1)
	require.NoError(t, f.Sync())
	require.Equal(t, []string{commitLogName(3)}, commitLogNames(t, fs))
	maps.Copy(want, tats(t, s, "c", 1))
	require.NoError(t, p.Close())
	got, _ = loadAll(t, fs)
	require.Equal(t, want, got)
}

// The records a recycled file held before are whole after a new record of
// the same size as the first of them: each names the file it was written
// to, so they end the file's reading and are never applied.
func TestOldRecordsInARecycledFileAreNeverApplied(t *testing.T) {
	fs := vfs.NewMem()
	p, _, _, _ := logStore(t, fs, 0)
	var xs, deleted []Change
	for i := range 10 {
		key := fmt.Sprintf("x:%d", i)
		xs = append(xs, Change{Key: key, TAT: t0 + sec(60)})
		deleted = append(deleted, Change{Key: key})
	}
	require.NoError(t, p.Log([]Change{{Key: "a:0", TAT: t0 + sec(60)}}, t0))
	require.NoError(t, p.Log(xs, t0))
	mark, err := p.Seal()
	require.NoError(t, err)
	// A checkpoint applied them, then the keys were deleted and that
	// applied too.
	require.NoError(t, p.Apply(xs, t0, false))
	require.NoError(t, p.Apply(deleted, t0, true))
	require.NoError(t, p.Drop(mark))

	require.NoError(t, p.Log([]Change{{Key: "a:1", TAT: t0 + sec(90)}}, t0)) // as long as a:0's record
	require.Equal(t, []string{commitLogName(2)}, commitLogNames(t, fs))
	require.NoError(t, p.Close()) // a crash
	got, _ := loadAll(t, fs)
	require.Equal(t, map[string]gcra.Instant{"a:1": t0 + sec(90)}, got)
}

// RunGroupCommit checkpoints every CheckpointInterval, or as soon as the log
// holds checkpointAt changes: what waits for a checkpoint is bounded.
func TestCheckpointComesEarlyOnceTheLogHoldsEnough(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	f.checkpointAt = 100
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.RunGroupCommit(ctx); close(done) }()
	defer func() { cancel(); <-done; require.NoError(t, p.Close()) }()

	decide(t, s, "a", 99)
	require.NoError(t, f.Sync())
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, []string{commitLogName(1)}, commitLogNames(t, fs), "under the bound: no checkpoint yet")
	decide(t, s, "b", 1)
	require.NoError(t, f.Sync())
	require.Eventually(t, func() bool {
		seqs, _, err := commitLogFiles(fs, "/store")
		return err == nil && len(seqs) == 0
	}, 5*time.Second, 5*time.Millisecond,
		"the 100th change brings the checkpoint, which retires the file")
}

// A recycled file that has gone (removed by hand) is no reason to fail a
// commit: the next file is a new one.
func TestCommitLogStartsANewFileWhenTheRecycledOneIsGone(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 5)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Flush())
	require.NoError(t, fs.Remove(fs.PathJoin("/store", commitLogFreeName(1))))
	decide(t, s, "b", 5)
	require.NoError(t, f.Sync())
	require.Equal(t, []string{commitLogName(2)}, commitLogNames(t, fs))
	want := tats(t, s, "b", 5)
	maps.Copy(want, tats(t, s, "a", 5))
	require.NoError(t, p.Close())
	got, _ := loadAll(t, fs)
	require.Equal(t, want, got)
}

// A stop between a retiring's rename and its removal of the recycled file
// before leaves two: the next open keeps the newest only.
func TestOpenKeepsOneRecycledCommitLogFile(t *testing.T) {
	fs := vfs.NewMem()
	p, s, f, _ := logStore(t, fs, 0)
	decide(t, s, "a", 5)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Flush())
	require.NoError(t, p.Close())
	extra, err := fs.Create(fs.PathJoin("/store", commitLogFreeName(7)), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, extra.Close())

	p, _, _, _ = logStore(t, fs, 0)
	require.NoError(t, p.Close())
	names, err := fs.List("/store")
	require.NoError(t, err)
	var frees []string
	for _, name := range names {
		if strings.HasPrefix(name, commitLogFree) {
			frees = append(frees, name)
		}
	}
	require.Equal(t, []string{commitLogFreeName(7)}, frees)
}

// BenchmarkCheckpointApply is a checkpoint's work in memory (applyLogged):
// the newest of 262,144 logged changes (the checkpointChanges bound) of 100,000
// keys, sorted, applied to a backend in a map. An op is one checkpoint.
func BenchmarkCheckpointApply(b *testing.B) {
	logged := make([]Change, checkpointChanges)
	for i := range logged {
		logged[i] = Change{Key: fmt.Sprintf("key:%d", (i*7919)%100_000), TAT: t0 + gcra.Instant(i), Kind: KindTAT}
	}
	f := NewFlusher(New(Config{}), newMemoryBackend(), FlusherOptions{Now: fixedClock})
	changes := make([]Change, len(logged))
	for b.Loop() {
		copy(changes, logged)
		if _, err := f.applyLogged(changes, t0); err != nil {
			b.Fatal(err)
		}
	}
}
