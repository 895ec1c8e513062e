package engine

import "time"

// Limits bound what one client may send and leave unread. A zero field
// takes its default.
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
	// MaxOutputTotal bounds the reply bytes waiting for all clients
	// together, as Redis's maxmemory-clients: the client whose replies
	// would pass it is disconnected. Each client's first
	// outputAllowance bytes are not counted. The default is
	// DefaultMaxOutputTotal; negative means no limit.
	MaxOutputTotal int64
	// IdleTimeout closes a connection that has sent nothing and taken no
	// reply bytes for this long, as Redis's timeout, and one whose command
	// has not arrived whole within this long of its first byte, however
	// steadily it trickles in. Zero, the default, never does.
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
	// DefaultMaxOutputTotal is 256 MiB (Redis: no limit): without it, 50
	// clients that never read their KEYS * replies held 55 MiB each.
	DefaultMaxOutputTotal = 256 << 20
)

// outputAllowance is the reply bytes of one client not counted against
// MaxOutputTotal: replies under it, nearly all of them, never touch the
// shared count, so the command path stays free of shared writes.
const outputAllowance = 64 << 10

// WithDefaults is l with every zero field given its default.
func (l Limits) WithDefaults() Limits {
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
	if l.IdleTimeout < 0 {
		l.IdleTimeout = 0
	}
	if l.MaxOutputTotal == 0 {
		l.MaxOutputTotal = DefaultMaxOutputTotal
	}
	return l
}

// OutboxBacklog is the most an outbox may leave unwritten before its client
// is disconnected (StartOutbox): MaxOutput, the bound on any client's unsent
// replies (32 MiB by default, some 200 000 MONITOR lines of a CL.THROTTLE),
// or DefaultMaxOutput when there is no output limit.
func (l Limits) OutboxBacklog() int {
	if l.MaxOutput > 0 {
		return int(l.MaxOutput)
	}
	return DefaultMaxOutput
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
