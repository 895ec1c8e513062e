// Package resp reads Redis protocol commands (RESP2 and RESP3 clients send
// the same framing) from a connection, bounded as Redis bounds them.
//
// A Reader parses multibulk commands ("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n")
// and inline ones ("ECHO hi\r\n", split as Redis's sdssplitargs splits
// them) in one pass over its read buffer: it checks every limit as each
// header arrives, refuses what Redis refuses with Redis's error texts, and
// returns the arguments as slices of its buffer, without copying them.
package resp

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
)

// Limits bound what one command may announce. A zero or negative field
// takes Redis's default.
type Limits struct {
	// MaxBulkLen bounds one argument, as Redis's proto-max-bulk-len. The
	// default is 512 MiB.
	MaxBulkLen int64
	// MaxArgs bounds the arguments of one command, its name included. The
	// default is 2^31-1, Redis's INT_MAX.
	MaxArgs int64
	// MaxInlineLen bounds an inline command's line, its CR included. The
	// default is 64 KiB, Redis's PROTO_INLINE_MAX_SIZE.
	MaxInlineLen int64
	// MaxQueryLen bounds the bytes of one multibulk command, its headers and
	// the arguments they announce, as Redis's client-query-buffer-limit.
	// The default is 1 GiB.
	MaxQueryLen int64
}

// Limits Redis 7 applies to a client that has yet to authenticate, when a
// password is required: a client that has not proved who it is may not make
// the server buffer more than a few small arguments. They apply to
// multibulk commands only, as in Redis; an inline command is bounded by
// MaxInlineLen.
const (
	UnauthMaxArgs    = 10
	UnauthMaxBulkLen = 16 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = 512 << 20
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = math.MaxInt32
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = 64 << 10
	}
	if l.MaxQueryLen <= 0 {
		l.MaxQueryLen = 1 << 30
	}
	return l
}

const (
	// InitialSize is the size of a Reader's buffer to begin with, and what
	// it shrinks back to once it has held a long command: redcon's size.
	InitialSize = 4096
	// argsKeepCap is the most arguments the reused argument slice keeps
	// room for: one command of 65536 arguments must not pin 1.5 MB on its
	// connection for good.
	argsKeepCap = 64
	// headerRoom is more than the longest header a buffer may hold
	// incomplete: '$', '-', 19 digits and the CR.
	headerRoom = 32
)

// Reader reads commands from a connection. Next returns the commands
// already buffered, one by one, and Fill reads more; a caller runs every
// command Next returns before it calls Fill, so that all the commands of one
// read run before the connection blocks on the next.
//
// The buffer grows only for one command that does not fit in it, at once to
// what the command's headers announce, never beyond the limits (MaxQueryLen,
// MaxInlineLen), and goes back to InitialSize once that command has been
// used. An incomplete command is not parsed again from its start when more
// of it arrives: Next resumes at the header of the argument it stopped at.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	src io.Reader
	lim Limits
	// max is the most an incomplete command the limits let through may
	// fill: a multibulk command's announced bytes and the header after
	// them, or an inline line.
	max int

	buf []byte
	// buf[r:w] is the input not yet used: the commands Next has yet to
	// return, the last of them perhaps incomplete.
	r, w int
	// p is where Next resumes reading the command at r: the header of its
	// next argument, or for an inline command the first byte not yet
	// searched for its LF.
	p int
	// left counts the arguments of the multibulk command at r still to be
	// read; 0 between commands. inline is set while an inline command is
	// read.
	left   int64
	inline bool
	// size is the bytes of the command at r through its last whole
	// argument, announced as they are, for MaxQueryLen.
	size int64
	// need is the least the buffer must hold, from r, for the command at r
	// to make progress: what Fill grows it to.
	need int
	// fillFrom is where the bytes of the last Fill begin in buf;
	// usedFrom where the input Next has used since then begins (Used).
	fillFrom, usedFrom int

	args    [][]byte // the command's arguments, reused
	err     error    // the read error, returned once what came with it is used
	refusal error    // the refusal Next returned, returned ever after

	peek peeked // what PeekKeys last read of the command after the next
}

// NewReader returns a Reader of the commands src sends, under lim.
func NewReader(src io.Reader, lim Limits) *Reader {
	lim = lim.withDefaults()
	return &Reader{
		src:  src,
		lim:  lim,
		max:  int(max(min(lim.MaxQueryLen, math.MaxInt64-headerRoom)+headerRoom, lim.MaxInlineLen+1)),
		buf:  make([]byte, InitialSize),
		args: make([][]byte, 0, 8),
	}
}

// Next returns the next whole command buffered, its arguments being slices
// of the Reader's buffer: they, and the slice holding them, are valid until
// the next call of Next or Fill, so a caller that keeps one must copy it. A
// command always has at least one argument: Next skips empty ones ("*0",
// "*-1", a blank line), which Redis reads and ignores.
//
// When no whole command is buffered, Next returns nil and a nil error: call
// Fill. A refusal is a *ProtocolError, to be answered before closing the
// connection, or ErrQueryBufferLimit, to close it without a reply; once
// refused, Next returns the same error ever after.
//
// authed says whether the client has authenticated: if not, the smaller
// limits UnauthMaxArgs and UnauthMaxBulkLen apply to this command. It is
// asked per command because an AUTH in a pipeline lifts them for the very
// next command.
func (r *Reader) Next(authed bool) ([][]byte, error) {
	for r.refusal == nil {
		switch {
		case r.left > 0:
			return r.bulks(authed)
		case r.inline:
			args, err := r.inlineCommand()
			if err == nil && !r.inline && len(args) == 0 {
				continue // a blank line
			}
			return args, err
		case r.r == r.w:
			return nil, nil
		case r.buf[r.r] != '*':
			r.inline, r.p = true, r.r
		default:
			if ok, err := r.count(authed); !ok || err != nil {
				return nil, err
			}
		}
	}
	return nil, r.refusal
}

