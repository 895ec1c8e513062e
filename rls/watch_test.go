package rls

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func rulesOf(limit string) string {
	return "domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n      requests_per_unit: " + limit + "\n"
}

func limitFor(t *testing.T, r *rig) uint32 {
	t.Helper()
	return r.call(t, request("api", withHits(desc(E{"user", "u"}), 0))).Statuses[0].GetCurrentLimit().GetRequestsPerUnit()
}

// Reloads: a changed file is put in force; an unchanged one is not loaded
// again; a bad one is refused with its file, line and reason, counted, and
// the rules in force stay.
func TestReloadGoodAndBad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rulesOf("5")), 0o644))
	r := newRig(t, nil, Options{}, referenceNow)
	m := NewMetrics()
	w := &Watcher{Path: dir, Service: r.svc, Metrics: m}
	require.NoError(t, w.Load())
	require.Equal(t, uint32(5), limitFor(t, r))

	changed, err := w.Check()
	require.NoError(t, err)
	require.False(t, changed)

	require.NoError(t, os.WriteFile(path, []byte(rulesOf("7")), 0o644))
	changed, err = w.Check()
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, uint32(7), limitFor(t, r))

	require.NoError(t, os.WriteFile(path, []byte(rulesOf("-3")), 0o644))
	changed, err = w.Check()
	require.True(t, changed)
	require.EqualError(t, err, path+`:6: requests_per_unit must be an integer between 0 and 4294967295, not "-3"`)
	require.Equal(t, uint32(7), limitFor(t, r), "the rules in force stay")
	require.Equal(t, 1.0, testutil.ToFloat64(m.loads.WithLabelValues("error")))
	require.Equal(t, 2.0, testutil.ToFloat64(m.loads.WithLabelValues("success")))

	// A second file with the same domain is refused too, naming it.
	other := filepath.Join(dir, "zz.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rulesOf("8")), 0o644))
	require.NoError(t, os.WriteFile(other, []byte(rulesOf("9")), 0o644))
	_, err = w.Check()
	require.EqualError(t, err, other+":1: duplicate domain 'api' in config file")
	require.NoError(t, os.Remove(other))
	_, err = w.Check()
	require.NoError(t, err)
	require.Equal(t, uint32(8), limitFor(t, r))
}

// A Kubernetes ConfigMap's mount: each key a link through ..data to a
// timestamped directory, updated by pointing ..data at a new one in one
// rename. The dot entries are not read twice, and the swap is seen.
func TestReloadConfigMapSymlinkSwap(t *testing.T) {
	mount := t.TempDir()
	version := func(name, limit string) {
		require.NoError(t, os.Mkdir(filepath.Join(mount, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(mount, name, "rules.yaml"), []byte(rulesOf(limit)), 0o644))
		tmp := filepath.Join(mount, "..data_tmp")
		require.NoError(t, os.Symlink(name, tmp))
		require.NoError(t, os.Rename(tmp, filepath.Join(mount, "..data")))
	}
	version("..2026_12_01_10_00_00.1", "3")
	require.NoError(t, os.Symlink("..data/rules.yaml", filepath.Join(mount, "rules.yaml")))

	r := newRig(t, nil, Options{}, referenceNow)
	w := &Watcher{Path: mount, Service: r.svc}
	require.NoError(t, w.Load())
	require.Equal(t, uint32(3), limitFor(t, r))

	version("..2026_12_01_10_05_00.2", "4")
	changed, err := w.Check()
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, uint32(4), limitFor(t, r))
	require.Equal(t, []string{filepath.Join(mount, "rules.yaml")}, r.svc.Rules().Files)
}
