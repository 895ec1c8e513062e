package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"redcell/gcra"
	"redcell/storage"
)

// How a key's state travels, in the stream and in the snapshot alike: as a
// Redis string with an absolute expiry, so that a real redis-server replica
// holds every key and a redcell replica gets each back exactly.
//
//   - A TAT key (CL.THROTTLE, GCRA, CL.RESERVE): SET key <TAT in Unix
//     nanoseconds, decimal> PXAT <TAT in Unix milliseconds, rounded up>, the
//     string redis-cell itself keeps and GET answers.
//   - Another kind (a CL.WINDOW window): SET key <boxMagic, the kind, the
//     expiry in nanoseconds (8 bytes, big-endian), the state> PXAT <expiry>.
//     A Redis replica holds an opaque string that expires when the window's
//     state would; a redcell replica decodes it.
//   - A deleted or expired key: DEL key.

// boxMagic begins a boxed state's value: a NUL byte, which no decimal TAT
// has, then a name and a format version.
const boxMagic = "\x00redcell1"

// appendChange appends ch as the command that makes a replica hold it.
func appendChange(b []byte, ch storage.Change) []byte {
	if ch.TAT == 0 {
		b = append(b, "*2\r\n$3\r\nDEL\r\n"...)
		return appendBulk(b, ch.Key)
	}
	b = append(b, "*5\r\n$3\r\nSET\r\n"...)
	b = appendBulk(b, ch.Key)
	var num [20]byte
	b = appendBulk(b, appendValue(num[:0], ch))
	b = append(b, "$4\r\nPXAT\r\n"...)
	return appendBulk(b, strconv.AppendInt(num[:0], expireAtMs(ch.TAT), 10))
}

// appendValue appends ch's state as the string a replica holds: a TAT key's
// TAT in decimal, another kind's boxed state.
func appendValue(b []byte, ch storage.Change) []byte {
	if ch.Kind == storage.KindTAT {
		return strconv.AppendInt(b, int64(ch.TAT), 10)
	}
	b = append(b, boxMagic...)
	b = append(b, byte(ch.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(ch.TAT))
	return append(b, ch.Value...)
}

// boxValue is ch's state as the string a snapshot holds (appendValue).
func boxValue(ch storage.Change) []byte { return appendValue(nil, ch) }

// expireAtMs is exp in Unix milliseconds, rounded up: a Redis replica keeps
// the key until the state it holds has passed.
func expireAtMs(exp gcra.Instant) int64 {
	ms := int64(exp) / 1e6
	if int64(exp)%1e6 > 0 {
		ms++
	}
	return ms
}

func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// commandLen is how many bytes args take as a multibulk command as a master
// writes it: what a replica checks each command of its master's stream
// against, so that its offset counts what it applied.
func commandLen(args [][]byte) int {
	n := 1 + digits(len(args)) + 2
	for _, a := range args {
		n += 1 + digits(len(a)) + 2 + len(a) + 2
	}
	return n
}

// digits is how many decimal digits n >= 0 has.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// errNotAState is a value that is neither a decimal TAT nor a boxed state: a
// string redcell has no kind for.
var errNotAState = errors.New("not a redcell state")

// decodeValue turns a snapshot's or a SET's value back into a state: its
// kind, its expiry (a TAT key's TAT) and, for a boxed kind, the state (a
// view of value).
func decodeValue(value []byte) (storage.Kind, gcra.Instant, []byte, error) {
	if len(value) > len(boxMagic) && string(value[:len(boxMagic)]) == boxMagic {
		rest := value[len(boxMagic):]
		if len(rest) < 9 {
			return 0, 0, nil, fmt.Errorf("%w: a boxed state of %d bytes", errNotAState, len(value))
		}
		kind := storage.Kind(rest[0])
		if kind != storage.KindWindow {
			return 0, 0, nil, fmt.Errorf("%w: kind %d", errNotAState, kind)
		}
		exp := gcra.Instant(binary.BigEndian.Uint64(rest[1:9]))
		if exp <= 0 {
			return 0, 0, nil, fmt.Errorf("%w: expiry %d", errNotAState, exp)
		}
		return kind, exp, rest[9:], nil
	}
	tat, ok := parseTAT(value)
	if !ok {
		return 0, 0, nil, fmt.Errorf("%w: %.40q", errNotAState, value)
	}
	return storage.KindTAT, tat, nil, nil
}

// parseTAT reads a TAT written in decimal (a positive int64, without sign
// or leading zero, as appendChange and redis-cell write it) without the
// allocation strconv's error would cost the stream per command.
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

// EncodeValue is a key's state as the string replication sends for it (a
// TAT key's TAT in decimal, another kind's boxed state), for another
// transport of states: a cluster slot's migration.
func EncodeValue(ch storage.Change) []byte { return boxValue(ch) }

// DecodeValue turns EncodeValue's string back into a state: its kind, its
// expiry (a TAT key's TAT) and a boxed kind's state (a view of value).
func DecodeValue(value []byte) (storage.Kind, gcra.Instant, []byte, error) { return decodeValue(value) }
