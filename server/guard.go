package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// Every connection's bytes pass through a guardConn before redcon's parser
// (ReadNextCommand, in conn.go) sees them, because redcon (v1.6.4) trusts
// its input:
//
//   - a bulk length near MaxInt64 overflows its index arithmetic and panics,
//     and a huge multibulk count spins a core;
//   - its inline parser copies the rest of the line for every argument: one
//     64 KiB line of "a a a ..." costs 1.1 GB of allocation and 0.3 s of CPU;
//   - a read buffer that doubles whenever it fills with a command
//     incomplete, and shrinks only once drained (redcon's, and conn's),
//     grows without bound under a client streaming commands that never
//     pauses on a command boundary (191 MB sent in 5 s grew the heap by
//     405 MB);
//   - it parses an incomplete command again from its start on every read,
//     so a command of many small arguments trickled in costs quadratic time.
//
// The guard follows the RESP framing as it streams past. It hands the parser
// whole multibulk commands only, or a long command in chunks of at least
// readChunk bytes; it turns inline commands into multibulk ones itself,
// splitting them as Redis's sdssplitargs does; and it refuses what Redis
// refuses the way Redis does, with an error reply, then closing the
// connection. It also keeps the idle timeout and bounds TLS handshakes.
const (
	// readChunk is the most one read takes from a socket, as Redis's
	// PROTO_IOBUF_LEN, and the least of a long command handed on at once.
	readChunk = 16 << 10
	// writeChunk is how much of a reply is written under one deadline when
	// there is an idle timeout: a client reading slowly but steadily is
	// not idle.
	writeChunk = 64 << 10
	// tlsHandshakeTimeout bounds a TLS handshake.
	tlsHandshakeTimeout = 10 * time.Second
	// refusalTimeout bounds writing the reply that explains a refusal.
	refusalTimeout = 5 * time.Second
)

// Redis's protocol error replies.
const (
	errProtoMultibulk   = "ERR Protocol error: invalid multibulk length"
	errProtoBulk        = "ERR Protocol error: invalid bulk length"
	errProtoInline      = "ERR Protocol error: too big inline request"
	errProtoQuotes      = "ERR Protocol error: unbalanced quotes in request"
	errUnauthMultibulk  = "ERR Protocol error: unauthenticated multibulk length"
	errUnauthBulk       = "ERR Protocol error: unauthenticated bulk length"
	errProtoExpectedFmt = "ERR Protocol error: expected '$', got '"
)

// closeSilently is the refusal of a client over the query buffer limit:
// Redis closes such a connection without a reply.
const closeSilently = "\x00"

// errProtocolLimit ends a connection the guard refused; serveConn closes it.
var errProtocolLimit = errors.New("connection refused by a protocol limit")

// guardListener wraps every accepted connection in a guardConn.
type guardListener struct {
	net.Listener
	srv    *Server
	limits Limits
	// live counts the connections whose goroutine has yet to end: Serve
	// waits for them, so that no command runs after it returns.
	live  sync.WaitGroup
	mu    sync.Mutex
	conns map[*conn]struct{} // open connections, closed by serve at the end
}

// Accept returns the next connection. Errors other than a closed listener
// (EMFILE when out of file descriptors, ECONNABORTED) are retried with a
// growing pause, as net/http does: retrying at once would spin in a loop
// that pins a core.
func (l *guardListener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			return &guardConn{Conn: c, limits: &l.limits, srv: l.srv}, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		pause = min(max(2*pause, 5*time.Millisecond), time.Second)
		l.srv.cfg.Logger.Warn("accept failed; retrying", "err", err, "pause", pause)
		time.Sleep(pause)
	}
}

// Framing states: where in the RESP framing the next byte falls.
const (
	atFrame      = iota // the first byte of a command
	inInline            // an inline command line, until '\n'
	inCount             // the digits of "*<count>\r\n"
	atBulkHeader        // expecting '$' of the next argument
	inBulkLen           // the digits of "$<len>\r\n"
	inBulkBody          // the bytes of an argument
	inBulkCR            // the '\r' after an argument
	inBulkLF            // the '\n' after an argument
)

