package resp

// PeekKeys returns the first arguments after the name (the keys, in a
// pipeline of decisions) of the next two commands buffered after the one
// Next returned last, or nil for one that is not there or not whole. It
// reads them without checking them as Next will: a hint of what is coming,
// for a caller to prefetch what those commands will need. Only multibulk
// commands of short arguments (1 to 99 bytes, as a pipeline's usually are)
// are peeked at; the keys are views of the buffer, valid until the next call
// of Next or Fill.
//
// A pipeline calls it once per command: it remembers what it read of the
// second command, which is the next one once Next has returned the first,
// and reads one command a call.
func (r *Reader) PeekKeys() (next, after []byte) {
	if r.left > 0 || r.inline || r.refusal != nil {
		return nil, nil
	}
	b := r.buf[:r.w]
	pk := r.peek
	if pk.end == 0 || pk.at != r.r {
		var ok bool
		if pk, ok = peekCommand(b, r.r); !ok {
			return nil, nil
		}
	}
	next = b[pk.key : pk.key+pk.keyLen]
	pk, ok := peekCommand(b, pk.end)
	if !ok {
		r.peek = peeked{}
		return next, nil
	}
	r.peek = pk
	return next, b[pk.key : pk.key+pk.keyLen]
}

// peeked is a command PeekKeys read: it began at at and ended at end, and
// its first argument after the name is b[key:key+keyLen]. end is 0 when
// nothing is remembered; Fill forgets it, as it may move the buffer.
type peeked struct{ at, end, key, keyLen int }

// peekCommand reads the multibulk command at b[p:], of at least two short
// arguments.
func peekCommand(b []byte, p int) (peeked, bool) {
	if p >= len(b) || b[p] != '*' {
		return peeked{}, false
	}
	count, end := shortNumber(b, p+1)
	if end == 0 || count < 2 {
		return peeked{}, false
	}
	pk := peeked{at: p}
	p = end
	for i := range count {
		if p >= len(b) || b[p] != '$' {
			return peeked{}, false
		}
		size, end := shortNumber(b, p+1)
		if end == 0 || end+int(size)+2 > len(b) {
			return peeked{}, false
		}
		if i == 1 {
			pk.key, pk.keyLen = end, int(size)
		}
		p = end + int(size) + 2
	}
	pk.end = p
	return pk, true
}
