package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/redcell/redcell/gcra"
)

// On-disk format, version 3.
//
//	"\x00format"   -> "redcell/3"             written when the store is created
//	"\x00saved"    -> the wall-clock instant of the last save that wrote
//	                  changes: 8 bytes big-endian nanoseconds since the Unix
//	                  epoch, written in the same batch as the changes
//	"t" + key      -> a TAT key: its TAT, 8 bytes big-endian nanoseconds since
//	                  the Unix epoch (a wall-clock instant)
//	               -> a key of another kind: its expiry (8 bytes, likewise),
//	                  its Kind (1 byte), then its state (package window's)
//
// Versions 1 ("redcell/1": TAT keys only) and 2 (no saved instant) are read
// as they are, and the marker is rewritten once the store has been read
// through. A store whose format marker is missing (but which holds data) or
// names another version is refused at open, never rewritten.
const (
	formatKey     = "\x00format"
	savedKey      = "\x00saved"
	formatVersion = "redcell/3"
	formatV2      = "redcell/2"
	formatV1      = "redcell/1"
	tatPrefix     = 't'
)

// Loader receives each live key a store holds as it opens: its kind, its
// expiry (a TAT key's TAT) and, for a boxed kind, its state (a view, valid
// during the call). Store.Restore is one.
type Loader func(key []byte, kind Kind, exp gcra.Instant, value []byte) error

// Errors of OpenPebble.
var (
	// ErrUnknownFormat: the store was written in another format.
	ErrUnknownFormat = errors.New("storage: unknown on-disk format")
	// ErrLocked: another process has the store open.
	ErrLocked = errors.New("storage: the store is locked by another process")
)

var _ Backend = (*PebbleBackend)(nil)

// PebbleOptions configure OpenPebble. The zero value takes every default.
type PebbleOptions struct {
	Logger *slog.Logger
	// Reserve is the disk space held back in the store's reserve file
	// (reserveFile) and given to Pebble when the disk fills: see
	// DefaultReserve.
	// The default is DefaultReserve; negative holds none.
	Reserve int64
	// StallTimeout bounds one write or sync: one that takes longer fails
	// with ErrStalled and the store is not written again until it
	// returns. The default is DefaultStallTimeout.
	StallTimeout time.Duration
	// FS is the file system the store lives on. The default is the
	// operating system's (vfs.Default); tests inject faults through it.
	FS vfs.FS
}

// LoadStats describe what opening a store read back.
type LoadStats struct {
	// Loaded keys were live and handed to the load function.
	Loaded int
	// Stale keys had a TAT at or before now: not loaded, and left on disk
	// (Flusher.CleanStale removes them later; see there for why not now).
	Stale int
	// Behind is how far the wall clock at the open was behind the store's
	// last save (zero when it was not): every instant the store held was
	// moved back by it, as loaded and on disk (clockCorrection).
	Behind time.Duration
}

// PebbleBackend stores TATs in a Pebble database. It is safe for concurrent
// use, though the Flusher only ever writes from one goroutine at a time.
type PebbleBackend struct {
	db   *pebble.DB
	dir  string
	disk *disk

	mu    sync.Mutex    // serializes writes, which reuse batch
	batch *pebble.Batch // reused, so its buffer is allocated once

	commitLogState // durable mode's log (CommitLog)
}

