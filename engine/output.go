package engine

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/tidwall/redcon"
)

// A connection's replies: the writers append them to conn.out, within the
// output limits room checks (Limits.MaxOutput, Limits.MaxOutputTotal); conn.flush
// sends them.

// outputTotal counts the reply bytes waiting for all clients together,
// beyond each one's allowance, against a limit.
type outputTotal struct {
	limit int64 // <= 0: none
	used  atomic.Int64
}

// The writers append redcon's encoding of a reply to out.

func (c *Conn) WriteError(msg string) {
	if c.room(len(msg) + 3) {
		c.out = redcon.AppendError(c.out, msg)
	}
}

func (c *Conn) WriteString(s string) {
	if c.room(len(s) + 3) {
		c.out = redcon.AppendString(c.out, s)
	}
}

func (c *Conn) WriteBulk(b []byte) {
	if c.room(intSize(int64(len(b))) + len(b) + 2) {
		c.out = redcon.AppendBulk(c.out, b)
	}
}

func (c *Conn) WriteBulkString(s string) {
	if c.room(intSize(int64(len(s))) + len(s) + 2) {
		c.out = redcon.AppendBulkString(c.out, s)
	}
}

func (c *Conn) WriteInt64(n int64) {
	if c.room(intSize(n)) {
		c.out = redcon.AppendInt(c.out, n)
	}
}

func (c *Conn) WriteArray(n int) {
	if c.room(intSize(int64(n))) {
		c.out = redcon.AppendArray(c.out, n)
	}
}

func (c *Conn) WriteNull() {
	if c.room(5) {
		c.out = redcon.AppendNull(c.out)
	}
}

func (c *Conn) WriteRaw(b []byte) {
	if c.room(len(b)) {
		c.out = append(c.out, b...)
	}
}

// WriteInts encodes the whole reply at once and checks room once, for its
// exact size, after encoding it: five WriteInt64 behind a WriteArray, each
// with its own room check, intSize and redcon's encoder, cost a decision
// about 700 instructions (callgrind, BenchmarkConnBatch), a quarter of it.
func (c *Conn) WriteInts(v [5]int64) {
	if c.closed {
		return
	}
	start := len(c.out)
	if cap(c.out)-start < intsRoom {
		c.out = slices.Grow(c.out, intsRoom)
	}
	// Encoded straight into out's spare room: no buffer to clear, no copy.
	n := putInts((*[intsRoom]byte)(c.out[start:start+intsRoom]), v)
	if int64(start+n) > c.roomLeft && !c.makeRoom(n) {
		return // as room(n) would have it: dropped, the connection closed
	}
	c.out = c.out[:start+n]
}

// AppendInts appends the RESP array of the five integers v to b, as
// WriteInts encodes it: a decision's reply, for whoever writes one
// elsewhere (a test's connection).
func AppendInts(b []byte, v [5]int64) []byte {
	var buf [intsRoom]byte
	return append(b, buf[:putInts(&buf, v)]...)
}

// intsRoom is the most bytes putInts writes: the array's header, five of
// the longest integer, and 8 to spare, as a small number is stored as a
// whole word.
const intsRoom = len("*5\r\n") + 5*len(":-9223372036854775808\r\n") + 8

// putInts writes the RESP array of the five integers v at the start of buf
// and returns its length, byte for byte what redcon.AppendArray and
// redcon.AppendInt write. A decision's integers are nearly always within
// smallInts (0 or 1, the limit, what remains of it, -1 or a few seconds),
// whose whole encoding, ":<n>\r\n", is one 8-byte store. Digit by digit
// and appended piece by piece, the reply cost about 300 instructions
// (callgrind).
func putInts(buf *[intsRoom]byte, v [5]int64) int {
	binary.LittleEndian.PutUint32(buf[:], '*'|'5'<<8|'\r'<<16|'\n'<<24)
	i := len("*5\r\n")
	for _, n := range v {
		if j := uint64(n) + 1; j < uint64(len(smallInts)) {
			e := smallInts[j]
			binary.LittleEndian.PutUint64(buf[i:], e)
			i += int(e >> 56)
			continue
		}
		buf[i] = ':'
		i++
		u := uint64(n)
		if n < 0 {
			buf[i] = '-'
			i++
			u = -u // MinInt64 too: its magnitude, 1<<63, is a uint64
		}
		// Its digits counted first, then written in place from the last:
		// through strconv.AppendInt and a copy, a number of a few digits
		// past the table cost half as much again.
		digits := 1
		for p := uint64(10); digits < 20 && u >= p; p *= 10 {
			digits++
		}
		i += digits
		for j := i - 1; u >= 10; j-- {
			q := u / 10
			buf[j] = byte('0' + u - q*10)
			u = q
		}
		buf[i-digits] = byte('0' + u)
		buf[i], buf[i+1] = '\r', '\n'
		i += 2
	}
	return i
}

