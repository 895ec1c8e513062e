package storage

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// noReserve opens stores without a reserve file: tests of other things.
var noReserve = PebbleOptions{Reserve: -1}

// openPebble opens dir and returns the keys live at now.
func openPebbleAt(t testing.TB, dir string, opts PebbleOptions, now gcra.Instant) (*PebbleBackend, map[string]gcra.Instant, LoadStats) {
	t.Helper()
	got := map[string]gcra.Instant{}
	p, stats, err := OpenPebble(dir, opts, now, func(k []byte, _ Kind, tat gcra.Instant, _ []byte) error {
		got[string(k)] = tat
		return nil
	})
	require.NoError(t, err)
	return p, got, stats
}

func openPebble(t testing.TB, dir string) (*PebbleBackend, map[string]gcra.Instant) {
	t.Helper()
	p, got, _ := openPebbleAt(t, dir, noReserve, t0)
	return p, got
}

func TestPebbleRoundTripAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	p, got := openPebble(t, dir)
	require.Empty(t, got)
	require.NoError(t, p.Apply([]Change{
		{Key: "a", TAT: t0 + sec(10)},
		{Key: "b", TAT: t0 + sec(20)},
		{Key: "gone", TAT: t0 + sec(5)},
		{Key: "gone"},                     // deleted later in the same batch
		{Key: "a", TAT: t0 + sec(11)},     // the later change wins
		{Key: "bin\x00\xff", TAT: t0 + 1}, // keys are binary-safe
	}, 0, true))
	require.NoError(t, p.Close())

	p, got = openPebble(t, dir)
	defer p.Close()
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(11), "b": t0 + sec(20), "bin\x00\xff": t0 + 1}, got)
}

// Apply reuses one batch: each write carries only its own changes, and a
// Sync after unsynced writes keeps them all.
func TestPebbleReusedBatchAndSync(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	require.NoError(t, p.Apply([]Change{{Key: "a", TAT: t0 + sec(10)}, {Key: "b", TAT: t0 + sec(10)}}, 0, false))
	require.NoError(t, p.Apply([]Change{{Key: "b"}, {Key: "c", TAT: t0 + sec(30)}}, 0, false))
	require.NoError(t, p.Apply(nil, 0, false))
	require.NoError(t, p.Sync())
	require.NoError(t, p.Close())

	p, got := openPebble(t, dir)
	defer p.Close()
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(10), "c": t0 + sec(30)}, got)
}

// Opening loads the live keys and leaves the stale ones on disk: a clock
// that starts 48 hours fast must not delete every limit. DeleteStale, run by
// the flusher later, removes what is stale then.
func TestPebbleOpenLeavesStaleKeysOnDiskUntilDeleteStale(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	require.NoError(t, p.Apply([]Change{{Key: "old", TAT: t0 - 1}, {Key: "now", TAT: t0}, {Key: "new", TAT: t0 + 1}}, 0, true))
	require.NoError(t, p.Close())

	fast := t0 + sec(48*3600)
	p, got, stats := openPebbleAt(t, dir, noReserve, fast)
	require.Empty(t, got, "with the clock 48h fast every key looks stale")
	require.Equal(t, LoadStats{Stale: 3}, stats)
	require.NoError(t, p.Close())

	p, got, stats = openPebbleAt(t, dir, noReserve, t0)
	require.Equal(t, map[string]gcra.Instant{"new": t0 + 1}, got, "the clock put right: the live key is back")
	require.Equal(t, LoadStats{Loaded: 1, Stale: 2}, stats)
	n, err := p.DeleteStale(t0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoError(t, p.Close())

	p, got, stats = openPebbleAt(t, dir, noReserve, t0-sec(100))
	defer p.Close()
	require.Equal(t, map[string]gcra.Instant{"new": t0 + 1}, got, "even seen from the past, the stale ones are gone")
	require.Equal(t, LoadStats{Loaded: 1}, stats)
}

// hashTree fingerprints every file under dir (name, size, content).
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = sha256.Sum256(data)
		return nil
	}))
	return out
}

func TestPebbleCorruptStoreFailsAndIsLeftAsFound(t *testing.T) {
	// A garbage MANIFEST; and a garbage CURRENT (the LevelDB/RocksDB way of
	// naming the MANIFEST, where Pebble v2 uses marker files).
	for _, victim := range []string{"MANIFEST-", "CURRENT"} {
		t.Run(victim, func(t *testing.T) {
			dir := t.TempDir()
			p, _ := openPebble(t, dir)
			require.NoError(t, p.Apply([]Change{{Key: "a", TAT: t0 + sec(10)}}, 0, true))
			require.NoError(t, p.Close())

			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			garbage := []byte("garbage\x00\x01\x02 not a pebble file\n")
			corrupted := 0
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), victim) {
					require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), garbage, 0o644))
					corrupted++
				}
			}
			if victim == "CURRENT" {
				// A CURRENT naming a MANIFEST that is garbage, beside ours.
				require.NoError(t, os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000009\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "MANIFEST-000009"), garbage, 0o644))
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), "marker.manifest.") {
						require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
					}
				}
				corrupted++
			}
			require.NotZero(t, corrupted)
			before := hashTree(t, dir)

			_, _, err = OpenPebble(dir, noReserve, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
			require.Error(t, err)
			require.Contains(t, err.Error(), dir, "the error names the directory")
			require.Equal(t, before, hashTree(t, dir), "a failed open changes no file")
		})
	}
}

func TestPebbleRefusesAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte(formatKey), []byte("redcell/99"), pebble.Sync))
	require.NoError(t, db.Close())

	_, _, err = OpenPebble(dir, noReserve, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.ErrorIs(t, err, ErrUnknownFormat)
	require.Contains(t, err.Error(), "redcell/99")
}

