package replication

import (
	"runtime/debug"
	"sync"
)

// backlog is the replication stream's recent past: a ring of at least its
// last size bytes, by stream offset. The stream's one writer appends; each
// replica's link reads from its own offset, and a replica that reconnects
// within the backlog continues (+CONTINUE) instead of resynchronizing in
// full.
//
// A link reads through a hold, which keeps the bytes it has yet to send: the
// ring grows for them, up to limit, instead of overwriting them, so that the
// writes made while a replica takes its snapshot (or while a slow one
// catches up) wait for it, as Redis keeps them in the replica's output
// buffer up to its client-output-buffer-limit. A hold the limit cannot keep
// is lost, and its link fails. Once no hold needs a grown ring it goes back
// to size. It is safe for concurrent use.
type backlog struct {
	mu sync.Mutex
	// buf is the ring, allocated on first use (a node no replica ever
	// used pays nothing): size bytes, more while holds need them.
	buf   []byte
	size  int
	limit int // the most the ring grows to, at least size
	// end is the offset just past the last byte appended (Redis's
	// master_repl_offset); the ring holds [end-length, end).
	end, length int64
	holds       map[*hold]struct{}
	// grown is closed, and replaced, each time bytes are appended: a link
	// waiting for more waits on it.
	grown chan struct{}
}

// A hold is one link's place in the stream: the first byte it has yet to
// read, which the backlog keeps.
type hold struct {
	off  int64
	lost bool // the ring could not keep off: the link fell too far behind
	// onLost, if set, is run (in a goroutine of its own, as the appender
	// holds locks) when the ring gives the hold up: the link may be
	// blocked writing to a replica that does not read, and would not
	// read again to find out.
	onLost func(behind int64)
}

func newBacklog(size, limit int) *backlog {
	return &backlog{size: size, limit: max(size, limit), holds: map[*hold]struct{}{}, grown: make(chan struct{})}
}

// reset empties the backlog and makes off its end: a replica's after a full
// resynchronization, whose stream begins at the master's offset. The holds
// of its own replicas' links are lost: their stream is gone.
func (b *backlog) reset(off int64) {
	b.mu.Lock()
	b.end, b.length = off, 0
	for h := range b.holds {
		h.lost = true
	}
	b.mu.Unlock()
}

// append adds p at the end. Appending nothing allocates the ring (the
// backlog is active from then on), so that a link may read at the end of a
// stream that has yet to carry a byte here.
func (b *backlog) append(p []byte) {
	b.mu.Lock()
	if b.buf == nil {
		b.buf = make([]byte, b.size)
	}
	if len(p) == 0 {
		b.mu.Unlock()
		return
	}
	b.fit(b.end + int64(len(p)))
	b.end += int64(len(p))
	ring := len(b.buf)
	b.length = min(b.length+int64(len(p)), int64(ring))
	if len(p) > ring {
		p = p[len(p)-ring:]
	}
	at := int((b.end - int64(len(p))) % int64(ring))
	n := copy(b.buf[at:], p)
	copy(b.buf, p[n:])
	close(b.grown)
	b.grown = make(chan struct{})
	b.mu.Unlock()
}

// fit sizes the ring for a stream about to end at end: grown (to twice its
// size or what the holds need, at most limit) when a hold needs bytes it
// would overwrite, a hold beyond limit lost; shrunk, toward size, once the
// holds need no more than a quarter of a grown ring, so that a brief burst
// does not keep a big ring nor make it grow and shrink by turns.
func (b *backlog) fit(end int64) {
	need := int64(0)
	for h := range b.holds {
		switch {
		case h.lost:
		case end-h.off > int64(b.limit):
			h.lost = true
			if h.onLost != nil {
				go h.onLost(end - h.off)
			}
		default:
			need = max(need, end-h.off)
		}
	}
	ring := int64(len(b.buf))
	switch {
	case need > ring:
		b.resize(int(min(max(2*ring, need), int64(b.limit))))
	case ring > int64(b.size) && need <= ring/4:
		b.resize(int(max(int64(b.size), 2*need)))
	}
}

// resize moves the ring into one of n bytes, keeping as much of its end as
// fits. A big old ring is handed back to the system at once: until it is,
// the memory limit counts it (storage measures what the runtime holds), and
// only the ring in use is left out of the count (Node.BufferMemory).
func (b *backlog) resize(n int) {
	old, ring := b.buf, int64(len(b.buf))
	if ring >= 1<<20 {
		defer func() { go debug.FreeOSMemory() }()
	}
	b.buf = make([]byte, n)
	b.length = min(b.length, int64(n))
	for off := b.end - b.length; off < b.end; {
		from, to := off%ring, off%int64(n)
		k := min(ring-from, int64(n)-to, b.end-off)
		copy(b.buf[to:to+k], old[from:from+k])
		off += k
	}
}

// hold keeps the stream from off on for a link, which reads it with read
// and gives it up with release; onLost may be nil. off must be held or the
// end.
func (b *backlog) hold(off int64, onLost func(behind int64)) *hold {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &hold{off: off, lost: off < b.end-b.length || off > b.end, onLost: onLost}
	b.holds[h] = struct{}{}
	return h
}

// release gives up a hold.
func (b *backlog) release(h *hold) {
	b.mu.Lock()
	delete(b.holds, h)
	b.mu.Unlock()
}

// read copies into p the bytes from h's offset on (copyAt) and moves the
// hold past them, and returns a channel closed once more is appended;
// behind is how far the hold was from the end when it was lost.
func (b *backlog) read(h *hold, p []byte) (n int, grown <-chan struct{}, ok bool, behind int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.lost {
		return 0, b.grown, false, b.end - h.off
	}
	n, ok = b.copyAt(h.off, p)
	if !ok {
		return 0, b.grown, false, b.end - h.off
	}
	h.off += int64(n)
	return n, b.grown, true, 0
}

// offsets returns the first offset held and the end: [first, end).
func (b *backlog) offsets() (first, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end - b.length, b.end
}

// copyAt copies into p the bytes from off on, b.mu held, and returns how
// many. ok is false when off is no longer held (the reader fell behind by
// more than the ring keeps) or is beyond the end.
func (b *backlog) copyAt(off int64, p []byte) (n int, ok bool) {
	if off < b.end-b.length || off > b.end {
		return 0, false
	}
	n = int(min(b.end-off, int64(len(p))))
	if n == 0 {
		return 0, true
	}
	at := int(off % int64(len(b.buf)))
	k := copy(p[:n], b.buf[at:])
	copy(p[k:n], b.buf)
	return n, true
}

// allocated is the ring's size in bytes: 0 until a replica first used it.
func (b *backlog) allocated() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(len(b.buf))
}

// active reports whether the backlog has been used (repl_backlog_active).
func (b *backlog) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf != nil
}
