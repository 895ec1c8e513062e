package config

import (
	"log/slog"
	"syscall"

	"github.com/redcell/redcell/server"
)

// ServerLimits are the server's limits from the flags, with maxclients
// lowered to fit the open-files limit as Redis lowers it.
func (c Config) ServerLimits(logger *slog.Logger) server.Limits {
	output := c.OutputBufferLimit
	if output == 0 {
		output = -1 // no limit
	}
	total := c.MaxMemoryClients
	if total == 0 {
		total = -1 // no limit
	}
	return server.Limits{
		MaxBulkLen:     c.ProtoMaxBulkLen,
		MaxArgs:        c.MaxArgs,
		MaxInlineLen:   c.MaxInlineLen,
		MaxQueryLen:    c.QueryBufferLimit,
		MaxOutput:      output,
		MaxClients:     fitMaxClients(c.MaxClients, logger),
		IdleTimeout:    c.Timeout,
		MaxKeyLen:      int(c.MaxKeyLen),
		MaxOutputTotal: total,
		WindowLogMax:   c.WindowLogMax,
	}
}

// reservedFiles are file descriptors kept for everything but clients: the
// listeners, Pebble's files, the log, as Redis's CONFIG_MIN_RESERVED_FDS.
const reservedFiles = 32

// fitMaxClients lowers n to what the open-files limit allows (Go raises the
// soft limit to the hard one at start), with a warning, as Redis does.
func fitMaxClients(n int, logger *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= uint64(n+reservedFiles) {
		return n
	}
	fit := max(int(lim.Cur)-reservedFiles, 1)
	logger.Warn("maxclients lowered to fit the open-files limit; raise it with ulimit -n",
		"requested", n, "maxclients", fit, "open_files_limit", lim.Cur)
	return fit
}
