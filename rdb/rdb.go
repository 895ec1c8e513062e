// Package rdb writes and reads Redis RDB snapshots of string keys, the form
// a full synchronisation sends from a master to a replica.
//
// A Writer's file loads into redis-server 5.0 and later (7.0 and 7.2
// included); a Reader reads the string keys of a file any redis-server up
// to 7.4 saved. redcell keys are strings with an optional expiry, so that is
// all either side carries: a Reader refuses a file holding a list, a hash or
// any other kind of value with ErrUnsupportedType.
package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Entry is one key of a snapshot.
type Entry struct {
	Key, Value []byte
	// ExpireAtMs is when the key expires, in milliseconds since the Unix
	// epoch; 0 means it does not. A Reader returns a file's expiry of
	// exactly 0 ms (the epoch, long past) as -1, so it stays past and
	// distinct from no expiry.
	ExpireAtMs int64
}

// Aux is an auxiliary field of the file's preamble, such as redis-ver or
// repl-offset. Redis ignores names it does not know.
type Aux struct{ Key, Value string }

// WriteVersion is the RDB version a Writer puts in its header. Version 9 is
// the oldest that defines everything a Writer emits: the checksum (5), AUX
// and RESIZEDB (7), and an EXPIRETIME_MS that is little-endian on every
// host (9; before it, big-endian hosts wrote their own byte order). A
// string key's encoding has not changed since, and Redis loads any version
// from 1 up to its own (7.0 writes 10 and refuses 11; 7.2 writes 11; 7.4
// writes 12), so 9 loads in every redis-server from 5.0 on.
const WriteVersion = 9

// MaxReadVersion is the newest RDB version a Reader accepts: what Redis 7.4
// writes. Versions 10 to 12 changed how collections are encoded, not
// strings, and added SLOT_INFO, which a Reader skips.
const MaxReadVersion = 12

// The errors a Reader or Writer reports. Each is wrapped with detail, so
// test for them with errors.Is; a truncated file wraps io.ErrUnexpectedEOF
// instead.
var (
	// ErrCorrupt: the bytes are not an RDB file or break its format.
	ErrCorrupt = errors.New("rdb: corrupt file")
	// ErrChecksum: the file's CRC-64 is not that of its contents.
	ErrChecksum = errors.New("rdb: checksum mismatch")
	// ErrUnsupportedType: a key holds a value other than a string; the
	// message gives the type byte.
	ErrUnsupportedType = errors.New("rdb: unsupported value type")
	// ErrUnsupportedVersion: the header's RDB version is 0 or newer than
	// MaxReadVersion.
	ErrUnsupportedVersion = errors.New("rdb: unsupported RDB version")
	// ErrTooLarge: a string is longer than ReaderOptions.MaxLen.
	ErrTooLarge = errors.New("rdb: string longer than the reader's MaxLen")
	// ErrClosed: Write or Close was called after Close.
	ErrClosed = errors.New("rdb: writer closed")
)

// RDB opcodes and value types (Redis's src/rdb.h).
const (
	opSlotInfo     = 0xf4 // 7.4: slot id, keys and expires of a cluster slot
	opFunction2    = 0xf5 // 7.0: a function library's code
	opFunctionPre  = 0xf6 // 7.0 release candidates' function library
	opModuleAux    = 0xf7 // a module's data outside the keyspace
	opIdle         = 0xf8 // the next key's LRU idle time
	opFreq         = 0xf9 // the next key's LFU counter
	opAux          = 0xfa // an aux field
	opResizeDB     = 0xfb // sizes of the keyspace and the expires
	opExpireTimeMs = 0xfc // the next key's expiry, int64 ms little-endian
	opExpireTime   = 0xfd // the next key's expiry, int32 s little-endian
	opSelectDB     = 0xfe // the db of the keys that follow
	opEOF          = 0xff // end of the keys; the checksum follows

	typeString = 0
)

// Length encodings: the top two bits of a length's first byte.
const (
	len6     = 0    // 00xxxxxx
	len14    = 1    // 01xxxxxx xxxxxxxx
	len32    = 0x80 // 10000000 then 4 bytes big-endian
	len64    = 0x81 // 10000001 then 8 bytes big-endian
	lenIsEnc = 3    // 11xxxxxx: a special string encoding, below
)

