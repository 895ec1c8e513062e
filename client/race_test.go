//go:build race

package client_test

// raceEnabled: the race detector slows everything down, and the bounds on
// how late a call may be answered allow for it.
const raceEnabled = true
