package storage

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redcell/redcell/internal/contain"
)

// groupCommit is durable mode's Sync: each caller waits for a flush (or,
// with a commit log, a log write: logCommit) that started after its call;
// one serves every waiter that arrived before it. A group commit runs while
// started > completed. Its contract: Sync returns nil only once every change
// made before the call is durable; once RunGroupCommit has returned, every
// Sync fails (ErrGroupCommitStopped or the context's error).
type groupCommit struct {
	gmu       sync.Mutex
	gcond     *sync.Cond
	started   uint64 // generation of the newest flush begun
	completed uint64 // generation of the newest flush finished
	lastErrG  error  // result of the flush that set completed
	stopped   error  // set when group commit stops: Sync fails at once
	// wake tells RunGroupCommit that a group commit failed.
	wake chan struct{}
}

func (g *groupCommit) init() {
	g.gcond = sync.NewCond(&g.gmu)
	g.wake = make(chan struct{}, 1)
}

// RunGroupCommit is Sync's companion until ctx is done: while flushes fail
// it retries them on its own, pausing as Run does, so that the server learns
// when the disk has room again even though, in durable mode, no new change
// arrives meanwhile (changes are refused); when ctx is done, every Sync
// waiting and every later one fails.
func (f *Flusher) RunGroupCommit(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var checkpoints <-chan time.Time // with a commit log: apply it to the backend
	if f.opts.Log != nil {
		t := time.NewTicker(CheckpointInterval)
		defer t.Stop()
		checkpoints = t.C
	}
	for {
		select {
		case <-ctx.Done():
			f.failWaiters(ctx.Err())
			return
		case <-checkpoints:
			_ = f.flushContained()
		case <-f.logFull:
			_ = f.flushContained()
		case <-f.wake: // a group commit failed
			retry.Reset(f.retryPause(time.Second))
		case <-retry.C:
			if f.flushContained() != nil {
				retry.Reset(f.retryPause(time.Second))
			}
		}
	}
}

// failWaiters releases every waiting Sync with err when group commit stops.
func (f *Flusher) failWaiters(err error) {
	f.gmu.Lock()
	f.completed, f.lastErrG, f.stopped = f.started+1, err, err
	f.gcond.Broadcast()
	f.gmu.Unlock()
}

// ErrGroupCommitStopped is returned by Sync once RunGroupCommit has returned.
var ErrGroupCommitStopped = errors.New("storage: group commit stopped")

// Sync blocks until every change made before the call is durable, sharing
// one backend sync with concurrent callers (group commit): the caller that
// finds no group commit running runs one itself, for every change so far,
// and those that arrive meanwhile wait for it to end, then run the next as
// one. Why the caller runs it: handing each to a goroutine of the flusher's
// cost two more wake-ups per commit, on the path every durable reply waits
// on. RunGroupCommit must be running.
func (f *Flusher) Sync() error {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if f.stopped != nil {
		return f.stopped
	}
	target := f.started + 1 // a flush that begins after our changes
	for f.completed < target {
		if f.started > f.completed {
			f.gcond.Wait() // one runs: the next is ours, or shared with ours
			continue
		}
		f.started++
		gen := f.started
		f.gmu.Unlock()
		// A panic in the commit is its error (contain.Run): the waiters
		// are answered it, and gmu is taken again as after any commit.
		err := contain.Run(f.opts.Logger, "flush", "group commit", func() error {
			if f.opts.Log != nil {
				return f.logCommit()
			}
			return f.Flush()
		})
		f.gmu.Lock()
		if gen > f.completed { // not overtaken by failWaiters
			f.completed, f.lastErrG = gen, err
		}
		f.gcond.Broadcast()
		if err != nil {
			select {
			case f.wake <- struct{}{}: // RunGroupCommit retries on its own
			default:
			}
		}
	}
	return f.lastErrG
}
