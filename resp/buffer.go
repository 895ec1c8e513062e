package resp

import "errors"

// Pending reports how many bytes of an incomplete command are buffered, after
// Next has returned every whole one, and whether the command's first byte
// came with the last Fill rather than an earlier one: a server that bounds
// how long a command may take to arrive counts from then.
func (r *Reader) Pending() (n int, sinceLastFill bool) {
	return r.w - r.r, r.r >= r.fillFrom
}

// Used returns the input Next has used since the last Fill: the whole
// commands it returned and the empty ones it skipped, valid until the next
// Fill. Multibulk commands are there byte for byte as they came (what a
// replica forwards to its own replicas); an inline command's bytes are its
// arguments' once Next has split it in place.
func (r *Reader) Used() []byte { return r.buf[r.usedFrom:r.r] }

// errFull is Fill's answer when called with whole commands still buffered
// and no room left for more: Next must be called until it returns nil.
var errFull = errors.New("resp: Fill called with the buffer full of commands Next has not returned")

// Fill reads once from the connection into the buffer. Call it when Next has
// returned nil and no error. A read error is returned once the bytes read
// with it have been used, and then by every later call, without reading.
func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	r.peek = peeked{}
	if r.r == r.w {
		r.r, r.w, r.p = 0, 0, 0
		if len(r.buf) > InitialSize {
			r.moveTo(make([]byte, InitialSize))
		}
	} else if err := r.makeRoom(); err != nil {
		return err
	}
	r.fillFrom, r.usedFrom = r.w, r.r
	n, err := r.src.Read(r.buf[r.w:])
	r.w += n
	if err != nil {
		r.err = err
		if n == 0 {
			return err
		}
	}
	return nil
}

// makeRoom readies the buffer for more of the incomplete command at r: the
// command moved to the front of a buffer that holds what it is known to
// need, or of one of InitialSize again once it fits. An incomplete command
// the limits let through never needs more than r.max.
func (r *Reader) makeRoom() error {
	pending := r.w - r.r
	need := max(r.need, pending+1)
	size := len(r.buf)
	switch {
	case need > size:
		size = min(max(2*size, need), r.max)
		if need > size {
			return errFull
		}
	case size > InitialSize && need <= InitialSize/2:
		size = InitialSize
	}
	switch {
	case size != len(r.buf):
		r.moveTo(make([]byte, size))
	case r.r > 0:
		r.moveTo(r.buf)
	}
	return nil
}

// moveTo moves the unused input to the front of dst, which becomes the
// buffer, with the arguments read so far of the incomplete command.
func (r *Reader) moveTo(dst []byte) {
	if r.left > 0 {
		for i, a := range r.args {
			// a is r.buf[k:k+len(a)], with its capacity to the end
			// of r.buf: that tells k.
			k := cap(r.buf) - cap(a) - r.r
			r.args[i] = dst[k : k+len(a)]
		}
	}
	if &dst[0] != &r.buf[0] {
		clear(r.args[len(r.args):cap(r.args)]) // nothing pins the old buffer
		if r.left == 0 {
			clear(r.args[:len(r.args)])
		}
	}
	r.w = copy(dst, r.buf[r.r:r.w])
	r.p -= r.r
	r.r = 0
	r.buf = dst
}