// OpenPebble opens (or creates) the store in dir and calls load for every
// key whose TAT is after now, in key order.
//
// now is the wall clock. Found behind the store's last save (the clock
// stepped back while the process was down, or it ran fast before), every
// instant the store holds is first moved back by the difference, so that
// no key is limited for longer than it was at the save, and the store is
// rewritten so (LoadStats.Behind). A clock found ahead is not corrected: it
// cannot be told from the time the process was down, and it only lets keys
// expire sooner.
//
// An existing store is first opened read-only and read through, every block
// checked against its checksum, with its format marker; only a store read
// through cleanly is opened for writing (which replays and rewrites its
// log). So a store that cannot be opened, whatever is wrong with it, is left
// byte for byte as it was, and the error names dir. A store in use by
// another process is ErrLocked; a disk without room for the reserve
// (PebbleOptions.Reserve) and as much again is ErrDiskFull.
func OpenPebble(dir string, opts PebbleOptions, now gcra.Instant, load Loader) (*PebbleBackend, LoadStats, error) {
	fail := func(err error) (*PebbleBackend, LoadStats, error) {
		return nil, LoadStats{}, fmt.Errorf("open store %s: %w", dir, err)
	}
	opts = opts.withDefaults()
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	// Hold the lock from before the read-through until the store is open
	// for writing, so that no other process can open it in between.
	lock, err := pebble.LockDirectory(dir, opts.FS)
	if err != nil {
		if isLockedError(err) {
			err = lockedError(dir)
		}
		return fail(err)
	}
	defer lock.Close() // the open DB holds its own reference
	exists, err := pebbleExists(opts.FS, dir)
	if err != nil {
		return fail(err)
	}
	d := newDisk(opts.FS, dir, opts.Reserve, opts.StallTimeout, opts.Logger)
	seqs, free, err := commitLogFiles(opts.FS, dir)
	if err != nil {
		return fail(err)
	}
	var logSeq uint64 // numbers of the commit log files start past it
	if len(seqs) > 0 {
		logSeq = seqs[len(seqs)-1]
		if free, err = replayOnOpen(dir, opts, d, lock, now, exists, seqs, free); err != nil {
			return fail(fmt.Errorf("apply the commit log: %w", err))
		}
		exists = true
	}
	var stats LoadStats
	version := formatVersion
	if exists {
		if stats, version, err = readThrough(dir, opts, lock, now, load); err != nil {
			return fail(err)
		}
	}
	if err := d.acquireReserve(); err != nil {
		return fail(err)
	}
	popts := d.pebbleOptions()
	popts.Lock = lock
	var db *pebble.DB
	// Opening replays the log and may write: bounded like a write, with
	// room for a long log.
	err = d.doWithin(max(opts.StallTimeout, time.Minute), func() (err error) {
		db, err = pebble.Open(dir, popts)
		return err
	})
	if err != nil {
		return fail(err)
	}
	if !exists || version != formatVersion {
		// A new store, or one of an earlier version read through
		// cleanly: this build writes version 3 (which earlier builds
		// refuse).
		if err := db.Set([]byte(formatKey), []byte(formatVersion), pebble.Sync); err != nil {
			_ = db.Close()
			return fail(fmt.Errorf("write format marker: %w", err))
		}
	}
	if stats.Behind > 0 {
		err = d.doWithin(max(opts.StallTimeout, time.Minute), func() error { return shiftStore(db, -stats.Behind, now) })
		if err != nil {
			_ = db.Close()
			return fail(fmt.Errorf("correct for the clock %v behind the last save: %w", stats.Behind, err))
		}
	}
	p := &PebbleBackend{db: db, dir: dir, disk: d}
	p.log.seq, p.free = max(logSeq, free), free
	return p, stats, nil
}

// replayOnOpen applies the commit log files a crash in durable mode left
// (replayCommitLogs) before the store is read: an existing store is read
// through first, as every open does, so that one which cannot be opened is
// not written; then it is opened for writing, the files applied and synced,
// and closed again.
func replayOnOpen(dir string, opts PebbleOptions, d *disk, lock *pebble.Lock, now gcra.Instant, exists bool, seqs []uint64, free uint64) (uint64, error) {
	version := formatVersion
	if exists {
		var err error
		_, version, err = readThrough(dir, opts, lock, now, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
		if err != nil {
			return free, err
		}
	}
	popts := d.pebbleOptions()
	popts.Lock = lock
	err := d.doWithin(max(opts.StallTimeout, time.Minute), func() error {
		db, err := pebble.Open(dir, popts)
		if err != nil {
			return err
		}
		if !exists || version != formatVersion {
			err = db.Set([]byte(formatKey), []byte(formatVersion), pebble.NoSync)
		}
		var n int
		if err == nil {
			n, free, err = replayCommitLogs(db, opts.FS, dir, seqs, free)
		}
		if err == nil {
			opts.Logger.Info("applied the commit log left by a stop in durable mode", "dir", dir, "files", len(seqs), "changes", n)
		}
		return errors.Join(err, db.Close())
	})
	return free, err
}

func (o PebbleOptions) withDefaults() PebbleOptions {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Reserve == 0 {
		o.Reserve = DefaultReserve
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	return o
}

// isLockedError reports whether err is the lock being held: by another
// process (fcntl's EAGAIN or EACCES) or by this one (Pebble's own check).
func isLockedError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "lock held by current process")
}

