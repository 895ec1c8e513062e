package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A full or failing disk must never crash redcell, hang it, or cost a
// decision: state lives in memory, and the store on disk only follows it.
// Pebble, though, treats a failed write to its log or manifest as fatal: it
// panics or calls Logger.Fatalf, and its commit pipeline is left locked. So
// redcell keeps Pebble away from a full disk and contains what still goes
// wrong, as CockroachDB does over Pebble:
//
//   - A reserve: the store keeps a file of PebbleOptions.Reserve bytes in its
//     directory (reserveFile). Pebble's file system is wrapped in
//     vfs.OnDiskFull: the first write to find the disk full releases the
//     reserve, and Pebble retries that write once, into the room it freed.
//     So a write under way when another process fills the disk completes,
//     and Pebble's own background work (flushing memtables, compacting)
//     finishes instead of retrying in a tight loop.
//   - No write without room: before each write the free space is checked
//     (disk.room). With the reserve released, or less free than the write
//     needs, the write fails at once with ErrDiskFull and Pebble is not
//     called. The reserve is made again, and writes resume, once twice its
//     size is free.
//   - A watchdog: every call into Pebble's write path runs on its own
//     goroutine (disk.do). One that has not returned within the stall
//     timeout fails with ErrStalled, and no write is started until it
//     returns. A panic is recovered, and a Fatalf parks its goroutine, which
//     must not return; either marks the store broken (ErrBroken): Pebble's
//     state is no longer trusted, nothing more is written, and a restart
//     reopens it.
//
// The Flusher keeps every change whose write failed and writes it once the
// disk answers again.
const (
	// DefaultReserve is 16 MiB: four of Pebble's 4 MiB memtables, enough
	// for the writes under way when the disk fills to finish.
	DefaultReserve = 16 << 20
	// DefaultStallTimeout is how long one write or sync may take before
	// the disk is taken as stalled.
	DefaultStallTimeout = 10 * time.Second
	// reserveFile holds the reserve, beside Pebble's files.
	reserveFile = "redcell.reserve"
)

// Errors of a write to the store. Each leaves the store as it was before the
// write, and the Flusher keeps the changes it was writing.
var (
	// ErrDiskFull: there is no room for the write; nothing was written.
	ErrDiskFull = errors.New("storage: disk full")
	// ErrStalled: a write to the disk has not returned within the stall
	// timeout; the store is not written until it returns.
	ErrStalled = errors.New("storage: the disk has stalled")
	// ErrBroken: the store failed in a way it cannot recover from while
	// the process runs; a restart reopens it.
	ErrBroken = errors.New("storage: the store failed and is no longer written; restart redcell once the disk is fixed")
)

// disk is what a PebbleBackend knows of its disk: the reserve, the free
// space, the write that is stuck, and whether the store is broken.
type disk struct {
	fs      vfs.FS // unwrapped: the reserve file is written here, not through Pebble's wrapper
	dir     string
	reserve int64 // <= 0: none
	stall   time.Duration
	logger  *slog.Logger

	mu    sync.Mutex
	held  bool       // the reserve file is in place
	full  bool       // the last check found no room, or a write found the disk full
	stuck chan error // the result of a write that outlived the stall timeout, until it arrives

	breakOnce sync.Once
	broken    atomic.Pointer[error]
	brokenCh  chan struct{} // closed when broken is set

	bgFailures atomic.Int64 // consecutive failures of Pebble's background work
}

func newDisk(fs vfs.FS, dir string, reserve int64, stall time.Duration, logger *slog.Logger) *disk {
	return &disk{fs: fs, dir: dir, reserve: reserve, stall: stall, logger: logger, brokenCh: make(chan struct{})}
}

func (d *disk) reservePath() string { return d.fs.PathJoin(d.dir, reserveFile) }

// slack is the free space a write must leave beyond itself: Pebble flushes
// what is written to a table file later, which needs about as much again.
func (d *disk) slack() int64 {
	if d.reserve > 0 {
		return d.reserve / 4
	}
	return 1 << 20
}

// avail returns the bytes free for this process at the store, if the file
// system can tell.
func (d *disk) avail() (int64, bool) {
	u, err := d.fs.GetDiskUsage(d.dir)
	if err != nil {
		return 0, false
	}
	return int64(min(u.AvailBytes, 1<<62)), true
}