// framing is where a connection's input stands in the RESP framing.
type framing struct {
	state  int
	num    int64 // the number read so far in a count or length
	digits int
	neg    bool
	cr     bool  // the number's '\r' has been read
	args   int64 // arguments still to come in this command
	skip   int64 // bytes still to come in this argument
	frame  int64 // bytes of this command so far, announced ones included
}

// guardConn is a net.Conn whose reads hand the parser only well-formed RESP.
// Its Read and Write run on the connection's goroutine only.
type guardConn struct {
	net.Conn
	limits *Limits
	srv    *Server
	// client is the connection's state, set when it is accepted (nil in
	// tests of the guard alone): before it has authenticated, Redis's
	// smaller limits apply.
	client *client

	f     framing
	out   []byte // input for the parser; out[:ready] is whole commands
	ready int
	line  []byte // the inline command being read
	raw   []byte // input read but not yet looked at
	err   error  // the read error to report once out is handed on

	refusing bool
	refusal  string // the reply that explains a refusal, or closeSilently

	handshook bool

	// readAt is when the last read returned (Unix nanoseconds on the real
	// clock), and cmdStart the readAt of the read that brought the first
	// byte of the command being received: under an idle timeout a command
	// must arrive whole within the timeout of its first byte. Both are kept
	// only under an idle timeout.
	readAt, cmdStart int64
}

// outPool recycles input buffers: a connection holds one only while a
// command is incomplete or the reader has not taken all of it.
var outPool = sync.Pool{New: func() any { b := make([]byte, 0, 2*readChunk); return &b }}

// Read hands on whole commands. It returns partial commands only when the
// reader's buffer cannot take the whole, or in chunks of at least readChunk
// bytes for a long command.
func (g *guardConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		switch {
		case g.ready > 0:
			return g.take(p, g.ready), nil
		case g.refusing:
			return 0, g.refuse()
		case len(g.raw) > 0:
			raw := g.raw
			k := g.process(raw) // a refusal drops g.raw
			if g.raw != nil {
				g.raw = raw[k:] // one command at a time: no copying
			}
			if len(g.raw) == 0 {
				g.raw = nil
			}
			continue
		case len(g.out) > 0 && (len(g.out) >= readChunk || len(g.out) >= len(p)):
			return g.take(p, len(g.out)), nil // a long command, in chunks
		case g.err != nil:
			g.release()
			return 0, g.err
		}
		n, err := g.readConn(p[:min(len(p), readChunk)])
		if err != nil {
			g.err = err
		}
		if n == 0 {
			continue
		}
		if len(g.out) == 0 && g.f.state == atFrame && g.wholeCommands(p[:n]) {
			return n, nil // the common case: whole commands, handed on in place
		}
		if k := g.process(p[:n]); k < n {
			g.raw = append(g.raw, p[k:n]...)
		}
	}
}

// take copies up to limit bytes of out to p and drops them from out.
func (g *guardConn) take(p []byte, limit int) int {
	n := copy(p, g.out[:limit])
	g.out = g.out[:copy(g.out, g.out[n:])]
	g.ready = max(g.ready-n, 0)
	if len(g.out) == 0 {
		g.release()
	}
	return n
}

// release returns the input buffer to the pool.
func (g *guardConn) release() {
	if g.out != nil && cap(g.out) <= 4*readChunk {
		b := g.out[:0]
		outPool.Put(&b)
	}
	g.out, g.ready = nil, 0
}

func (g *guardConn) appendOut(b ...byte) {
	if g.out == nil {
		g.out = (*outPool.Get().(*[]byte))[:0]
	}
	g.out = append(g.out, b...)
}

