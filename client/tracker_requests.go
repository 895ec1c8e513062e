package client

import (
	"context"
	"strconv"
	"time"
)

// What the client asks of its tracking connection: a key's state after a
// refusal (fetch), and the wait for it (awaitRead).

// sync returns once everything the node sent before a PING sent now has
// been handled: the invalidations of changes made before the call, and the
// reads sent before it (false if the connection is down or lost meanwhile).
func (t *tracker) sync(ctx context.Context) bool {
	rq := &request{done: make(chan struct{})}
	t.mu.Lock()
	if t.w == nil {
		t.mu.Unlock()
		return false
	}
	t.sendLocked(rq, "PING")
	t.flushLocked()
	t.mu.Unlock()
	select {
	case <-rq.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// localTAT is the TAT a read found (GET's reply, nanoseconds on the
// server's clock) as an instant of the client's clock, no later than the
// server's: the server read TIME after the request was sent, so its
// reading (truncated to the microsecond, so up to 1 us early) maps to no
// earlier than sent.
func localTAT(rq *request, get value) (int64, bool) {
	if get.kind != '$' || get.null || len(rq.time.elems) != 2 {
		return 0, false // absent (nothing to cache), or an error: MOVED, WRONGTYPE
	}
	tat, err1 := strconv.ParseInt(get.str, 10, 64)
	sec, err2 := strconv.ParseInt(rq.time.elems[0].str, 10, 64)
	usec, err3 := strconv.ParseInt(rq.time.elems[1].str, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, false
	}
	span := tat - (sec*int64(time.Second) + usec*int64(time.Microsecond)) - int64(time.Microsecond)
	if span <= 0 {
		return 0, false // the key allows everything now
	}
	return rq.sent + span, true
}

// fetch reads key's TAT on the tracking connection, which also makes the
// server track the key, and caches it when the answer arrives: the caller
// does not wait. A key whose read is in flight is not read again; nothing
// is read while the connection is down.
func (t *tracker) fetch(key string) {
	if !t.up.Load() {
		return
	}
	t.mu.Lock()
	if t.inflight[key] != nil || t.w == nil {
		t.mu.Unlock()
		return
	}
	rq := &request{key: key, done: make(chan struct{})}
	t.inflight[key] = rq
	t.sendLocked(rq, "TIME")
	t.writeLocked("GET", key)
	t.flushLocked()
	t.mu.Unlock()
	t.c.stats.fetches.Add(1)
}

// awaitRead waits, until ctx ends, for the read of key in flight, if any,
// and reports whether there was one and it came: a call on a key just
// refused waits for its state (about a round trip on this connection)
// rather than make a round trip of its own, which the state may make
// needless.
func (t *tracker) awaitRead(ctx context.Context, key string) bool {
	if t == nil || !t.up.Load() {
		return false
	}
	t.mu.Lock()
	rq := t.inflight[key]
	t.mu.Unlock()
	if rq == nil {
		return false
	}
	select {
	case <-rq.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// send writes one request of one command.
func (t *tracker) send(rq *request, args ...string) {
	t.mu.Lock()
	if t.w != nil {
		t.sendLocked(rq, args...)
		t.flushLocked()
	}
	t.mu.Unlock()
}

// sendLocked queues rq and writes its first command, under mu.
func (t *tracker) sendLocked(rq *request, args ...string) {
	rq.sent = t.c.now()
	t.queue = append(t.queue, rq)
	t.writeLocked(args...)
}

func (t *tracker) writeLocked(args ...string) {
	var buf [128]byte
	_, _ = t.w.Write(appendCommand(buf[:0], args...))
}

// flushLocked sends what was written; a write that fails closes the
// connection, which serve then finds lost.
func (t *tracker) flushLocked() {
	_ = t.conn.SetWriteDeadline(time.Now().Add(trackerWrite))
	if err := t.w.Flush(); err != nil {
		_ = t.conn.Close()
		t.w = nil
	}
}
