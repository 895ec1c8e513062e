package testkit

import "testing"

// SkipIfShort skips a test that starts a process (the built redcell, a
// redis-server, Sentinel, redis-cli, a Python or Node client) under
// `go test -short`, the run for the person changing one file; the full
// run, the README's test command and CI's, runs it.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a process: run without -short")
	}
}
