package server

import (
	"math"
	"strconv"
	"unsafe"
)

// parseInt parses b as a base-10 int64: an optional leading '-', then digits,
// nothing else (no '+', spaces or decimals). Leading zeros are allowed, any
// number of them, as strconv.ParseInt allows. It does not allocate.
func parseInt(b []byte) (int64, bool) {
	// Up to 18 digits cannot pass MaxInt64, so the common case, a small
	// non-negative number, needs no bound per digit: CL.THROTTLE's three
	// or four integers cost a quarter of what parseIntBounded's loop does.
	if len(b) == 0 || len(b) > 18 || b[0] == '-' {
		return parseIntBounded(b)
	}
	var n int64
	for _, ch := range b {
		d := ch - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	return n, true
}

// parseIntBounded is parseInt for any input: a sign, or digits enough to
// overflow, checked at every digit.
func parseIntBounded(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	// Accumulate as a negative number so that MinInt64 fits.
	var n int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := int64(ch - '0')
		if n < (math.MinInt64+d)/10 {
			return 0, false
		}
		n = n*10 - d
	}
	if !neg {
		if n == math.MinInt64 {
			return 0, false
		}
		n = -n
	}
	return n, true
}

// equalFold reports whether b equals the lower-case ASCII word, ignoring case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}

// parseFloat parses b as Redis's getDoubleFromObject does (strtod, the whole
// string): decimal or hexadecimal, "inf" and "infinity" in any case, an
// optional sign; not NaN, not a leading space, not Go's digit underscores, not
// a number too large for a float64 or one too small that rounds to zero.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' || b[0] == '\v' || b[0] == '\f' {
		return 0, false
	}
	var buf [64]byte
	s := append(buf[:0], b...) // on the stack unless long
	hex, exp := false, false
	for i, ch := range s {
		switch {
		case ch == '_':
			return 0, false
		case ch == 'x' || ch == 'X':
			hex = i > 0 && s[i-1] == '0'
		case ch == 'p' || ch == 'P':
			exp = true
		}
	}
	if hex && !exp {
		s = append(s, "p0"...) // strtod takes 0x10; Go wants the exponent
	}
	f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && !zeroMantissa(s, hex) {
		return 0, false // underflow: strtod's ERANGE toward zero
	}
	return f, true
}

// zeroMantissa reports whether the digits of a float's mantissa (before its
// exponent) are all zero.
func zeroMantissa(s []byte, hex bool) bool {
	if hex {
		for i := range s {
			if s[i] == 'x' || s[i] == 'X' {
				s = s[i+1:]
				break
			}
		}
	}
	for _, ch := range s {
		switch {
		case !hex && (ch == 'e' || ch == 'E'), hex && (ch == 'p' || ch == 'P'):
			return true
		case '1' <= ch && ch <= '9', hex && ('a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'):
			return false
		}
	}
	return true
}