// acquireReserve makes sure the reserve is in place when the store opens,
// and refuses to open on a disk without room for it and as much again for
// the store to write to: a start on a full disk fails at once, saying so.
func (d *disk) acquireReserve() error {
	if d.reserve <= 0 {
		return nil
	}
	present := false
	if fi, err := d.fs.Stat(d.reservePath()); err == nil && fi.Size() == d.reserve {
		present = true
	}
	need := d.reserve
	if !present {
		need += d.reserve
	}
	if avail, ok := d.avail(); ok && avail < need {
		return fmt.Errorf("%w: %s free at %s; redcell needs %s free to start (its reserve of %s, kept in %s, and as much again to write to): free some space or start with a smaller --disk-reserve",
			ErrDiskFull, BytesText(avail), d.dir, BytesText(need), BytesText(d.reserve), reserveFile)
	}
	if !present {
		if err := d.makeReserve(); err != nil {
			return err
		}
	}
	d.held = true
	return nil
}

// makeReserve writes the reserve file: written, not preallocated, so that
// every file system holds its blocks; under a temporary name first, so that
// a half-written one is never taken for whole.
func (d *disk) makeReserve() error {
	tmp := d.reservePath() + ".tmp"
	f, err := d.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create the disk reserve: %w", err)
	}
	zeros := make([]byte, 1<<20)
	for left := d.reserve; left > 0 && err == nil; left -= int64(len(zeros)) {
		_, err = f.Write(zeros[:min(left, int64(len(zeros)))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.Rename(tmp, d.reservePath())
	}
	if err != nil {
		_ = d.fs.Remove(tmp)
		return fmt.Errorf("create the disk reserve: %w", err)
	}
	return nil
}

// onDiskFull runs when a write of Pebble's finds the disk full, with every
// other write of Pebble's waiting: it releases the reserve, and Pebble
// retries the write once.
func (d *disk) onDiskFull() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.held {
		return
	}
	err := d.fs.Remove(d.reservePath())
	d.held, d.full = false, true
	d.logger.Warn("disk full: released the store's reserve so that the writes under way complete; nothing more is written until there is room again",
		"dir", d.dir, "reserve", BytesText(d.reserve), "err", err)
}

// room reports whether a write of about n bytes may start: the store is
// usable, the reserve is in place (made again once twice its size is free),
// and the disk has n bytes and the slack free beyond it.
func (d *disk) room(n int64) error {
	if err := d.usable(); err != nil {
		return err
	}
	avail, known := d.avail()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full = true
	if d.reserve > 0 && !d.held {
		if !known || avail < 2*d.reserve+n {
			return fmt.Errorf("%w: %s free at %s; writes resume once %s is (the reserve of %s is released)",
				ErrDiskFull, BytesText(avail), d.dir, BytesText(2*d.reserve+n), BytesText(d.reserve))
		}
		if err := d.makeReserve(); err != nil {
			return fmt.Errorf("%w: %v", ErrDiskFull, err)
		}
		d.held = true
		avail -= d.reserve
		d.logger.Info("disk has room again: the store's reserve is back and writes resume", "dir", d.dir, "free", BytesText(avail))
	}
	if known && avail < n+d.slack() {
		return fmt.Errorf("%w: %s free at %s, a write of %s needs %s", ErrDiskFull, BytesText(avail), d.dir, BytesText(n), BytesText(n+d.slack()))
	}
	d.full = false
	return nil
}

// usable reports ErrBroken once the store has failed, and ErrStalled while a
// write that outlived the stall timeout has not returned.
func (d *disk) usable() error {
	if err := d.brokenErr(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stuck == nil {
		return nil
	}
	select {
	case err := <-d.stuck:
		d.stuck = nil
		d.logger.Info("the stalled write to the store returned; writes resume", "dir", d.dir, "err", err)
		return d.brokenErr()
	default:
		return fmt.Errorf("%w: a write to %s has not returned after %v", ErrStalled, d.dir, d.stall)
	}
}

// do runs op, a call into Pebble's write path, on its own goroutine and
// waits for it at most the stall timeout.
func (d *disk) do(op func() error) error {
	return d.doWithin(d.stall, op)
}

func (d *disk) doWithin(timeout time.Duration, op func() error) error {
	if err := d.usable(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- d.breakWith(fmt.Errorf("pebble panicked: %v", r))
			}
		}()
		done <- op()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil && vfs.IsNoSpaceError(err) {
			err = fmt.Errorf("%w: %v", ErrDiskFull, err)
		}
		return err
	case <-d.brokenCh:
		return d.brokenErr()
	case <-t.C:
		d.mu.Lock()
		d.stuck = done
		d.mu.Unlock()
		d.logger.Error("a write to the store has not returned: the disk has stalled; nothing more is written until it returns",
			"dir", d.dir, "after", timeout)
		return fmt.Errorf("%w: a write to %s has not returned after %v", ErrStalled, d.dir, timeout)
	}
}

