package testkit

import (
	"fmt"
	"os"
	"testing"

	"github.com/redcell/redcell/internal/contain"
)

// Main runs a package's tests as TestMain would, then removes the built
// binary, if any (Binary), and fails the run if the process recovered a
// panic no test allowed (contain.Allow): containment keeps a server alive
// for its users, but a panic in a test run is a bug all the same. It returns
// the exit code:
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	RemoveBinary()
	if n := contain.Unexpected(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d panic(s) recovered that no test expected; see \"panic recovered\" in the log above\n", n)
		if code == 0 {
			code = 1
		}
	}
	return code
}
