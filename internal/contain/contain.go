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
	"maps"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

var (
	recovered, allowed atomic.Int64
	mu                 sync.Mutex
	// byWhere starts with every place that recovers, at 0, so that each
	// series of redcell_panics_total exists before its first panic (an
	// alert on its increase needs one).
	byWhere = map[string]int64{"resp": 0, "rls": 0, "replication": 0, "cluster": 0, "flush": 0, "expiry": 0}
)

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
	mu.Lock()
	byWhere[where]++
	mu.Unlock()
	text := fmt.Sprint(v)
	if logger != nil {
		logger.Error("panic recovered", "where", where, "command", name, "panic", text, "stack", string(debug.Stack()))
	}
	return text
}

// Recovered is how many panics this process has recovered.
func Recovered() int64 { return recovered.Load() }

// ByWhere is Recovered by where the panics were recovered, for
// redcell_panics_total{where}: a few fixed names, never a request's.
func ByWhere() map[string]int64 {
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(byWhere)
}

// Allow says that n more recovered panics are expected: a test injecting a
// panic calls it before it does.
func Allow(n int) { allowed.Add(int64(n)) }

// Unexpected is how many more panics were recovered than allowed.
func Unexpected() int64 { return recovered.Load() - allowed.Load() }

// Error is a recovered panic as an error: what Run returns.
type Error struct {
	Where, Name string
	Value       string // the panic's value, as text
}

func (e *Error) Error() string {
	return "panic in " + e.Where + " (" + e.Name + "): " + e.Value
}

// Run runs fn and returns its error; if fn panics, Run records the panic
// (Record) and returns it as an *Error instead, so that a loop calling Run
// for each round of its work (a replication session, a flush, a slot's
// migration) goes on with its next round as after any failure.
func Run(logger *slog.Logger, where, name string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &Error{Where: where, Name: name, Value: Record(logger, where, name, v)}
		}
	}()
	return fn()
}