// breakWith marks the store broken (once) and returns the error every write
// answers from now on.
func (d *disk) breakWith(cause error) error {
	d.breakOnce.Do(func() {
		d.logger.Error("the store failed; decisions go on in memory, but nothing more is written to disk until redcell is restarted",
			"dir", d.dir, "err", cause)
		err := fmt.Errorf("%w: %v", ErrBroken, cause)
		d.broken.Store(&err)
		close(d.brokenCh)
	})
	return *d.broken.Load()
}

func (d *disk) brokenErr() error {
	if p := d.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// state names the disk's condition for INFO: ok, full, stalled or failed.
func (d *disk) state() string {
	if d.brokenErr() != nil {
		return "failed"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.stuck != nil:
		return "stalled"
	case d.full:
		return "full"
	}
	return "ok"
}

// used is the bytes of the store's files, the reserve aside.
func (d *disk) used() int64 {
	names, err := d.fs.List(d.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		if name == reserveFile || name == reserveFile+".tmp" {
			continue
		}
		if fi, err := d.fs.Stat(d.fs.PathJoin(d.dir, name)); err == nil && !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n
}

// pebbleOptions are the options the store is opened for writing with: its
// file system wrapped to release the reserve on ENOSPC, a logger whose
// Fatalf breaks the store instead of exiting, and background errors logged
// once per run of failures and slowed down.
func (d *disk) pebbleOptions() *pebble.Options {
	o := &pebble.Options{
		FS:     vfs.OnDiskFull(d.fs, d.onDiskFull),
		Logger: pebbleLogger{l: d.logger, fatal: d.fatal},
		EventListener: &pebble.EventListener{
			BackgroundError: d.backgroundError,
			FlushEnd: func(info pebble.FlushInfo) {
				if info.Err == nil {
					d.backgroundOK()
				}
			},
			CompactionEnd: func(info pebble.CompactionInfo) {
				if info.Err == nil {
					d.backgroundOK()
				}
			},
			// A corrupt block found while running (by a compaction):
			// nothing more is written, where Pebble's default would call
			// Fatalf. The read itself fails with the error.
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				_ = d.breakWith(fmt.Errorf("corrupt file %s: %v", info.Path, info.Details))
			},
		},
	}
	o.Experimental.CompactionScheduler = newCompactionPacer()
	return o
}

// backgroundError is Pebble's report of a failed flush or compaction, which
// it retries at once, in a loop that on a full disk ran 7500 times a second,
// each logged. The first failure of a run is logged; the retries are slowed
// down, 10 ms doubling up to a second: Pebble calls this on the failing
// work's goroutine, so sleeping here paces the loop. (It holds Pebble's
// mutex meanwhile; nothing of redcell's waits on it but a commit, which the
// watchdog bounds, and Close, which waits at most the pause.)
func (d *disk) backgroundError(err error) {
	n := d.bgFailures.Add(1)
	if n == 1 {
		d.logger.Error("pebble: background work failed; retrying", "dir", d.dir, "err", err)
	}
	time.Sleep(min(10*time.Millisecond<<min(n-1, 7), time.Second))
}

func (d *disk) backgroundOK() {
	if n := d.bgFailures.Swap(0); n > 0 {
		d.logger.Info("pebble: background work succeeded again", "dir", d.dir, "failures", n)
	}
}

// fatal is Pebble's Fatalf: the store is broken, and since Fatalf must not
// return, the calling goroutine parks for good. If it is a watchdog's, the
// waiting write returns ErrBroken at once.
func (d *disk) fatal(msg string) {
	_ = d.breakWith(errors.New(msg))
	select {}
}

// pebbleLogger sends Pebble's chatter to slog: information at debug level,
// errors as errors, and Fatalf to fatal, which must not return.
type pebbleLogger struct {
	l     *slog.Logger
	fatal func(msg string)
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(pebbleText(format, args))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(pebbleText(format, args))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.fatal(pebbleText(format, args))
}

// pebbleText is a Pebble log line, prefixed "pebble: " unless it already is.
func pebbleText(format string, args []any) string {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	return msg
}

// BytesText writes n bytes as Redis's memory figures read (INFO's used_memory_human): 1.50M.
func BytesText(n int64) string {
	units := []string{"B", "K", "M", "G", "T"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + "B"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + units[i]
}

// DiskState is the disk's condition: ok, full, stalled or failed.
func (p *PebbleBackend) DiskState() string { return p.disk.state() }