// smallInts[n+1] is the RESP integer ":<n>\r\n" for -1 <= n < 999, in the
// low bytes of a little-endian word whose top byte is its length.
var smallInts = func() (t [1000]uint64) {
	for j := range t {
		var w [8]byte
		e := strconv.AppendInt(append(w[:0], ':'), int64(j-1), 10)
		e = append(e, '\r', '\n')
		w[7] = byte(len(e))
		t[j] = binary.LittleEndian.Uint64(w[:])
	}
	return t
}()

func (c *Conn) DeferArray() int { return len(c.out) }

// SetDeferredArray inserts the header of an array of n elements at mark,
// moving the elements written since after it: one copy of the reply, once.
func (c *Conn) SetDeferredArray(mark, n int) {
	var b [24]byte
	hdr := redcon.AppendArray(b[:0], n)
	if mark > len(c.out) || !c.room(len(hdr)) {
		return // dropped meanwhile (output limit)
	}
	c.out = append(c.out, hdr...)
	copy(c.out[mark+len(hdr):], c.out[mark:len(c.out)-len(hdr)])
	copy(c.out[mark:], hdr)
}

// room reports whether n more reply bytes may be queued. Past
// Limits.MaxOutput the replies are dropped and the connection closed, as
// Redis does past client-output-buffer-limit: redcell keeps a batch's
// replies in memory until the batch has run, and a few bytes of requests can
// ask for a lot (COMMAND answers 5 KiB for 9 bytes), so a client pipelining
// such requests, or not reading, could make the server hold any amount.
//
// Beyond a client's first outputAllowance bytes, its replies also count
// against the total for all clients (Limits.MaxOutputTotal), taken in steps
// of outputAllowance: past the total, the client whose replies would pass
// it is the one closed, as Redis's maxmemory-clients closes the client that
// uses the most.
func (c *Conn) room(n int) bool {
	if size := int64(len(c.out) + n); size <= c.roomLeft && !c.closed {
		return true // the common case: one comparison
	}
	return c.makeRoom(n)
}

// makeRoom is room's slow path: a closed connection, or a reply past this
// client's allowance of the total or near its own limit.
func (c *Conn) makeRoom(n int) bool {
	defer c.setRoomLeft()
	if c.closed {
		return false
	}
	size := int64(len(c.out) + n)
	if c.maxOutput > 0 && size > c.maxOutput {
		c.refuseOutput("client closed for overcoming of output buffer limits", c.maxOutput)
		return false
	}
	if size > outputAllowance+c.counted && c.total != nil && c.total.limit > 0 {
		step := (size - outputAllowance - c.counted + outputAllowance - 1) / outputAllowance * outputAllowance
		if c.total.used.Add(step) > c.total.limit {
			c.total.used.Add(-step)
			c.refuseOutput("client closed: the replies waiting for all clients would pass --maxmemory-clients", c.total.limit)
			return false
		}
		c.counted += step
	}
	return true
}

func (c *Conn) refuseOutput(msg string, limit int64) {
	c.need |= NeedClose
	c.e.logger.Warn(msg, "addr", c.addr, "limit", limit)
	c.Drop()
}

// uncount gives back the connection's share of the total.
func (c *Conn) uncount() {
	if c.counted > 0 {
		c.total.used.Add(-c.counted)
		c.counted = 0
		c.setRoomLeft()
	}
}

// setRoomLeft sets roomLeft, the reply size up to which room needs no more
// than one comparison: the client's own limit, and its allowance of the
// total plus what it has counted.
func (c *Conn) setRoomLeft() {
	left := int64(math.MaxInt64)
	if c.maxOutput > 0 {
		left = c.maxOutput
	}
	if c.total != nil && c.total.limit > 0 {
		left = min(left, outputAllowance+c.counted)
	}
	c.roomLeft = left
}