// refuse makes err the Reader's refusal.
func (r *Reader) refuse(err error) ([][]byte, error) {
	r.refusal = err
	return nil, err
}

// more notes that the command at r needs the buffer to hold need bytes from
// r before it can go on, and that it resumes at p.
func (r *Reader) more(p, need int) ([][]byte, error) {
	r.p, r.need = p, need
	return nil, nil
}

// count reads the header "*<count>\r\n" of the multibulk command at r. It
// reports false if the header is incomplete or refused; a count of zero or
// less is a command Redis ignores, skipped here.
func (r *Reader) count(authed bool) (bool, error) {
	b := r.buf[:r.w]
	n, end := shortNumber(b, r.r+1)
	st := numOK
	if end == 0 {
		n, end, st = number(b, r.r+1)
	}
	switch {
	case st == numMore:
		r.more(r.r, len(b)-r.r+1)
		return false, nil
	case st == numBad || n > r.lim.MaxArgs:
		_, err := r.refuse(ErrMultibulkLength)
		return false, err
	case !authed && n > UnauthMaxArgs:
		_, err := r.refuse(ErrUnauthMultibulkLength)
		return false, err
	case n <= 0:
		r.r = end
		return true, nil
	}
	r.left, r.p, r.size = n, end, int64(end-r.r)
	if cap(r.args) > argsKeepCap {
		r.args = make([][]byte, 0, 8)
	}
	r.args = r.args[:0]
	return true, nil
}

// bulks reads the arguments "$<len>\r\n<bytes>\r\n" of the multibulk command
// at r, from p on, and returns the command once it is whole.
func (r *Reader) bulks(authed bool) ([][]byte, error) {
	b := r.buf[:r.w]
	p, left, size, args := r.p, r.left, r.size, r.args
	for ; left > 0; left-- {
		if p == len(b) {
			return r.pause(p, len(b)-r.r+1, left, size, args)
		}
		if b[p] != '$' {
			return r.refuse(expectedBulk(b[p]))
		}
		n, end := shortNumber(b, p+1)
		if end == 0 {
			var st int
			if n, end, st = number(b, p+1); st == numMore {
				return r.pause(p, len(b)-r.r+1, left, size, args)
			} else if st == numBad {
				return r.refuse(ErrBulkLength)
			}
		}
		switch {
		case n < 0 || n > r.lim.MaxBulkLen:
			return r.refuse(ErrBulkLength)
		case !authed && n > UnauthMaxBulkLen:
			return r.refuse(ErrUnauthBulkLength)
		case n > r.lim.MaxQueryLen-size-int64(end-p)-2: // without overflowing
			return r.refuse(ErrQueryBufferLimit)
		}
		stop := end + int(n)
		if stop+2 > len(b) {
			if stop < len(b) && b[stop] != '\r' {
				return r.refuse(ErrBulkLength)
			}
			return r.pause(p, stop+2-r.r, left, size, args)
		}
		if binary.LittleEndian.Uint16(b[stop:]) != '\n'<<8|'\r' {
			return r.refuse(ErrBulkLength)
		}
		args = append(args, b[end:stop])
		size += int64(stop + 2 - p)
		p = stop + 2
	}
	r.r, r.p, r.left, r.args = p, p, 0, args
	return args, nil
}

// pause keeps where bulks stopped, the command being incomplete: more.
func (r *Reader) pause(p, need int, left, size int64, args [][]byte) ([][]byte, error) {
	r.left, r.size, r.args = left, size, args
	return r.more(p, need)
}

// inlineCommand reads the inline command at r once its line is whole. It
// returns no arguments for a blank line.
func (r *Reader) inlineCommand() ([][]byte, error) {
	b := r.buf[:r.w]
	j := bytes.IndexByte(b[r.p:], '\n')
	if j < 0 {
		if int64(len(b)-r.r) > r.lim.MaxInlineLen {
			return r.refuse(ErrInlineTooBig)
		}
		return r.more(len(b), len(b)-r.r+1)
	}
	end := r.p + j
	if int64(end-r.r) > r.lim.MaxInlineLen {
		return r.refuse(ErrInlineTooBig)
	}
	line := b[r.r:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if cap(r.args) > argsKeepCap {
		r.args = make([][]byte, 0, 8)
	}
	args, ok := splitArgs(line, r.args[:0])
	r.args = args
	r.r, r.p, r.inline = end+1, end+1, false
	switch {
	case !ok:
		return r.refuse(ErrUnbalancedQuotes)
	case int64(len(args)) > r.lim.MaxArgs:
		return r.refuse(ErrMultibulkLength)
	}
	return args, nil
}
