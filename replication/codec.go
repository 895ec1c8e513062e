package replication

import (
	"strconv"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/storage"
)

// How a key's state travels, in the stream and in the snapshot alike: as a
// Redis string (statecodec) with an absolute expiry, so that a real
// redis-server replica holds every key and a redcell replica gets each back
// exactly.
//
//   - A live key: SET key <its state's string> PXAT <its expiry (a TAT key's
//     TAT) in Unix milliseconds, rounded up>.
//   - A deleted or expired key: DEL key.

// appendChange appends ch as the command that makes a replica hold it.
func appendChange(b []byte, ch storage.Change) []byte {
	if ch.TAT == 0 {
		b = append(b, "*2\r\n$3\r\nDEL\r\n"...)
		return appendBulk(b, ch.Key)
	}
	b = append(b, "*5\r\n$3\r\nSET\r\n"...)
	b = appendBulk(b, ch.Key)
	var num [20]byte
	b = appendBulk(b, statecodec.Append(num[:0], ch))
	b = append(b, "$4\r\nPXAT\r\n"...)
	return appendBulk(b, strconv.AppendInt(num[:0], expireAtMs(ch.TAT), 10))
}

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
