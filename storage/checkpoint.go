package storage

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/gcra"
)

// CheckpointInterval is how often, in durable mode, what the commit log
// holds is applied to the backend (Flusher.checkpoint), or sooner once it
// holds checkpointChanges changes. Ten seconds, not one: a checkpoint's
// sort and Pebble write take a share of the cores that the loops' deciding
// and syncing wait for, and over ten seconds a key changed many times is
// written once. Unpipelined over 100,000 keys (bench/durable.sh), p99 was
// 0.72x of one-second checkpoints'. A crash replays up to that much log.
const CheckpointInterval = 10 * time.Second

// checkpointChanges bounds the changes logged and held for a checkpoint
// (about 70 bytes each, with their keys).
const checkpointChanges = 1 << 18

// logCheckpoint is durable mode's commit log (FlusherOptions.Log): group
// commits append changes to it (logCommit) and checkpoints apply what it
// holds to the backend and drop it (checkpoint). Its contract: a change is
// dropped from the log only once the backend holds it synced, and a change
// logged is always newer than every change a checkpoint took before it.
//
// lmu is held to take changes from the store and log them, and to seal the
// log and take what it holds. logged holds the changes logged since the
// last seal, in log order: durable, and not yet applied to the backend.
type logCheckpoint struct {
	lmu         sync.Mutex
	lbuf        []Change
	logged      []Change
	loggedSaved gcra.Instant
	// logFull tells RunGroupCommit that logged holds checkpointAt changes
	// (checkpointChanges; tests lower it).
	logFull      chan struct{}
	checkpointAt int
}

func (l *logCheckpoint) init() {
	l.logFull = make(chan struct{}, 1)
	l.checkpointAt = checkpointChanges
}

// logCommit is durable mode's group commit with a commit log: it takes every
// change made so far from the store and logs it (FlusherOptions.Log), where
// a checkpoint later applies it to the backend.
func (f *Flusher) logCommit() error {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return f.logCommitLocked()
}

// logCommitLocked is logCommit, f.lmu held. The changes of a log write that
// fails go back to the store, as a failed flush's do.
func (f *Flusher) logCommitLocked() error {
	defer f.keepOnPanic(&f.lbuf)
	start := time.Now()
	offset := f.opts.WallOffset()
	saved := gcra.InstantOf(f.opts.Now())
	for i := range f.store.Shards() {
		f.lbuf = f.take(i, f.lbuf)
	}
	n := len(f.lbuf)
	var err error
	// With nothing to log, a commit while commits fail still writes (an
	// empty record): it is what tells whether the disk answers again.
	if n > 0 || f.failing.Load() > 0 {
		batch := prepare(f.lbuf, offset)
		if err = f.opts.Log.Log(batch, saved); err == nil {
			f.logged = append(f.logged, batch...)
			f.loggedSaved = saved
			if len(f.logged) >= f.checkpointAt {
				select {
				case f.logFull <- struct{}{}: // RunGroupCommit checkpoints early
				default:
				}
			}
		}
	}
	f.handBack(f.lbuf, err != nil) // logged, they are durable
	clear(f.lbuf)
	f.lbuf = f.lbuf[:0]
	if cap(f.lbuf) > 2*flushBatch {
		f.lbuf = nil
	}
	f.finish(err, n, time.Since(start))
	return err
}

// checkpoint is Flush with a commit log, f.mu held: it logs the changes made
// since the last group commit, seals the log, and applies every change
// logged up to the seal to the backend, synced, before it drops those log
// files. Deciding and group commits go on meanwhile: only the log's own
// steps hold f.lmu. When the wall clock has stepped (see Flusher.frame),
// every key is written again in the new frame, holding f.lmu throughout.
func (f *Flusher) checkpoint() error {
	f.lmu.Lock()
	locked := true
	defer func() {
		if locked {
			f.lmu.Unlock()
		}
	}()
	if err := f.logCommitLocked(); err != nil {
		return err
	}
	mark, err := f.opts.Log.Seal()
	if err != nil {
		return err
	}
	pend, saved := f.logged, f.loggedSaved
	f.logged = nil
	if !f.stepped(f.opts.WallOffset()) {
		f.lmu.Unlock()
		locked = false
	}
	pend, err = f.applyLogged(pend, saved)
	if err == nil && locked {
		err = f.flushLocked() // writes every key again, in the new frame
	}
	if err != nil {
		if !locked {
			f.lmu.Lock()
			locked = true
		}
		f.logged = append(pend, f.logged...) // still in the log, to apply next time
		f.opts.Logger.Warn("applying the commit log to the store failed; it is kept, and tried again at the next checkpoint", "err", err, "changes", len(pend))
		return err
	}
	clear(pend)
	if err := f.opts.Log.Drop(mark); err != nil {
		f.opts.Logger.Warn("removing applied commit log files failed; the next checkpoint tries again", "err", err)
	}
	return nil
}

// applyLogged writes changes taken from the commit log (oldest first) to the
// backend, the newest change of each key only, in key order, in batches
// (batchLen), and syncs. It returns those newest changes (in changes'
// array), to keep if it fails.
//
// The newest of each key is found with a set of the keys seen, walking from
// the newest change back, and only those are sorted. A stable sort of every
// change took 9% of the server's CPU in durable mode (perf), and
// BenchmarkCheckpointApply 2.6x the time (281 against 107 ms).
func (f *Flusher) applyLogged(changes []Change, saved gcra.Instant) ([]Change, error) {
	if len(changes) == 0 {
		return changes, nil
	}
	seen := make(map[string]struct{}, len(changes))
	w := len(changes)
	for i := len(changes) - 1; i >= 0; i-- {
		if _, ok := seen[changes[i].Key]; ok {
			continue // a later change of the key was kept
		}
		seen[changes[i].Key] = struct{}{}
		w--
		changes[w] = changes[i]
	}
	clear(changes[:w]) // drop references to key strings
	out := changes[w:]
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Key, b.Key) })
	for rest := out; len(rest) > 0; {
		n, _ := batchLen(rest)
		if err := f.backend.Apply(rest[:n], saved, n == len(rest)); err != nil {
			return out, err
		}
		rest = rest[n:]
	}
	return out, nil
}