// lockedError says who holds the store, and what to do, where Pebble would
// say only "resource temporarily unavailable".
func lockedError(dir string) error {
	return fmt.Errorf("%w: another process holds the lock on %s; is another redcell running with --dir %s?",
		ErrLocked, filepath.Join(dir, "LOCK"), dir)
}

// pebbleExists reports whether dir already holds a Pebble store.
func pebbleExists(fs vfs.FS, dir string) (bool, error) {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, name := range names {
		if name == "CURRENT" || filepath.Ext(name) == ".sst" || strings.HasPrefix(name, "MANIFEST") || filepath.Ext(name) == ".log" {
			return true, nil
		}
	}
	return false, nil
}

// Apply writes changes in one batch, in order. Pebble inserts a batch into
// its memtable's skiplist with a cursor from the previous key, so keys in
// order (the Flusher sorts them) cost a step each instead of a search from
// the top.
//
// Before writing, it checks that the disk has room (disk.room): on a full
// disk it fails with ErrDiskFull and writes nothing. A write that takes
// longer than the stall timeout fails with ErrStalled; one that makes Pebble
// fail for good fails with ErrBroken, as does every call after it.
func (p *PebbleBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := 0
	for _, c := range changes {
		size += c.batchSize()
	}
	if err := p.disk.room(int64(size)); err != nil {
		return err
	}
	// The batch is filled here, copying the changes: the caller reuses
	// them once Apply returns, which may be before a stuck commit does.
	if p.batch == nil {
		p.batch = p.db.NewBatch()
	}
	b := p.batch
	var k, v []byte
	for _, c := range changes {
		k = tatKey(k, c.Key)
		var err error
		if c.TAT == 0 {
			err = b.Delete(k, nil)
		} else {
			v = encodeValue(v, c)
			err = b.Set(k, v, nil)
		}
		if err != nil {
			b.Reset()
			return err
		}
	}
	if saved != 0 {
		if err := b.Set([]byte(savedKey), binary.BigEndian.AppendUint64(v[:0], uint64(saved)), nil); err != nil {
			b.Reset()
			return err
		}
	}
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	return p.disk.do(func() error {
		defer b.Reset() // before do's caller may write again: see disk.usable
		return b.Commit(opts)
	})
}

// Sync syncs Pebble's write-ahead log, which holds every Apply so far.
func (p *PebbleBackend) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.disk.room(0); err != nil {
		return err
	}
	return p.disk.do(func() error { return p.db.LogData(nil, pebble.Sync) })
}

// DeleteStale deletes every key whose TAT is at or before now, in batches.
func (p *PebbleBackend) DeleteStale(now gcra.Instant) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.disk.room(0); err != nil {
		return 0, err
	}
	deleted := 0
	err := p.disk.do(func() error {
		it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tatPrefix}, UpperBound: []byte{tatPrefix + 1}})
		if err != nil {
			return err
		}
		stale := p.db.NewBatch()
		defer stale.Close()
		for it.First(); it.Valid(); it.Next() {
			if v := it.Value(); len(v) >= 8 && gcra.Instant(binary.BigEndian.Uint64(v)) <= now {
				if err := stale.Delete(it.Key(), nil); err != nil {
					_ = it.Close()
					return err
				}
				deleted++
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		if deleted == 0 {
			return nil
		}
		return stale.Commit(pebble.Sync)
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}

// DiskSize is the bytes the store's files take, the reserve aside. It reads
// the directory, not Pebble, so it answers even while Pebble is stuck.
func (p *PebbleBackend) DiskSize() int64 { return p.disk.used() }

// Close closes the database, unless a write is still stuck in it or it has
// failed for good: closing would wait for that write forever, or panic.
// Then Close reports why the store is left as it is; the process's exit
// releases it.
func (p *PebbleBackend) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.disk.usable(); err != nil {
		return fmt.Errorf("store %s left open: %w", p.dir, err)
	}
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.disk.do(func() error {
		p.log.close() // its records stay for the next open
		if p.batch != nil {
			_ = p.batch.Close()
			p.batch = nil
		}
		return p.db.Close()
	})
}

// batchFull reports whether a Pebble batch that a rewrite fills key by key
// (the load's, the commit log's replay) is to be committed: the bounds of
// batchLen.
func batchFull(b *pebble.Batch) bool { return b.Count() >= flushBatch || b.Len() >= flushBatchBytes }
