package replication

import "sync"

// backlog is the replication stream's recent past: a ring of its last size
// bytes, by stream offset. The stream's one writer appends; each replica's
// link reads from its own offset, and a replica that reconnects within the
// backlog continues (+CONTINUE) instead of resynchronizing in full. It is
// safe for concurrent use.
type backlog struct {
	mu   sync.Mutex
	buf  []byte // allocated on first use: a node no replica ever used pays nothing
	size int
	// end is the offset just past the last byte appended (Redis's
	// master_repl_offset); the ring holds [end-len, end).
	end, length int64
	// grown is closed, and replaced, each time bytes are appended: a link
	// waiting for more waits on it.
	grown chan struct{}
}

func newBacklog(size int) *backlog {
	return &backlog{size: size, grown: make(chan struct{})}
}

// reset empties the backlog and makes off its end: a replica's after a full
// resynchronization, whose stream begins at the master's offset.
func (b *backlog) reset(off int64) {
	b.mu.Lock()
	b.end, b.length = off, 0
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
	b.end += int64(len(p))
	b.length = min(b.length+int64(len(p)), int64(b.size))
	if len(p) > b.size {
		p = p[len(p)-b.size:]
	}
	at := int((b.end - int64(len(p))) % int64(b.size))
	n := copy(b.buf[at:], p)
	copy(b.buf, p[n:])
	close(b.grown)
	b.grown = make(chan struct{})
	b.mu.Unlock()
}

// offsets returns the first offset held and the end: [first, end).
func (b *backlog) offsets() (first, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end - b.length, b.end
}

// readAt copies into p the bytes from off on, and returns how many, the
// end, and a channel closed once more is appended. ok is false when off is
// no longer held (the reader fell behind by more than the backlog) or is
// beyond the end.
func (b *backlog) readAt(off int64, p []byte) (n int, end int64, grown <-chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off < b.end-b.length || off > b.end {
		return 0, b.end, b.grown, false
	}
	avail := b.end - off
	n = int(min(avail, int64(len(p))))
	at := int(off % int64(b.size))
	k := copy(p[:n], b.buf[at:])
	copy(p[k:n], b.buf)
	return n, b.end, b.grown, true
}

// active reports whether the backlog has been used (repl_backlog_active).
func (b *backlog) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf != nil
}
