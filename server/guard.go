package server

import (
	"errors"
	"net"
)

// Protocol limits, checked before redcon parses a byte. redcon trusts the
// lengths a client announces: a bulk length near MaxInt64 overflows its
// arithmetic and panics, and a huge multibulk count spins a core. The guard
// reads the RESP framing as it streams past and refuses such frames the way
// Redis does: an error reply, then the connection is closed.
const (
	// DefaultMaxBulkLen bounds one argument. Redis allows 512 MiB; a
	// rate-limit key never needs more than a few hundred bytes, so redcell
	// refuses anything over 1 MiB rather than buffer it.
	DefaultMaxBulkLen = 1 << 20
	// DefaultMaxArgs bounds the arguments of one command.
	DefaultMaxArgs = 1 << 16
	// DefaultMaxInlineLen bounds an inline (telnet-style) command line, as
	// Redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInlineLen = 64 << 10
)

// Limits are the protocol limits a Server enforces. Zero fields take the
// defaults above.
type Limits struct {
	MaxBulkLen   int64
	MaxArgs      int64
	MaxInlineLen int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	return l
}

// Redis's protocol error replies for the frames the guard refuses.
const (
	errProtoMultibulk = "ERR Protocol error: invalid multibulk length"
	errProtoBulk      = "ERR Protocol error: invalid bulk length"
	errProtoInline    = "ERR Protocol error: too big inline request"
)

var errProtocolLimit = errors.New("protocol limit exceeded")

type guardListener struct {
	net.Listener
	limits Limits
}

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, limits: l.limits}, nil
}

// Scanner states: where in the RESP framing the next byte falls.
const (
	atFrame      = iota // first byte of a command
	inInline            // an inline command line, until '\n'
	inCount             // the digits of "*<count>\r\n"
	atBulkHeader        // expecting '$' of the next argument
	inBulkLen           // the digits of "$<len>\r\n"
	inBulkBody          // skipping len+2 bytes of argument and CRLF
	passThrough         // framing redcon will reject itself: stop checking
)

// guardConn scans what it reads. The scan mirrors redcon's framing; on input
// redcon would reject anyway it stops checking and lets redcon answer.
type guardConn struct {
	net.Conn
	limits Limits

	state    int
	num      int64 // digits read so far in a count or length
	digits   int
	neg      bool
	args     int64 // arguments left in the current command
	skip     int64 // bytes left in the current bulk body
	line     int64 // bytes in the current inline line
	refusal  string
	refusing bool
}

func (g *guardConn) Read(p []byte) (int, error) {
	if g.refusing {
		// The commands before the bad frame have been answered: now say
		// why, and end the connection.
		_, _ = g.Conn.Write([]byte("-" + g.refusal + "\r\n"))
		return 0, errProtocolLimit
	}
	n, err := g.Conn.Read(p)
	if k, bad := g.scan(p[:n]); bad != "" {
		g.refusing, g.refusal = true, bad
		if k == 0 {
			return g.Read(p)
		}
		return k, nil // hand redcon the good commands before the bad frame
	}
	return n, err
}

// scan advances the framing over b. It returns len(b) and "", or the offset
// where the refused frame starts in b (0 if it started in an earlier read)
// and the refusal text.
func (g *guardConn) scan(b []byte) (int, string) {
	frame := 0 // where the current frame starts in b; 0 if it began earlier
	refuse := func(why string) (int, string) { return frame, why }
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch g.state {
		case passThrough:
			return len(b), ""
		case atFrame:
			frame = i
			if c == '*' {
				g.state, g.num, g.digits, g.neg = inCount, 0, 0, false
			} else {
				g.state, g.line = inInline, 1
			}
		case inInline:
			if c == '\n' {
				g.state = atFrame
				continue
			}
			g.line++
			if g.line > g.limits.MaxInlineLen {
				return refuse(errProtoInline)
			}
		case inCount, inBulkLen:
			if !g.digit(c) {
				g.state = passThrough
				continue
			}
			if c != '\n' {
				continue
			}
			if g.state == inCount {
				if g.neg || g.num <= 0 {
					g.state = passThrough // redcon rejects it itself
					continue
				}
				if g.num > g.limits.MaxArgs {
					return refuse(errProtoMultibulk)
				}
				g.args, g.state = g.num, atBulkHeader
				continue
			}
			if g.neg || g.num > g.limits.MaxBulkLen {
				return refuse(errProtoBulk)
			}
			g.skip, g.state = g.num+2, inBulkBody
		case atBulkHeader:
			if c != '$' {
				g.state = passThrough
				continue
			}
			g.state, g.num, g.digits, g.neg = inBulkLen, 0, 0, false
		case inBulkBody:
			step := min(g.skip, int64(len(b)-i))
			g.skip -= step
			i += int(step) - 1
			if g.skip == 0 {
				g.args--
				if g.args == 0 {
					g.state = atFrame
				} else {
					g.state = atBulkHeader
				}
			}
		}
	}
	return len(b), ""
}

// digit accumulates one byte of "<digits>\r\n" and reports whether it fits
// the form. Values are capped so that they cannot overflow.
func (g *guardConn) digit(c byte) bool {
	switch {
	case c == '-' && g.digits == 0 && !g.neg:
		g.neg = true
	case c >= '0' && c <= '9':
		g.digits++
		if g.num < 1<<50 {
			g.num = g.num*10 + int64(c-'0')
		}
	case c == '\r', c == '\n':
	default:
		return false
	}
	return true
}
