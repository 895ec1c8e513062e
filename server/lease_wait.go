package server

import (
	"sync"
	"sync/atomic"
)

// leaseWaiters are the clients blocked in CL.ACQUIRE ... BLOCK, a queue a
// key, first come first served: only the first of a key's queue tries for
// a slot, when it joins, when a CL.RELEASE wakes it (wakeFirst), and when
// the earliest lease it was told of expires (its own timer); when it leaves,
// having acquired, given up or lost its client, the next is woken. A
// non-blocking CL.ACQUIRE does not queue: it may take a slot as one frees.
type leaseWaiters struct {
	// waiting counts the clients queued, so that a CL.RELEASE with none
	// waiting anywhere costs one atomic load.
	waiting atomic.Int64
	mu      sync.Mutex
	byKey   map[string][]*leaseWaiter
}

// leaseWaiter is one blocked client.
type leaseWaiter struct {
	key  string
	wake chan struct{} // one token: a wake never waits, and two are one
}

// join queues a client at the end of key's queue.
func (q *leaseWaiters) join(key string) *leaseWaiter {
	w := &leaseWaiter{key: key, wake: make(chan struct{}, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byKey == nil {
		q.byKey = make(map[string][]*leaseWaiter)
	}
	q.byKey[key] = append(q.byKey[key], w)
	q.waiting.Add(1)
	return w
}

// first reports whether w is first in its key's queue.
func (q *leaseWaiters) first(w *leaseWaiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byKey[w.key][0] == w
}

// leave takes w out of its queue and, if it was first, wakes the next: a
// slot it was given up on, or one still free after its own, is theirs to
// try.
func (q *leaseWaiters) leave(w *leaseWaiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	queue := q.byKey[w.key]
	for i, x := range queue {
		if x != w {
			continue
		}
		queue = append(queue[:i], queue[i+1:]...)
		q.waiting.Add(-1)
		if len(queue) == 0 {
			delete(q.byKey, w.key)
			return
		}
		q.byKey[w.key] = queue
		if i == 0 {
			wake(queue[0])
		}
		return
	}
}

// wakeFirst wakes the first client waiting on key, if any: a lease ended.
func (q *leaseWaiters) wakeFirst(key []byte) {
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if queue := q.byKey[string(key)]; len(queue) > 0 {
		wake(queue[0])
	}
}

func wake(w *leaseWaiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
