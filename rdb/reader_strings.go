package rdb

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// How the Reader reads a string: plain, as an integer, or LZF-compressed,
// each length checked against the limits before it is read.

// readString reads a string in any of Redis's encodings: length-prefixed,
// an integer (returned in decimal, as GET shows it) or LZF-compressed.
func (r *Reader) readString() ([]byte, error) {
	at := r.off
	n, enc, err := r.readLen()
	if err != nil {
		return nil, err
	}
	if !enc {
		if err := r.checkLen(n, at); err != nil {
			return nil, err
		}
		return r.readBytes(n)
	}
	switch n {
	case encInt8, encInt16, encInt32:
		var p [4]byte
		b := p[:1<<n]
		if err := r.readFull(b); err != nil {
			return nil, err
		}
		var v int64
		switch n {
		case encInt8:
			v = int64(int8(b[0]))
		case encInt16:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		}
		return strconv.AppendInt(nil, v, 10), nil
	case encLZF:
		return r.readLZF(at)
	}
	return nil, fmt.Errorf("%w: unknown string encoding %d at offset %d", ErrCorrupt, n, at)
}

func (r *Reader) checkLen(n uint64, at int64) error {
	if n > r.maxLen {
		return fmt.Errorf("%w: a string of %d bytes at offset %d, MaxLen %d", ErrTooLarge, n, at, r.maxLen)
	}
	return nil
}

// lzfMaxRatio bounds how many bytes LZF can expand one compressed byte
// into: a three-byte back reference copies at most 264.
const lzfMaxRatio = 88

// readLZF reads the compressed and the original lengths and the compressed
// bytes of the string starting at offset at, and decompresses them.
func (r *Reader) readLZF(at int64) ([]byte, error) {
	clen, err := r.readPlainLen()
	if err != nil {
		return nil, err
	}
	ulen, err := r.readPlainLen()
	if err != nil {
		return nil, err
	}
	if err := r.checkLen(clen, at); err != nil {
		return nil, err
	}
	if err := r.checkLen(ulen, at); err != nil {
		return nil, err
	}
	if ulen/lzfMaxRatio > clen {
		return nil, fmt.Errorf("%w: %d LZF bytes cannot make %d at offset %d", ErrCorrupt, clen, ulen, at)
	}
	c, err := r.readBytes(clen)
	if err != nil {
		return nil, err
	}
	out := make([]byte, ulen)
	if err := lzfDecompress(out, c); err != nil {
		return nil, fmt.Errorf("%w: the LZF string at offset %d: %v", ErrCorrupt, at, err)
	}
	return out, nil
}

// readChunk is the most a Reader allocates for a string before its bytes
// have arrived; past it, the buffer doubles as they do.
const readChunk = 64 << 10

// readBytes reads n bytes (n is at most MaxLen) into a new slice.
func (r *Reader) readBytes(n uint64) ([]byte, error) {
	size := min(n, readChunk)
	b := make([]byte, size)
	if err := r.readFull(b); err != nil {
		return nil, err
	}
	for uint64(len(b)) < n {
		more := min(n-uint64(len(b)), uint64(len(b)))
		grown := make([]byte, uint64(len(b))+more)
		copy(grown, b)
		if err := r.readFull(grown[len(b):]); err != nil {
			return nil, err
		}
		b = grown
	}
	return b, nil
}

// skipString reads past a string, allocating nothing for it.
func (r *Reader) skipString() error {
	at := r.off
	n, enc, err := r.readLen()
	if err != nil {
		return err
	}
	if !enc {
		return r.skip(n)
	}
	switch n {
	case encInt8, encInt16, encInt32:
		return r.skip(1 << n)
	case encLZF:
		clen, err := r.readPlainLen()
		if err != nil {
			return err
		}
		if _, err := r.readPlainLen(); err != nil {
			return err
		}
		return r.skip(clen)
	}
	return fmt.Errorf("%w: unknown string encoding %d at offset %d", ErrCorrupt, n, at)
}
