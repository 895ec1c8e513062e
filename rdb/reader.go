package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Special string encodings, after a 11xxxxxx first byte.
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// DefaultMaxLen is ReaderOptions.MaxLen's default: 512 MiB, the longest
// string Redis stores (its proto-max-bulk-len).
const DefaultMaxLen = 512 << 20

// ReaderOptions configure a Reader. The zero value is ready to use.
type ReaderOptions struct {
	// MaxLen is the longest string (key, value or aux field) the Reader
	// accepts, in bytes, compressed or not; a longer one is ErrTooLarge.
	// Whatever a length field claims, no buffer the Reader allocates for a
	// string is larger than MaxLen, and it grows as the bytes arrive (an
	// LZF string's output is allocated once its compressed bytes are in,
	// at most 88 times their size, the most LZF expands), so a short,
	// corrupt stream costs memory in proportion to its own length. The
	// default value (0) is DefaultMaxLen. Negative is an error.
	MaxLen int
}

// Reader reads the string keys of an RDB file in order. Aux fields, db
// numbers, size hints, LRU and LFU data, functions and modules' aux data
// are read past; keys of every db are returned alike, without their db
// number, since redcell has db 0 only. A key that already expired is
// returned all the same: whether to keep it is the caller's decision (a
// replica keeps what its master sent). A Reader is not safe for
// concurrent use.
type Reader struct {
	src     byteReader
	version int
	maxLen  uint64
	crc     uint64
	off     int64 // bytes read, for the errors' offsets
	aux     []Aux
	err     error // the error every later Next returns: io.EOF at the end
	skipBuf []byte
}

type byteReader interface {
	io.Reader
	io.ByteReader
}

// NewReader reads and checks the header: "REDIS" and a four-digit version
// from 1 to MaxReadVersion. If r is an io.ByteReader (a *bufio.Reader, a
// *bytes.Reader) the Reader reads nothing past the file's last byte, so
// what follows the snapshot on a replication connection stays in r;
// otherwise it buffers r and may read ahead.
func NewReader(r io.Reader, opts ReaderOptions) (*Reader, error) {
	if opts.MaxLen < 0 {
		return nil, fmt.Errorf("rdb: ReaderOptions.MaxLen must not be negative, got %d", opts.MaxLen)
	}
	rd := &Reader{maxLen: DefaultMaxLen}
	if opts.MaxLen > 0 {
		rd.maxLen = uint64(opts.MaxLen)
	}
	if br, ok := r.(byteReader); ok {
		rd.src = br
	} else {
		rd.src = bufio.NewReader(r)
	}
	var h [9]byte
	if err := rd.readFull(h[:]); err != nil {
		return nil, err
	}
	if string(h[:5]) != "REDIS" {
		return nil, fmt.Errorf("%w: the header %q does not begin with REDIS", ErrCorrupt, h[:])
	}
	v, err := strconv.ParseUint(string(h[5:]), 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: the header's version %q is not four digits", ErrCorrupt, h[5:])
	}
	if v < 1 || v > MaxReadVersion {
		return nil, fmt.Errorf("%w: the file is version %d, this reader knows 1 to %d", ErrUnsupportedVersion, v, MaxReadVersion)
	}
	rd.version = int(v)
	return rd, nil
}

// Version is the file's RDB version, from its header.
func (r *Reader) Version() int { return r.version }

// Aux returns a copy of the aux fields read so far, in the file's order.
// Redis writes them before the keys, so after the first Next they are all
// there.
func (r *Reader) Aux() []Aux { return slices.Clone(r.aux) }

