package storage

import (
	"encoding/binary"

	"github.com/redcell/redcell/gcra"
)

// How a key and its state are laid out in Pebble: a prefixed key, and a
// value of its expiry, and for a boxed kind the kind and the state.

func tatKey(buf []byte, key string) []byte {
	buf = append(buf[:0], tatPrefix)
	return append(buf, key...)
}

// encodeValue appends a change's stored value to buf: a TAT, or an expiry,
// a kind and a state.
func encodeValue(buf []byte, c Change) []byte {
	buf = binary.BigEndian.AppendUint64(buf[:0], uint64(c.TAT))
	if c.Kind == KindTAT {
		return buf
	}
	buf = append(buf, byte(c.Kind))
	return append(buf, c.Value...)
}

// decodeValue reads a stored value back.
func decodeValue(v []byte) (kind Kind, exp gcra.Instant, value []byte, ok bool) {
	switch {
	case len(v) == 8:
		return KindTAT, gcra.Instant(binary.BigEndian.Uint64(v)), nil, true
	case len(v) > 9 && Kind(v[8]).Boxed():
		return Kind(v[8]), gcra.Instant(binary.BigEndian.Uint64(v)), v[9:], true
	}
	return 0, 0, nil, false
}
