package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// state is the keyspace and, unless persistence is off, its Pebble store.
type state struct {
	clock    *clock.Clock
	store    *storage.Store
	backend  *storage.PebbleBackend // nil when persistence is off
	flusher  *storage.Flusher       // nil when persistence is off
	flushes  *flushObserver         // the flusher's writes; nil when persistence is off
	loaded   int
	loadTime time.Duration
}

// openState opens the store under cfg.Dir and loads every live key from it,
// as of clk. The open is given up when ctx ends first (SIGTERM during a
// start that waits on the disk).
func openState(ctx context.Context, cfg config.Config, clk *clock.Clock, logger *slog.Logger) (*state, error) {
	policy, _ := storage.ParseEvictionPolicy(cfg.MaxMemoryPolicy) // checked by Validate
	scfg := storage.Config{Shards: cfg.Shards, MaxMemory: cfg.MaxMemory, Eviction: policy, BySlot: cfg.ClusterMode()}
	if cfg.InMemory {
		logger.Warn("persistence is off: state is lost on restart")
		return &state{clock: clk, store: storage.New(scfg)}, nil
	}
	scfg.TrackChanges = true
	st := &state{clock: clk, store: storage.New(scfg)}
	type opened struct {
		backend *storage.PebbleBackend
		stats   storage.LoadStats
		err     error
	}
	done := make(chan opened, 1)
	start := time.Now()
	go func() {
		reserve := cfg.DiskReserve
		if reserve == 0 {
			reserve = -1 // storage's "none"; its zero is the default
		}
		b, stats, err := storage.OpenPebble(cfg.Dir, storage.PebbleOptions{Logger: logger, Reserve: reserve},
			gcra.InstantOf(clk.Now()), st.store.Restore)
		done <- opened{b, stats, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("open store %s: interrupted before it opened", cfg.Dir)
	}
	if o.err != nil {
		return nil, o.err
	}
	st.backend, st.loaded, st.loadTime = o.backend, o.stats.Loaded, time.Since(start)
	if o.stats.Behind > 0 {
		logger.Warn("the wall clock is behind the store's last save (stepped back while redcell was down, or fast before): every saved instant was moved back by the difference, so no key stays limited longer than it was at the save",
			"dir", cfg.Dir, "behind", o.stats.Behind)
	}
	logger.Info("loaded state", "dir", cfg.Dir, "keys", o.stats.Loaded, "stale_kept", o.stats.Stale, "duration", st.loadTime)
	st.flushes = newFlushObserver(st.backend, cfg.FlushInterval, logger)
	fopts := storage.FlusherOptions{
		Now:        clk.Wall,
		WallOffset: clk.WallOffset,
		Logger:     logger.With("dir", cfg.Dir),
	}
	if cfg.FlushInterval == 0 {
		fopts.Log = st.flushes // durable mode: each group commit appends to the commit log
	}
	st.flusher = storage.NewFlusher(st.store, st.flushes, fopts)
	return st, nil
}

func (st *state) persistence() server.Persistence {
	if st.flusher == nil {
		return nil // not a typed nil: the server checks for nil
	}
	return st.flusher
}

// close writes every change on the way out (unless save is false), then
// closes the store. On a full or failing disk the save fails within the
// store's stall timeout, is reported, and the process exits anyway.
func (st *state) close(save bool, logger *slog.Logger) error {
	if st.backend == nil {
		return nil
	}
	// A BGSAVE begun before the stop may still be writing, and Pebble
	// panics when closed under it. No command runs any more (Serve has
	// returned), so none can begin another.
	st.flusher.Wait()
	var err error
	if save {
		start := time.Now()
		if err = st.flusher.Flush(); err == nil {
			logger.Info("saved state", "keys", st.flusher.Stats().LastCount, "duration", time.Since(start))
		} else {
			logger.Error("the final save failed; changes since the last good flush are lost", "pending", st.flusher.Pending(), "err", err)
		}
	} else {
		logger.Info("exiting without the final save (SHUTDOWN NOSAVE)")
	}
	return errors.Join(err, st.backend.Close())
}