// writeBufferSize is how much a Writer buffers before writing to its
// io.Writer, so a network connection sees few large writes, not three
// small ones per key.
const writeBufferSize = 32 << 10

// Writer writes one RDB file of string keys in db 0. Its output is
// buffered: only Close guarantees that everything has reached the
// underlying io.Writer. The first error writing is returned by that call
// and every later one. A Writer is not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer // writes to sum
	sum     checksumWriter
	err     error
	scratch [1 + 8 + 1 + 9]byte // an opcode, an expiry, a type, a length
}

// checksumWriter sums what it passes on. Behind the buffer it sums 32 KiB
// at a time in slicing-by-8's eight-byte steps, where summing each of a
// small key's four pieces went mostly byte by byte (by the profile of
// BenchmarkWriter, 34 -> 26 ns of a key's time in crc64Update).
type checksumWriter struct {
	w   io.Writer
	crc uint64
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc64Update(c.crc, p[:n])
	return n, err
}

// NewWriter starts an RDB file on w: the header "REDIS0009" (WriteVersion),
// the aux fields in their order, then SELECTDB 0 and RESIZEDB with keys and
// expires, the number of keys to come and how many of them expire. Redis
// only sizes its tables from RESIZEDB, so a count that turns out wrong
// costs a rehash, not correctness; negative counts are an error. A file
// Redis reads at start-up or over replication should carry redis-ver,
// redis-bits, ctime, used-mem and aof-base as Redis's own do; repl-id is
// used only when exactly 40 characters.
func NewWriter(w io.Writer, aux []Aux, keys, expires int) (*Writer, error) {
	if keys < 0 || expires < 0 {
		return nil, fmt.Errorf("rdb: RESIZEDB sizes must not be negative (keys %d, expires %d)", keys, expires)
	}
	wr := &Writer{sum: checksumWriter{w: w}}
	wr.bw = bufio.NewWriterSize(&wr.sum, writeBufferSize)
	wr.write(fmt.Appendf(wr.scratch[:0], "REDIS%04d", WriteVersion))
	for _, a := range aux {
		wr.write([]byte{opAux})
		wr.writeString(a.Key)
		wr.writeString(a.Value)
	}
	wr.write([]byte{opSelectDB, 0, opResizeDB})
	wr.write(appendLen(wr.scratch[:0], uint64(keys)))
	wr.write(appendLen(wr.scratch[:0], uint64(expires)))
	if wr.err != nil {
		return nil, wr.err
	}
	return wr, nil
}

// Write adds a string key: EXPIRETIME_MS first when e.ExpireAtMs is not 0,
// then the key and the value, each as a length and its bytes, without LZF
// compression or integer encoding. Redis refuses a file with the same key
// twice in a db; the caller writes each key once. Write does not retain e.
func (w *Writer) Write(e Entry) error {
	if w.err != nil {
		return w.err
	}
	b := w.scratch[:0]
	if e.ExpireAtMs != 0 {
		b = append(b, opExpireTimeMs)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.ExpireAtMs))
	}
	b = append(b, typeString)
	b = appendLen(b, uint64(len(e.Key)))
	w.write(b)
	w.write(e.Key)
	w.write(appendLen(w.scratch[:0], uint64(len(e.Value))))
	w.write(e.Value)
	return w.err
}

// Close ends the file with the EOF opcode and the CRC-64 of everything
// before the checksum, little-endian, and flushes the buffer. It does not
// close the underlying io.Writer. After Close, Write and Close return
// ErrClosed.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	w.write([]byte{opEOF})
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err == nil {
		_, w.err = w.sum.w.Write(binary.LittleEndian.AppendUint64(w.scratch[:0], w.sum.crc))
	}
	if w.err != nil {
		return w.err
	}
	w.err = ErrClosed
	return nil
}

// write adds p to the file, unless an earlier write failed.
func (w *Writer) write(p []byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(p)
	}
}

func (w *Writer) writeString(s string) {
	w.write(appendLen(w.scratch[:0], uint64(len(s))))
	if w.err == nil {
		_, w.err = w.bw.WriteString(s)
	}
}

// appendLen appends n in the shortest of Redis's length encodings.
func appendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|len14<<6, byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(b, len32), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, len64), n)
	}
}
