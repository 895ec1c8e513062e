package testkit

import (
	"testing"
	"time"
)

// Step is one command of a transcript and the reply it must get: the
// moment it runs at, as an offset on the test's clock, the command, and
// the reply's bytes.
type Step struct {
	At   time.Duration
	Args []string
	Want string
}

// RunSteps runs steps in order through do, which sends one command on a
// connection and returns its reply's bytes (a Conn's Do, or a server's
// in-process client), and reports every step whose reply differs, as
// "step 3: at 1s ["CL.THROTTLE" "k" ...] = "..." want "...""; it goes on
// after a difference, so that one run shows them all. setClock, unless
// nil, sets the server's clock to each step's At before it runs; without
// it At is not used, and not reported.
func RunSteps(t testing.TB, steps []Step, do func(args ...string) string, setClock func(at time.Duration)) {
	t.Helper()
	for i, s := range steps {
		if setClock == nil {
			if got := do(s.Args...); got != s.Want {
				t.Errorf("step %d: %q = %q want %q", i, s.Args, got, s.Want)
			}
			continue
		}
		setClock(s.At)
		if got := do(s.Args...); got != s.Want {
			t.Errorf("step %d: at %v %q = %q want %q", i, s.At, s.Args, got, s.Want)
		}
	}
}
