package server

import (
	"time"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/window"
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
	// reply bytes for this long, as Redis's timeout, and one whose command
	// has not arrived whole within this long of its first byte, however
	// steadily it trickles in. Zero, the default, never does.
	IdleTimeout time.Duration
	// MaxKeyLen bounds the name of a key a command creates: longer is
	// refused. The default is DefaultMaxKeyLen.
	MaxKeyLen int
	// MaxOutputTotal bounds the reply bytes waiting for all clients
	// together, as Redis's maxmemory-clients: the client whose replies
	// would pass it is disconnected. Each client's first
	// outputAllowance bytes are not counted. The default is
	// DefaultMaxOutputTotal; negative means no limit.
	MaxOutputTotal int64
	// WindowLogMax bounds the entries of one CL.WINDOW exact log: a limit
	// above it needs PRECISION. The default is window.DefaultLogMax.
	WindowLogMax int64
}

// Defaults of Limits. Those of what a client may send and leave unread are
// the engine's, which applies them (engine.Limits).
const (
	DefaultMaxBulkLen     = engine.DefaultMaxBulkLen
	DefaultMaxArgs        = engine.DefaultMaxArgs
	DefaultMaxInlineLen   = engine.DefaultMaxInlineLen
	DefaultMaxQueryLen    = engine.DefaultMaxQueryLen
	DefaultMaxOutput      = engine.DefaultMaxOutput
	DefaultMaxOutputTotal = engine.DefaultMaxOutputTotal
	// DefaultMaxClients is 10000, as Redis's.
	DefaultMaxClients = 10000
	// DefaultMaxKeyLen is 8 KiB: a rate-limit key (a user, an API key, an
	// IP with a route) is tens of bytes; Redis allows 512 MiB.
	DefaultMaxKeyLen = 8 << 10
)

// engine is the share of l the engine applies.
func (l Limits) engine() engine.Limits {
	return engine.Limits{MaxBulkLen: l.MaxBulkLen, MaxArgs: l.MaxArgs, MaxInlineLen: l.MaxInlineLen, MaxQueryLen: l.MaxQueryLen,
		MaxOutput: l.MaxOutput, MaxOutputTotal: l.MaxOutputTotal, IdleTimeout: l.IdleTimeout}
}

// withDefaults is l with every zero field given its default: the engine's
// for its share (engine.Limits), the server's for the rest.
func (l Limits) withDefaults() Limits {
	e := l.engine().WithDefaults()
	l.MaxBulkLen, l.MaxArgs, l.MaxInlineLen, l.MaxQueryLen = e.MaxBulkLen, e.MaxArgs, e.MaxInlineLen, e.MaxQueryLen
	l.MaxOutput, l.MaxOutputTotal, l.IdleTimeout = e.MaxOutput, e.MaxOutputTotal, e.IdleTimeout
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	if l.MaxKeyLen <= 0 {
		l.MaxKeyLen = DefaultMaxKeyLen
	}
	if l.WindowLogMax <= 0 {
		l.WindowLogMax = window.DefaultLogMax
	}
	return l
}