// Next returns the next key. The Entry's slices are new and the caller's.
// After the last key it reads the EOF opcode and the checksum and returns
// io.EOF, once the checksum matches the file's contents (or is 0, which
// Redis writes with rdbchecksum off); a mismatch is ErrChecksum. Any error
// ends the file: every later call returns it again.
func (r *Reader) Next() (Entry, error) {
	if r.err != nil {
		return Entry{}, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (Entry, error) {
	var expire int64
	for {
		at := r.off
		op, err := r.readByte()
		if err != nil {
			return Entry{}, err
		}
		switch op {
		case typeString:
			key, err := r.readString()
			if err != nil {
				return Entry{}, err
			}
			value, err := r.readString()
			if err != nil {
				return Entry{}, err
			}
			return Entry{Key: key, Value: value, ExpireAtMs: expire}, nil
		case opExpireTimeMs:
			var b [8]byte
			if err := r.readFull(b[:]); err != nil {
				return Entry{}, err
			}
			expire = expiry(int64(binary.LittleEndian.Uint64(b[:])))
		case opExpireTime:
			var b [4]byte
			if err := r.readFull(b[:]); err != nil {
				return Entry{}, err
			}
			expire = expiry(int64(int32(binary.LittleEndian.Uint32(b[:]))) * 1000)
		case opFreq:
			if _, err := r.readByte(); err != nil {
				return Entry{}, err
			}
		case opIdle, opSelectDB:
			if _, err := r.readPlainLen(); err != nil {
				return Entry{}, err
			}
		case opResizeDB, opSlotInfo:
			n := 2
			if op == opSlotInfo {
				n = 3
			}
			for range n {
				if _, err := r.readPlainLen(); err != nil {
					return Entry{}, err
				}
			}
		case opAux:
			k, err := r.readString()
			if err != nil {
				return Entry{}, err
			}
			v, err := r.readString()
			if err != nil {
				return Entry{}, err
			}
			r.aux = append(r.aux, Aux{Key: string(k), Value: string(v)})
		case opFunction2:
			if err := r.skipString(); err != nil {
				return Entry{}, err
			}
		case opModuleAux:
			if err := r.skipModuleAux(); err != nil {
				return Entry{}, err
			}
		case opFunctionPre:
			return Entry{}, fmt.Errorf("%w: opcode %d (a function library as Redis 7.0's release candidates wrote it) at offset %d", ErrUnsupportedType, op, at)
		case opEOF:
			return Entry{}, r.end()
		default:
			if name, ok := typeNames[op]; ok {
				return Entry{}, fmt.Errorf("%w: type %d (%s) at offset %d; redcell keys are strings", ErrUnsupportedType, op, name, at)
			}
			return Entry{}, fmt.Errorf("%w: unknown opcode or value type %d at offset %d", ErrCorrupt, op, at)
		}
	}
}

// expiry maps a file's expiry to an Entry's: the epoch itself to -1, since
// 0 is no expiry.
func expiry(ms int64) int64 {
	if ms == 0 {
		return -1
	}
	return ms
}

// typeNames names the value types of Redis's src/rdb.h that are not strings.
var typeNames = map[byte]string{
	1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset", 6: "module", 7: "module",
	9: "hash zipmap", 10: "list ziplist", 11: "set intset", 12: "zset ziplist",
	13: "hash ziplist", 14: "list quicklist", 15: "stream", 16: "hash listpack",
	17: "zset listpack", 18: "list quicklist", 19: "stream", 20: "set listpack",
	21: "stream", 22: "hash with field expiry", 23: "hash listpack with field expiry",
	24: "hash with field expiry", 25: "hash listpack with field expiry",
}

// end reads the checksum after the EOF opcode (files of version 5 on have
// one) and returns io.EOF if it matches.
func (r *Reader) end() error {
	if r.version < 5 {
		return io.EOF
	}
	want := r.crc
	var b [8]byte
	if err := r.readFull(b[:]); err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(b[:]); got != 0 && got != want {
		return fmt.Errorf("%w: the file says %#016x, its contents' CRC-64 is %#016x", ErrChecksum, got, want)
	}
	return io.EOF
}

// readLen reads a length. When its first byte's top bits are 11, it is
// instead a special string encoding, returned with enc true.
func (r *Reader) readLen() (n uint64, enc bool, err error) {
	at := r.off
	b, err := r.readByte()
	if err != nil {
		return 0, false, err
	}
	switch {
	case b>>6 == len6:
		return uint64(b & 0x3f), false, nil
	case b>>6 == len14:
		b2, err := r.readByte()
		return uint64(b&0x3f)<<8 | uint64(b2), false, err
	case b>>6 == lenIsEnc:
		return uint64(b & 0x3f), true, nil
	case b == len32:
		var p [4]byte
		err := r.readFull(p[:])
		return uint64(binary.BigEndian.Uint32(p[:])), false, err
	case b == len64:
		var p [8]byte
		err := r.readFull(p[:])
		return binary.BigEndian.Uint64(p[:]), false, err
	}
	return 0, false, fmt.Errorf("%w: unknown length encoding %#02x at offset %d", ErrCorrupt, b, at)
}

// readPlainLen reads a length that cannot be a string encoding.
func (r *Reader) readPlainLen() (uint64, error) {
	at := r.off
	n, enc, err := r.readLen()
	if err == nil && enc {
		err = fmt.Errorf("%w: a string encoding where a length belongs at offset %d", ErrCorrupt, at)
	}
	return n, err
}

// Module value opcodes (src/rdb.h RDB_MODULE_OPCODE_*).
const (
	moduleEOF    = 0
	moduleSInt   = 1
	moduleUInt   = 2
	moduleFloat  = 3
	moduleDouble = 4
	moduleString = 5
)

// skipModuleAux reads past a MODULE_AUX record: the module's id, a UINT
// saying when it was saved, then values each led by its opcode up to the
// EOF opcode, as redis-check-rdb walks them without the module.
func (r *Reader) skipModuleAux() error {
	if _, err := r.readPlainLen(); err != nil {
		return err
	}
	at := r.off
	op, err := r.readPlainLen()
	if err != nil {
		return err
	}
	if op != moduleUInt {
		return fmt.Errorf("%w: module aux data's when opcode is %d, not %d, at offset %d", ErrCorrupt, op, moduleUInt, at)
	}
	if _, err := r.readPlainLen(); err != nil {
		return err
	}
	for {
		at := r.off
		op, err := r.readPlainLen()
		if err != nil {
			return err
		}
		switch op {
		case moduleEOF:
			return nil
		case moduleSInt, moduleUInt:
			_, _, err = r.readLen()
		case moduleFloat:
			err = r.skip(4)
		case moduleDouble:
			err = r.skip(8)
		case moduleString:
			err = r.skipString()
		default:
			err = fmt.Errorf("%w: unknown module value opcode %d at offset %d", ErrCorrupt, op, at)
		}
		if err != nil {
			return err
		}
	}
}

// skip reads past n bytes.
func (r *Reader) skip(n uint64) error {
	if r.skipBuf == nil {
		r.skipBuf = make([]byte, 4<<10)
	}
	for n > 0 {
		b := r.skipBuf[:min(n, uint64(len(r.skipBuf)))]
		if err := r.readFull(b); err != nil {
			return err
		}
		n -= uint64(len(b))
	}
	return nil
}

// readByte reads one byte into the checksum. The end of the input is
// io.ErrUnexpectedEOF: a whole file ends with its EOF opcode, not there.
func (r *Reader) readByte() (byte, error) {
	b, err := r.src.ReadByte()
	if err != nil {
		return 0, r.readError(err)
	}
	r.crc = crc64Byte(r.crc, b)
	r.off++
	return b, nil
}

// readFull fills p and the checksum, or says where the input ended.
func (r *Reader) readFull(p []byte) error {
	n, err := io.ReadFull(r.src, p)
	r.crc = crc64Update(r.crc, p[:n])
	r.off += int64(n)
	if err != nil {
		return r.readError(err)
	}
	return nil
}

func (r *Reader) readError(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("rdb: reading at offset %d: %w", r.off, err)
}
