// Package statecodec is how a key's state travels between nodes, as a
// Redis string: the value of replication's SET key <value> PXAT <ms> (in
// the stream and in the snapshot alike), and of a slot migration's CLUSTERX
// IMPORT slot KEY key <value>. A real redis-server replica holds every key
// as a string; a redcell node decodes each back exactly.
//
//   - A TAT key (CL.THROTTLE, GCRA, CL.RESERVE): its TAT in Unix
//     nanoseconds, decimal, the string redis-cell itself keeps and GET
//     answers.
//   - Another kind (a CL.WINDOW window): boxMagic, the kind, the expiry in
//     nanoseconds (8 bytes, big-endian), the state. A Redis replica holds an
//     opaque string that expires when the window's state would; a redcell
//     node decodes it.
package statecodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/storage"
)

// boxMagic begins a boxed state's value: a NUL byte, which no decimal TAT
// has, then a name and a format version.
const boxMagic = "\x00redcell1"

// ErrNotAState is a value that is neither a decimal TAT nor a boxed state:
// a string redcell has no kind for.
var ErrNotAState = errors.New("not a redcell state")

// Append appends ch's state as its string: a TAT key's TAT in decimal,
// another kind's boxed state. ch.TAT must not be 0 (a deleted key has no
// state to send).
func Append(b []byte, ch storage.Change) []byte {
	if ch.Kind == storage.KindTAT {
		return strconv.AppendInt(b, int64(ch.TAT), 10)
	}
	b = append(b, boxMagic...)
	b = append(b, byte(ch.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(ch.TAT))
	return append(b, ch.Value...)
}

// Encode is Append to a new slice.
func Encode(ch storage.Change) []byte { return Append(nil, ch) }

// Decode turns a state's string (Append's) back into the state: its kind,
// its expiry (a TAT key's TAT) and, for a boxed kind, the state itself (a
// view of value). Any other string is ErrNotAState.
func Decode(value []byte) (storage.Kind, gcra.Instant, []byte, error) {
	if len(value) > len(boxMagic) && string(value[:len(boxMagic)]) == boxMagic {
		rest := value[len(boxMagic):]
		if len(rest) < 9 {
			return 0, 0, nil, fmt.Errorf("%w: a boxed state of %d bytes", ErrNotAState, len(value))
		}
		kind := storage.Kind(rest[0])
		if !kind.Boxed() {
			return 0, 0, nil, fmt.Errorf("%w: kind %d", ErrNotAState, kind)
		}
		if kind == storage.KindLeases && !lease.Valid(rest[9:]) {
			return 0, 0, nil, fmt.Errorf("%w: leases that do not decode", ErrNotAState)
		}
		exp := gcra.Instant(binary.BigEndian.Uint64(rest[1:9]))
		if exp <= 0 {
			return 0, 0, nil, fmt.Errorf("%w: expiry %d", ErrNotAState, exp)
		}
		return kind, exp, rest[9:], nil
	}
	tat, ok := parseTAT(value)
	if !ok {
		return 0, 0, nil, fmt.Errorf("%w: %.40q", ErrNotAState, value)
	}
	return storage.KindTAT, tat, nil, nil
}

// parseTAT reads a TAT written in decimal (a positive int64, without sign
// or leading zero, as Append and redis-cell write it) without the
// allocation strconv's error would cost a replica's stream per command.
func parseTAT(b []byte) (gcra.Instant, bool) {
	if len(b) == 0 || len(b) > 19 || b[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return gcra.Instant(n), true
}
