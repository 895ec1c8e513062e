package protocol_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

var (
	wrongPass   = testkit.Err(errWrongPass)
	authLimited = testkit.Err("ERR too many failed AUTH attempts, try later")
)

// Failed AUTH attempts are limited by client IP: 10 at once, then 3 a
// second. While an IP is limited, AUTH and HELLO ... AUTH from it are
// refused without the password being checked, the right one included; a
// right password charges nothing; other IPs are unaffected.
func TestFailedAuthIsRateLimitedByIP(t *testing.T) {
	ts := startServer(t, withPassword("pw"))
	guesser := ts.raw(t)
	for i := 0; i < 20; i++ {
		require.Equal(t, testkit.OK, ts.raw(t).Do("AUTH", "pw"), "a right password charges nothing (%d)", i)
	}
	for i := 0; i < 10; i++ {
		require.Equal(t, wrongPass, guesser.Do("AUTH", "guess"), "guess %d", i+1)
	}
	require.Equal(t, authLimited, guesser.Do("AUTH", "guess"), "the 11th guess")
	require.Equal(t, authLimited, guesser.Do("AUTH", "pw"), "even the right password, until the clock moves")
	require.Equal(t, authLimited, guesser.Do("AUTH", "default", "pw"))
	require.Equal(t, authLimited, guesser.Do("HELLO", "3", "AUTH", "default", "pw"))
	require.Equal(t, testkit.Err("NOAUTH Authentication required."), guesser.Do("PING"), "nothing was authenticated")
	fresh := ts.raw(t)
	require.Equal(t, authLimited, fresh.Do("AUTH", "pw"), "the limit is the address's, not the connection's")

	other := ts.rawFrom(t, "127.0.0.2")
	require.Equal(t, wrongPass, other.Do("AUTH", "guess"), "another address is not limited")
	require.Equal(t, testkit.OK, other.Do("AUTH", "pw"))

	// A third of a second earns one attempt back: the right password
	// succeeds and gives it back, so one more guess is answered, then none.
	ts.Clock.Advance(time.Second / 3)
	require.Equal(t, testkit.OK, guesser.Do("AUTH", "pw"))
	require.Equal(t, testkit.Simple("PONG"), guesser.Do("PING"))
	require.Equal(t, wrongPass, fresh.Do("AUTH", "guess"))
	require.Equal(t, authLimited, fresh.Do("HELLO", "3", "AUTH", "default", "guess"))

	// Refilled: ten guesses again.
	ts.Clock.Advance(4 * time.Second)
	for i := 0; i < 10; i++ {
		require.Equal(t, wrongPass, fresh.Do("HELLO", "3", "AUTH", "default", "guess"), "guess %d after the refill", i+1)
	}
	require.Equal(t, authLimited, fresh.Do("AUTH", "guess"))
}
