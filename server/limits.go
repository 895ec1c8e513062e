package server

import (
	"io"
	"time"

	"github.com/tidwall/redcon"
)

// Limits bound what one client may send and leave unread, and how many
// clients there may be. A zero field takes its default.
type Limits struct {
	// MaxBulkLen bounds one argument, as Redis's proto-max-bulk-len. The
	// default is DefaultMaxBulkLen.
	MaxBulkLen int64
	// MaxArgs bounds the arguments of one command, its name included. The
	// default is DefaultMaxArgs.
	MaxArgs int64
	// MaxInlineLen bounds an inline (telnet-style) command line. The
	// default is DefaultMaxInlineLen.
	MaxInlineLen int64
	// MaxQueryLen bounds the bytes of one command, as Redis's
	// client-query-buffer-limit: a client announcing more is disconnected.
	// The default is DefaultMaxQueryLen.
	MaxQueryLen int64
	// MaxOutput bounds the reply bytes waiting to be sent to one client, as
	// Redis's client-output-buffer-limit for normal clients: a client whose
	// replies pile up beyond it is disconnected. The default is
	// DefaultMaxOutput; negative means no limit.
	MaxOutput int64
	// MaxClients bounds the open connections, as Redis's maxclients: one more
	// is answered "ERR max number of clients reached" and closed. The
	// default is DefaultMaxClients.
	MaxClients int
	// IdleTimeout closes a connection that has sent nothing and taken no
	// reply bytes for this long, as Redis's timeout. Zero, the default,
	// never does.
	IdleTimeout time.Duration
}

// Defaults of Limits. Redis allows 512 MiB arguments and buffers without
// bound; a rate-limit key never needs more than a few hundred bytes, so
// redcell refuses early rather than buffer what an attacker announces.
const (
	// DefaultMaxBulkLen is 1 MiB.
	DefaultMaxBulkLen = 1 << 20
	// DefaultMaxArgs is 65536.
	DefaultMaxArgs = 1 << 16
	// DefaultMaxInlineLen is 64 KiB, Redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInlineLen = 64 << 10
	// DefaultMaxQueryLen is 8 MiB (Redis: 1 GiB).
	DefaultMaxQueryLen = 8 << 20
	// DefaultMaxOutput is 32 MiB (Redis: no limit for normal clients).
	DefaultMaxOutput = 32 << 20
	// DefaultMaxClients is 10000, as Redis's.
	DefaultMaxClients = 10000
)

// Limits Redis 7 applies before a connection has authenticated, when a
// password is required: a client that has not proved who it is may not make
// the server buffer more than a few small arguments.
const (
	unauthMaxArgs    = 10
	unauthMaxBulkLen = 16 << 10
)

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
	if l.MaxQueryLen <= 0 {
		l.MaxQueryLen = DefaultMaxQueryLen
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	if l.IdleTimeout < 0 {
		l.IdleTimeout = 0
	}
	return l
}

// errMaxClients is Redis's answer to a connection beyond maxclients.
const errMaxClients = "ERR max number of clients reached"

// limitedConn is a connection's redcon.Conn with its replies counted: redcon
// keeps a pipeline's replies in memory until the pipeline has run, and a few
// bytes of requests can ask for a lot (COMMAND answers 5 KiB for 9 bytes), so
// a client pipelining such requests, or not reading, could make the server
// hold any amount. Past Limits.MaxOutput the replies are dropped and the
// connection closed, as Redis does past client-output-buffer-limit. The count
// restarts whenever redcon flushes (guardConn.Write).
type limitedConn struct {
	redcon.Conn
	g    *guardConn
	c    *client
	max  int64
	over bool
}

// rawConn returns the redcon connection under conn's output limit, for
// redcon.BaseWriter.
func rawConn(conn redcon.Conn) redcon.Conn {
	if l, ok := conn.(*limitedConn); ok {
		return l.Conn
	}
	return conn
}

// allow counts n more reply bytes and reports whether they may be queued.
func (l *limitedConn) allow(n int) bool {
	if l.over {
		return false
	}
	l.g.pending += int64(n)
	if l.g.pending <= l.max {
		return true
	}
	l.over = true
	l.c.srv.cfg.Logger.Warn("client closed for overcoming of output buffer limits",
		"addr", l.c.addr, "id", l.c.id, "limit", l.max)
	redcon.BaseWriter(l.Conn).SetBuffer(nil)
	l.c.closing = true
	_ = l.Conn.Close()
	return false
}

// intSize is the most bytes ":n\r\n", "*n\r\n" or "$n\r\n" takes.
func intSize(n int64) int {
	size := 4
	if n < 0 {
		size++
		n = -n
	}
	for ; n >= 10; n /= 10 {
		size++
	}
	return size
}

func (l *limitedConn) WriteError(msg string) {
	if l.allow(len(msg) + 3) {
		l.Conn.WriteError(msg)
	}
}

func (l *limitedConn) WriteString(s string) {
	if l.allow(len(s) + 3) {
		l.Conn.WriteString(s)
	}
}

func (l *limitedConn) WriteBulk(b []byte) {
	if l.allow(intSize(int64(len(b))) + len(b) + 2) {
		l.Conn.WriteBulk(b)
	}
}

func (l *limitedConn) WriteBulkString(s string) {
	if l.allow(intSize(int64(len(s))) + len(s) + 2) {
		l.Conn.WriteBulkString(s)
	}
}

func (l *limitedConn) WriteInt(n int) {
	if l.allow(intSize(int64(n))) {
		l.Conn.WriteInt(n)
	}
}

func (l *limitedConn) WriteInt64(n int64) {
	if l.allow(intSize(n)) {
		l.Conn.WriteInt64(n)
	}
}

func (l *limitedConn) WriteUint64(n uint64) {
	if l.allow(24) {
		l.Conn.WriteUint64(n)
	}
}

func (l *limitedConn) WriteArray(n int) {
	if l.allow(intSize(int64(n))) {
		l.Conn.WriteArray(n)
	}
}

func (l *limitedConn) WriteNull() {
	if l.allow(5) {
		l.Conn.WriteNull()
	}
}

func (l *limitedConn) WriteRaw(b []byte) {
	if l.allow(len(b)) {
		l.Conn.WriteRaw(b)
	}
}

func (l *limitedConn) WriteAny(v any) {
	if b := redcon.AppendAny(nil, v); l.allow(len(b)) {
		l.Conn.WriteRaw(b)
	}
}

func (l *limitedConn) WriteBulkFrom(n int64, r io.Reader) {
	if l.allow(intSize(n) + int(n) + 2) {
		l.Conn.WriteBulkFrom(n, r)
	}
}
