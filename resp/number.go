package resp

import (
	"encoding/binary"
	"math"
)

// Results of number.
const (
	numOK   = iota
	numMore // no byte so far is wrong, and the number is not ended yet
	numBad
)

// shortNumber reads at b[i:] the usual header's number, of one or two digits
// then CRLF, quicker than number does: it is inlined, and one load reads all
// four bytes. It returns end 0 for any other input, for number to read.
func shortNumber(b []byte, i int) (n int64, end int) {
	if i+3 < len(b) {
		w := binary.LittleEndian.Uint32(b[i:])
		d0, d1 := byte(w)-'0', byte(w>>8)-'0'
		if d0-1 < 9 { // 1-9: no leading zero
			if w&0xffff00 == '\n'<<16|'\r'<<8 {
				return int64(d0), i + 3
			}
			if w>>16 == '\n'<<8|'\r' && d1 < 10 {
				return int64(d0)*10 + int64(d1), i + 4
			}
		}
	}
	return 0, 0
}

// number reads "<digits>\r\n" at b[i:] as Redis's string2ll reads a number:
// an optional '-', at most 19 digits, no '+', no leading zeros, no "-0",
// within int64. It returns the number and the index after its LF. A wrong
// byte is refused as soon as it is seen; a number beyond int64, once its
// CRLF has arrived.
func number(b []byte, i int) (n int64, end int, status int) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v uint64
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		v = v*10 + uint64(d)
		i++
		if i-start > 19 {
			return 0, 0, numBad
		}
	}
	digits := i - start
	switch {
	case digits > 0 && b[start] == '0' && (digits > 1 || neg):
		return 0, 0, numBad
	case i == len(b):
		return 0, 0, numMore
	case b[i] != '\r' || digits == 0:
		return 0, 0, numBad
	case i+1 == len(b):
		return 0, 0, numMore
	case b[i+1] != '\n':
		return 0, 0, numBad
	case neg && v <= 1<<63:
		return -int64(v), i + 2, numOK
	case !neg && v <= math.MaxInt64:
		return int64(v), i + 2, numOK
	}
	return 0, 0, numBad
}
