package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
)

// slowBackend is a storage.LoggingBackend whose writes take d and fail with
// err; what the observer passes through is not called.
type slowBackend struct {
	storage.LoggingBackend
	d   time.Duration
	err error
}

func (b *slowBackend) Apply([]storage.Change, gcra.Instant, bool) error {
	time.Sleep(b.d)
	return b.err
}

func (b *slowBackend) Log([]storage.Change, gcra.Instant) error {
	time.Sleep(b.d)
	return b.err
}

func histogramOf(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram()
}

// TestFlushObserverTimesEveryWriteOfEitherPath: Apply (a flush) and Log (a
// group commit in durable mode) are both counted with their keys, Log alone
// in the commit log's fsync histogram, the last
// good write's time is set only by a success, and a slow write is logged
// once per slowFlushLogEvery.
func TestFlushObserverTimesEveryWriteOfEitherPath(t *testing.T) {
	var logs bytes.Buffer
	b := &slowBackend{d: slowFlushFloor + time.Millisecond}
	o := newFlushObserver(b, 0, slog.New(slog.NewTextHandler(&logs, nil)))

	changes := make([]storage.Change, 3)
	require.NoError(t, o.Apply(changes, 0, true))
	require.NoError(t, o.Log(changes[:2], 0))
	h := histogramOf(t, o.keys)
	require.Equal(t, uint64(2), h.GetSampleCount())
	require.Equal(t, 5.0, h.GetSampleSum(), "keys written by both writes")
	sync := histogramOf(t, o.logSync)
	require.Equal(t, uint64(1), sync.GetSampleCount(), "the group commit's fsync only, not the flush")
	require.GreaterOrEqual(t, sync.GetSampleSum(), b.d.Seconds())

	var g dto.Metric
	require.NoError(t, o.lastOK.Write(&g))
	ok := g.GetGauge().GetValue()
	require.InDelta(t, float64(time.Now().Unix()), ok, 5)

	b.err = errors.New("disk full")
	require.Error(t, o.Apply(changes, 0, true))
	require.NoError(t, o.lastOK.Write(&g))
	require.Equal(t, ok, g.GetGauge().GetValue(), "a failed write is not a success")
	require.Equal(t, uint64(3), histogramOf(t, o.keys).GetSampleCount())
	require.Error(t, o.Log(changes, 0))
	require.Equal(t, uint64(2), histogramOf(t, o.logSync).GetSampleCount(), "a failed fsync's wait counts too")

	require.Equal(t, 1, strings.Count(logs.String(), "slow flush to disk"), logs.String())
}
