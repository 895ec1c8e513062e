package storage

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"redcell/gcra"
)

func openPebble(t testing.TB, dir string) *PebbleBackend {
	t.Helper()
	p, err := OpenPebble(dir, nil)
	require.NoError(t, err)
	return p
}

func loadAll(t testing.TB, b Backend, now gcra.Instant) (map[string]gcra.Instant, int) {
	t.Helper()
	got := map[string]gcra.Instant{}
	_, deleted, err := b.Load(now, func(k []byte, tat gcra.Instant) { got[string(k)] = tat })
	require.NoError(t, err)
	return got, deleted
}

func TestPebbleRoundTripAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	p := openPebble(t, dir)
	require.NoError(t, p.Apply([]Change{
		{Key: "a", TAT: t0 + sec(10)},
		{Key: "b", TAT: t0 + sec(20)},
		{Key: "gone", TAT: t0 + sec(5)},
		{Key: "gone"},                     // deleted later in the same batch
		{Key: "a", TAT: t0 + sec(11)},     // the later change wins
		{Key: "bin\x00\xff", TAT: t0 + 1}, // keys are binary-safe
	}, true))
	require.NoError(t, p.Close())

	p = openPebble(t, dir)
	defer p.Close()
	got, deleted := loadAll(t, p, t0)
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(11), "b": t0 + sec(20), "bin\x00\xff": t0 + 1}, got)
	require.Zero(t, deleted)
}

// Apply reuses one batch: each write carries only its own changes, and a
// Sync after unsynced writes keeps them all.
func TestPebbleReusedBatchAndSync(t *testing.T) {
	dir := t.TempDir()
	p := openPebble(t, dir)
	require.NoError(t, p.Apply([]Change{{Key: "a", TAT: t0 + sec(10)}, {Key: "b", TAT: t0 + sec(10)}}, false))
	require.NoError(t, p.Apply([]Change{{Key: "b"}, {Key: "c", TAT: t0 + sec(30)}}, false))
	require.NoError(t, p.Apply(nil, false))
	require.NoError(t, p.Sync())
	require.NoError(t, p.Close())

	p = openPebble(t, dir)
	defer p.Close()
	got, _ := loadAll(t, p, t0)
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(10), "c": t0 + sec(30)}, got)
}

func TestPebbleLoadDeletesExpiredKeys(t *testing.T) {
	dir := t.TempDir()
	p := openPebble(t, dir)
	require.NoError(t, p.Apply([]Change{{Key: "old", TAT: t0 - 1}, {Key: "now", TAT: t0}, {Key: "new", TAT: t0 + 1}}, true))
	got, deleted := loadAll(t, p, t0)
	require.Equal(t, map[string]gcra.Instant{"new": t0 + 1}, got)
	require.Equal(t, 2, deleted)
	require.NoError(t, p.Close())

	p = openPebble(t, dir)
	defer p.Close()
	got, deleted = loadAll(t, p, t0-sec(100)) // even seen from the past, they are gone
	require.Equal(t, map[string]gcra.Instant{"new": t0 + 1}, got)
	require.Zero(t, deleted)
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
			p := openPebble(t, dir)
			require.NoError(t, p.Apply([]Change{{Key: "a", TAT: t0 + sec(10)}}, true))
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

			_, err = OpenPebble(dir, nil)
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

	_, err = OpenPebble(dir, nil)
	require.ErrorIs(t, err, ErrUnknownFormat)
	require.Contains(t, err.Error(), "redcell/99")
}

func TestPebbleRefusesAForeignStore(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("someone else's key"), []byte("v"), pebble.Sync))
	require.NoError(t, db.Close())

	_, err = OpenPebble(dir, nil)
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
		p := openPebble(b, b.TempDir())
		f := NewFlusher(s, p, fixedClock)
		b.StartTimer()
		require.NoError(b, f.Flush(true))
		b.StopTimer()
		require.NoError(b, p.db.Flush())
		b.ReportMetric(float64(p.DiskSize())/1e6, "MB-on-disk")
		require.NoError(b, p.Close())
	}
}

// BenchmarkLoadMillionKeys: start-up load of 1M live keys into a Store.
func BenchmarkLoadMillionKeys(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	p := openPebble(b, dir)
	require.NoError(b, NewFlusher(fillStore(b, n), p, fixedClock).Flush(true))
	require.NoError(b, p.Close())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := openPebble(b, dir)
		s := New(Config{TrackChanges: true})
		loaded, _, err := LoadInto(s, p, t0)
		require.NoError(b, err)
		require.Equal(b, n, loaded)
		require.NoError(b, p.Close())
	}
}
