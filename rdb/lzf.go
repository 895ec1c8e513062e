package rdb

import "errors"

// lzfDecompress decompresses src, LZF as Redis's lzf_c.c writes it, into
// dst, which must come out exactly full. Every index is checked, so any
// src is safe: a malformed one is an error.
//
// The format is a sequence of operations, each led by a control byte c:
// c < 32 copies the next c+1 bytes; otherwise the top three bits give a
// length n (7 meaning 7 plus the next byte) and the low five bits with the
// following byte an offset o, and n+2 bytes are copied from o+1 bytes back
// in the output, possibly overlapping what they produce.
func lzfDecompress(dst, src []byte) error {
	ip, op := 0, 0
	for ip < len(src) {
		ctrl := int(src[ip])
		ip++
		if ctrl < 1<<5 {
			n := ctrl + 1
			if n > len(src)-ip {
				return errLZFInput
			}
			if n > len(dst)-op {
				return errLZFOutput
			}
			op += copy(dst[op:], src[ip:ip+n])
			ip += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if ip >= len(src) {
				return errLZFInput
			}
			n += int(src[ip])
			ip++
		}
		if ip >= len(src) {
			return errLZFInput
		}
		back := ((ctrl&0x1f)<<8 | int(src[ip])) + 1
		ip++
		n += 2
		if n > len(dst)-op {
			return errLZFOutput
		}
		if back > op {
			return errLZFBack
		}
		if back >= n {
			op += copy(dst[op:op+n], dst[op-back:])
			continue
		}
		// The copy overlaps its source: it repeats the last back bytes.
		for i := range n {
			dst[op+i] = dst[op-back+i]
		}
		op += n
	}
	if op != len(dst) {
		return errLZFShort
	}
	return nil
}

var (
	errLZFInput  = errors.New("the compressed bytes end inside an operation")
	errLZFOutput = errors.New("it decompresses to more than its stated length")
	errLZFBack   = errors.New("a back reference points before the start")
	errLZFShort  = errors.New("it decompresses to less than its stated length")
)
