package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

var wrongPass = testkit.Err(errWrongPass)

// Wrong passwords are counted by client IP, whatever the user: 10 are
// answered at once, the ones after late, by 100 ms doubling up to a second
// (the server's clock stands still here, so the guesses are never earned
// back); nothing is refused. A right password is always answered, on the
// guessing connection or another from the same address, while guesses
// wait. Other addresses have budgets of their own. Served by event loops
// and by a goroutine per connection alike.
func TestWrongPasswordsAreSlowedRightOnesNever(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	for _, mode := range []struct {
		name  string
		loops int
	}{{"event loops", 0}, {"goroutines", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			ts := harness.StartServer(t, harness.WithPassword("pw"), func(c *server.Config) { c.EventLoops = mode.loops })
			admin := ts.Raw(t)
			for i := range 20 {
				require.Equal(t, testkit.OK, ts.Raw(t).Do("AUTH", "pw"), "a right password charges nothing (%d)", i)
			}
			guesser := ts.Raw(t)
			for i := range 10 {
				require.Equal(t, wrongPass, guesser.Do("AUTH", "guess"), "guess %d", i+1)
			}

			// Five guesses more, each on a connection of its own: their
			// answers are 0.1, 0.2, 0.4, 0.8 and 1 s late.
			late := make([]*testkit.Conn, 5)
			for i := range late {
				late[i] = ts.Raw(t)
				late[i].Write(testkit.Command("AUTH", "guess"))
			}
			require.Equal(t, testkit.OK, guesser.Do("AUTH", "pw"), "the right password, after the guesses")
			require.Equal(t, testkit.OK, admin.Do("AUTH", "pw"))
			require.Eventually(t, func() bool { return strings.Contains(admin.Do("CLIENT", "LIST"), " flags=b ") }, 10*time.Second, time.Millisecond,
				"a guess waits, as CLIENT LIST shows")
			require.True(t, strings.HasPrefix(ts.Raw(t).Do("HELLO", "3", "AUTH", "default", "pw"), "%7\r\n"), "HELLO ... AUTH from the same address")
			require.Equal(t, wrongPass, guesser.Do("HELLO", "3", "AUTH", "default", "guess"), "HELLO's guesses count as AUTH's")
			for i, c := range late {
				require.Equal(t, wrongPass, c.Read(), "late guess %d", i+1)
			}
			require.NotContains(t, admin.Do("CLIENT", "LIST"), " flags=b ")

			other := ts.RawFrom(t, "127.0.0.2")
			require.Equal(t, wrongPass, other.Do("AUTH", "guess"), "another address has a budget of its own")
			require.Equal(t, testkit.OK, other.Do("AUTH", "pw"))
		})
	}
}
