// Package contain keeps a bug in one request from ending the process: the
// fronts (a RESP connection, a gRPC call, the replication link, a cluster
// peer) and the background loops (flush, expiry) recover a panic in what
// they run, hand it to Record, and end only the request or the round that
// panicked. Record logs it and counts it, process-wide, for INFO and
// redcell_panics_total.
//
// Containment protects users; it does not hide bugs. Tests that inject a
// panic say so with Allow, and a test binary fails when it recovered more
// panics than were allowed (testkit.Main).
package contain

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
)

var recovered, allowed atomic.Int64

// Record logs a recovered panic at error, with where it was recovered (a
// front or a loop: "resp", "rls", "replication", ...), the name of the
// command or task that was running, the panic's value and the stack, and
// counts it. name must never hold a request's arguments: they may hold
// passwords. It returns the panic's value as text, for a reply.
//
// Record is called from the deferred function that recovered, so the stack
// it logs is the panicking goroutine's, from the panic down.
func Record(logger *slog.Logger, where, name string, v any) string {
	recovered.Add(1)
	text := fmt.Sprint(v)
	if logger != nil {
		logger.Error("panic recovered", "where", where, "command", name, "panic", text, "stack", string(debug.Stack()))
	}
	return text
}

// Recovered is how many panics this process has recovered.
func Recovered() int64 { return recovered.Load() }

// Allow says that n more recovered panics are expected: a test injecting a
// panic calls it before it does.
func Allow(n int) { allowed.Add(int64(n)) }

// Unexpected is how many more panics were recovered than allowed.
func Unexpected() int64 { return recovered.Load() - allowed.Load() }