func TestPebbleRefusesAForeignStore(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("someone else's key"), []byte("v"), pebble.Sync))
	require.NoError(t, db.Close())

	_, _, err = OpenPebble(dir, noReserve, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.ErrorIs(t, err, ErrUnknownFormat)
}

// fillStore makes n live keys in a tracking store.
func fillStore(tb testing.TB, n int) *Store {
	s := New(Config{TrackChanges: true})
	r := mustRate(tb, 99, 1, 3600, 1)
	for i := 0; i < n; i++ {
		_, err := s.Throttle(fmt.Appendf(nil, "key:%d", i), r, t0)
		require.NoError(tb, err)
	}
	return s
}

// BenchmarkFlushMillionKeys: one flush of 1M changed keys to Pebble with
// sync, and the disk size it leaves (reported as MB-on-disk).
func BenchmarkFlushMillionKeys(b *testing.B) {
	const n = 1_000_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := fillStore(b, n)
		p, _ := openPebble(b, b.TempDir())
		f := NewFlusher(s, p, FlusherOptions{Now: fixedClock})
		b.StartTimer()
		require.NoError(b, f.Flush())
		b.StopTimer()
		require.NoError(b, p.db.Flush())
		b.ReportMetric(float64(p.DiskSize())/1e6, "MB-on-disk")
		require.NoError(b, p.Close())
	}
}

// BenchmarkLoadMillionKeys: start-up load of 1M live keys into a Store,
// reading the store through once read-only and opening it for writing.
func BenchmarkLoadMillionKeys(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	p, _ := openPebble(b, dir)
	require.NoError(b, NewFlusher(fillStore(b, n), p, FlusherOptions{Now: fixedClock}).Flush())
	require.NoError(b, p.Close())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := New(Config{TrackChanges: true})
		p, stats, err := OpenPebble(dir, noReserve, t0, s.Restore)
		require.NoError(b, err)
		require.Equal(b, n, stats.Loaded)
		require.NoError(b, p.Close())
	}
}

// A table file with 16 bytes flipped: the start is refused before anything is
// written. (Opened for writing first, Pebble replayed and deleted the logs and
// wrote a new MANIFEST before the corruption surfaced.)
func TestPebbleCorruptTableIsRefusedAndLeftAsFound(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	changes := make([]Change, 0, 2000)
	for i := 0; i < 2000; i++ {
		changes = append(changes, Change{Key: fmt.Sprintf("key:%d", i), TAT: t0 + sec(3600)})
	}
	require.NoError(t, p.Apply(changes, 0, true))
	require.NoError(t, p.db.Flush()) // into a table file
	require.NoError(t, p.Apply([]Change{{Key: "in-the-log", TAT: t0 + sec(60)}}, 0, true))
	require.NoError(t, p.Close())

	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	data, err := os.ReadFile(tables[0])
	require.NoError(t, err)
	for i := 100; i < 116; i++ {
		data[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(tables[0], data, 0o644))
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs, "a log to replay, which opening for writing would rewrite")
	before := hashTree(t, dir)

	_, _, err = OpenPebble(dir, PebbleOptions{}, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.Error(t, err)
	require.Contains(t, err.Error(), "open store "+dir)
	require.Contains(t, err.Error(), "checksum")
	require.Equal(t, before, hashTree(t, dir), "a refused store is left byte for byte as it was")
}

// A store opened on a wall clock behind its last save (stepped back while
// the process was down, or fast before it) moves every instant back by the
// difference: no key is limited for longer than it was at the save. It is
// rewritten so, and records the open as its last save: opened again on the
// same clock, nothing moves twice. A clock ahead of the save is not
// corrected: it cannot be told from the time the process was down.
func TestPebbleCorrectsAClockBehindTheLastSave(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	ws := windowState(t, t0-sec(30))
	require.NoError(t, p.Apply([]Change{
		{Key: "tat", TAT: t0 + sec(600)},
		{Key: "win", TAT: t0 + sec(30), Kind: KindWindow, Value: string(ws)},
	}, t0, true))
	require.NoError(t, p.Close())

	back := t0 - sec(3600) + sec(5) // an hour back, five seconds down
	p, got, stats := openPebbleAt(t, dir, noReserve, back)
	require.Equal(t, LoadStats{Loaded: 2, Behind: 3595 * time.Second}, stats)
	require.Equal(t, back+sec(600), got["tat"], "limited for the 600 s it was at the save, not an hour more")
	require.Equal(t, back+sec(30), got["win"])
	require.NoError(t, p.Close())

	states := map[string][]byte{}
	p, stats, err := OpenPebble(dir, noReserve, back+sec(1), func(k []byte, _ Kind, _ gcra.Instant, v []byte) error {
		states[string(k)] = bytes.Clone(v)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, LoadStats{Loaded: 2}, stats, "rewritten in the clock's frame: nothing to correct again")
	require.Equal(t, window.Shift(ws, -3595*time.Second, nil), states["win"], "the window's instants moved with it")
	require.NoError(t, p.Close())

	ahead := back + sec(3600)
	p, got, stats = openPebbleAt(t, dir, noReserve, ahead)
	defer p.Close()
	require.Equal(t, LoadStats{Stale: 2}, stats, "an hour ahead: both look expired, and are kept on disk")
	require.Empty(t, got)
}

// windowState is an exact log's state holding one call at at.
func windowState(t *testing.T, at gcra.Instant) []byte {
	t.Helper()
	spec, err := window.NewSpec(5, 60, 1, 0, window.DefaultLogMax)
	require.NoError(t, err)
	_, state, _, store := window.Decide(spec, nil, at, nil)
	require.True(t, store)
	return state
}