// readConn reads from the connection, after the TLS handshake, under the
// idle timeout: between commands, the timeout of silence; inside one, what is
// left of the timeout since the command's first byte arrived. Were every
// byte to push the deadline back, a client sending a byte a second would hold
// its connection, and the server's buffer for its command, for ever; Redis
// closes such a client too, as its query buffer stops growing for long
// enough.
func (g *guardConn) readConn(p []byte) (int, error) {
	if err := g.handshake(); err != nil {
		return 0, err
	}
	idle := g.limits.IdleTimeout
	if idle <= 0 {
		return g.Conn.Read(p)
	}
	if g.client != nil && g.client.mon != nil {
		// Monitors, as Redis's, are not subject to the timeout: they
		// only read.
		_ = g.Conn.SetReadDeadline(time.Time{})
		return g.Conn.Read(p)
	}
	from := time.Now()
	if g.midCommand() {
		from = time.Unix(0, g.cmdStart)
	}
	_ = g.Conn.SetReadDeadline(from.Add(idle))
	n, err := g.Conn.Read(p)
	g.readAt = time.Now().UnixNano()
	return n, err
}

// midCommand reports whether part of a command has been received and the
// rest has yet to come.
func (g *guardConn) midCommand() bool { return g.f.state != atFrame }

// commandBegins notes that the input just read starts a command.
func (g *guardConn) commandBegins() { g.cmdStart = g.readAt }

// handshake runs a TLS connection's handshake, once, within
// tlsHandshakeTimeout: a client that connects and says nothing holds a
// connection no longer than that.
func (g *guardConn) handshake() error {
	tc, ok := g.Conn.(*tls.Conn)
	if !ok || g.handshook {
		return nil
	}
	g.handshook = true
	_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	_ = tc.SetDeadline(time.Time{})
	if err != nil {
		g.srv.cfg.Logger.Debug("TLS handshake failed", "addr", tc.RemoteAddr().String(), "err", err)
	}
	return err
}

