package server

import (
	"time"

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
	// DefaultMaxKeyLen is 8 KiB: a rate-limit key (a user, an API key, an
	// IP with a route) is tens of bytes; Redis allows 512 MiB.
	DefaultMaxKeyLen = 8 << 10
	// DefaultMaxOutputTotal is 256 MiB (Redis: no limit): without it, 50
	// clients that never read their KEYS * replies held 55 MiB each.
	DefaultMaxOutputTotal = 256 << 20
)

// outputAllowance is the reply bytes of one client not counted against
// MaxOutputTotal: replies under it, nearly all of them, never touch the
// shared count, so the command path stays free of shared writes.
const outputAllowance = 64 << 10

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
	if l.MaxKeyLen <= 0 {
		l.MaxKeyLen = DefaultMaxKeyLen
	}
	if l.MaxOutputTotal == 0 {
		l.MaxOutputTotal = DefaultMaxOutputTotal
	}
	if l.WindowLogMax <= 0 {
		l.WindowLogMax = window.DefaultLogMax
	}
	return l
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