// Write sends a batch's replies, all at once (conn.flush). Under an idle
// timeout each chunk must be taken within it.
func (g *guardConn) Write(b []byte) (int, error) {
	if g.limits.IdleTimeout <= 0 {
		return g.Conn.Write(b)
	}
	n := 0
	for n < len(b) {
		_ = g.Conn.SetWriteDeadline(time.Now().Add(g.limits.IdleTimeout))
		k, err := g.Conn.Write(b[n:min(len(b), n+writeChunk)])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// refuseWith makes the connection's next read send reply (unless it is
// closeSilently) and end the connection. Commands already handed on are answered first.
func (g *guardConn) refuseWith(reply string) {
	g.refusing, g.refusal = true, reply
	g.out, g.raw, g.line = g.out[:g.ready], nil, nil
}

// refuse sends the refusal and returns the error that makes serveConn close
// the connection.
func (g *guardConn) refuse() error {
	g.release()
	if g.refusal == closeSilently || g.handshake() != nil {
		return errProtocolLimit
	}
	reply := []byte("-" + g.refusal + "\r\n")
	if g.client != nil && g.client.mon != nil {
		// A monitor's feed writes its connection: the refusal goes after
		// what is queued, and before the connection closes.
		m := g.client.mon
		m.push(reply)
		m.stop()
		<-m.done
		return errProtocolLimit
	}
	_ = g.Conn.SetWriteDeadline(time.Now().Add(refusalTimeout))
	_, _ = g.Conn.Write(reply)
	return errProtocolLimit
}

// authPending reports whether the connection has yet to authenticate: then
// Redis's unauthenticated limits apply, and commands are handed on one at a
// time so that an AUTH takes effect before the next command is checked.
func (g *guardConn) authPending() bool { return g.client != nil && !g.client.authed }

// wholeCommands reports whether b is a run of whole, acceptable multibulk
// commands, advancing the framing over them if so and leaving it as it was
// if not.
func (g *guardConn) wholeCommands(b []byte) bool {
	saved := g.f
	for len(b) > 0 {
		if b[0] != '*' {
			g.f = saved
			return false
		}
		k, done, bad := g.scan(b)
		if !done || bad != "" {
			g.f = saved
			return false
		}
		b = b[k:]
	}
	return true
}

// process moves input from b into out, translating inline commands, and
// returns how much of b it took: all of it, except that before
// authentication it stops after each whole command.
func (g *guardConn) process(b []byte) int {
	i := 0
	for i < len(b) && !g.refusing {
		if g.f.state == atFrame && b[i] != '*' {
			g.f.state = inInline
			g.commandBegins()
		}
		if g.f.state == inInline {
			j := bytes.IndexByte(b[i:], '\n')
			part := b[i:]
			if j >= 0 {
				part = b[i : i+j]
			}
			if int64(len(g.line)+len(part)) > g.limits.MaxInlineLen {
				g.refuseWith(errProtoInline)
				break
			}
			g.line = append(g.line, part...)
			if j < 0 {
				return len(b)
			}
			i += j + 1
			g.endInline()
		} else {
			k, done, bad := g.scan(b[i:])
			if bad == closeSilently {
				g.srv.cfg.Logger.Warn("closing client that reached max query buffer length",
					"addr", g.RemoteAddr().String(), "limit", g.limits.MaxQueryLen)
			}
			if bad != "" {
				g.refuseWith(bad)
				break
			}
			g.appendOut(b[i : i+k]...)
			i += k
			if !done {
				continue
			}
			g.ready = len(g.out)
		}
		if g.authPending() && g.ready > 0 {
			return i
		}
	}
	return len(b)
}

// endInline turns the inline command just read into a multibulk command.
func (g *guardConn) endInline() {
	g.f.state = atFrame
	line := bytes.TrimSuffix(g.line, []byte{'\r'})
	args, ok := splitInline(line)
	if cap(g.line) > 1024 {
		g.line = nil
	} else {
		g.line = g.line[:0]
	}
	switch {
	case !ok:
		g.refuseWith(errProtoQuotes)
	case int64(len(args)) > g.limits.MaxArgs:
		g.refuseWith(errProtoMultibulk)
	case len(args) > 0:
		var num [24]byte
		g.appendOut(appendHeader(num[:0], '*', int64(len(args)))...)
		for _, a := range args {
			g.appendOut(appendHeader(num[:0], '$', int64(len(a)))...)
			g.appendOut(a...)
			g.appendOut('\r', '\n')
		}
		g.ready = len(g.out)
	}
}

func appendHeader(b []byte, kind byte, n int64) []byte {
	b = append(b, kind)
	var digits [20]byte
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	b = append(b, digits[i:]...)
	return append(b, '\r', '\n')
}

// Results of reading one byte of a number.
const (
	numMore = iota
	numDone
	numBad
)

// maxDigits keeps counts and lengths far from overflowing.
const maxDigits = 18

func (f *framing) startNumber() { f.num, f.digits, f.neg, f.cr = 0, 0, false, false }

// number reads one byte of "<digits>\r\n" as Redis's string2ll reads a
// number: an optional '-', no '+', no leading zeros, no "-0".
func (f *framing) number(c byte) int {
	switch {
	case f.cr:
		if c != '\n' {
			return numBad
		}
		return numDone
	case c == '\r':
		if f.digits == 0 {
			return numBad
		}
		f.cr = true
	case c == '-' && f.digits == 0 && !f.neg:
		f.neg = true
	case c >= '0' && c <= '9':
		if (f.digits > 0 && f.num == 0) || (f.neg && f.digits == 0 && c == '0') || f.digits == maxDigits {
			return numBad
		}
		f.num = f.num*10 + int64(c-'0')
		f.digits++
	default:
		return numBad
	}
	return numMore
}

// quickNumber reads, when b[i:] starts with a whole "<digits>\r" in the
// usual form, the number at once, and returns the index of its '\n' for
// number to end; otherwise it returns i, for number to go byte by byte.
func (f *framing) quickNumber(b []byte, i int) int {
	if f.digits != 0 || f.neg || f.cr {
		return i
	}
	var v int64
	j := i
	for j < len(b) && j-i < maxDigits && '0' <= b[j] && b[j] <= '9' {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	if d := j - i; d == 0 || (d > 1 && b[i] == '0') || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' {
		return i
	}
	f.num, f.digits, f.cr = v, j-i, true
	f.frame += int64(j + 1 - i) // the digits and '\r'; the loop counts the '\n'
	return j + 1
}

func (f *framing) value() int64 {
	if f.neg {
		return -f.num
	}
	return f.num
}

// scan follows the multibulk framing over b, from a command's '*' or from
// where the last call left off. It returns how many bytes it took, whether
// they end a command, and the refusal text if the command is refused.
func (g *guardConn) scan(b []byte) (k int, done bool, refusal string) {
	f := &g.f
	lim := g.limits
	maxArgs, maxBulk := lim.MaxArgs, lim.MaxBulkLen
	unauth := g.authPending()
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch f.state {
		case atFrame: // c is '*'
			f.state, f.frame = inCount, 0
			f.startNumber()
			g.commandBegins()
		case inCount:
			i = f.quickNumber(b, i)
			switch f.number(b[i]) {
			case numBad:
				return i, false, errProtoMultibulk
			case numDone:
				n := f.value()
				switch {
				case n > maxArgs:
					return i, false, errProtoMultibulk
				case unauth && n > unauthMaxArgs:
					return i, false, errUnauthMultibulk
				case n <= 0:
					// An empty command: Redis reads and ignores it,
					// and so does conn.
					f.state = atFrame
					return i + 1, true, ""
				}
				f.args, f.state = n, atBulkHeader
			}
		case atBulkHeader:
			if c != '$' {
				if c == '\r' || c == '\n' {
					c = ' '
				}
				return i, false, errProtoExpectedFmt + string(c) + "'"
			}
			f.state = inBulkLen
			f.startNumber()
		case inBulkLen:
			i = f.quickNumber(b, i)
			switch f.number(b[i]) {
			case numBad:
				return i, false, errProtoBulk
			case numDone:
				n := f.value()
				switch {
				case n < 0 || n > maxBulk:
					return i, false, errProtoBulk
				case unauth && n > unauthMaxBulkLen:
					return i, false, errUnauthBulk
				}
				f.frame += n + 2
				if f.frame > lim.MaxQueryLen {
					return i, false, closeSilently
				}
				f.skip, f.state = n, inBulkBody
				if n == 0 {
					f.state = inBulkCR
				}
			}
		case inBulkBody:
			step := min(f.skip, int64(len(b)-i))
			f.skip -= step
			i += int(step) - 1
			if f.skip == 0 {
				f.state = inBulkCR
			}
			continue
		case inBulkCR:
			if c != '\r' {
				return i, false, errProtoBulk
			}
			f.state = inBulkLF
			continue
		case inBulkLF:
			if c != '\n' {
				return i, false, errProtoBulk
			}
			f.args--
			if f.args == 0 {
				f.state = atFrame
				return i + 1, true, ""
			}
			f.state = atBulkHeader
			continue
		}
		f.frame++
	}
	return len(b), false, ""
}

// splitInline splits an inline command line into arguments as Redis's
// sdssplitargs does: blanks separate arguments; in "double quotes" \n \r \t
// \b \a \xHH and \<any> are escapes; in 'single quotes' \' is; a closing
// quote must be followed by a blank or the end; a NUL byte ends the line, as
// in C. It reports false for unbalanced quotes.
func splitInline(line []byte) ([][]byte, bool) {
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	var args [][]byte
	buf := make([]byte, 0, len(line)) // every argument, unescaped: never longer
	p := 0
	for {
		for isSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return args, true
		}
		start := len(buf)
		inDouble, inSingle := false, false
		for done := false; !done; {
			c := at(p)
			switch {
			case inDouble:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					buf = append(buf, unhex(at(p+2))<<4|unhex(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := at(p)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					buf = append(buf, e)
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					buf = append(buf, c)
				}
			case inSingle:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					buf = append(buf, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					buf = append(buf, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inDouble = true
				case '\'':
					inSingle = true
				default:
					buf = append(buf, c)
				}
			}
			if c != 0 {
				p++
			}
		}
		args = append(args, buf[start:len(buf):len(buf)])
	}
}

// isSpace is C's isspace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
