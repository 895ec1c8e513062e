package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// The limiter keys on the IP address, whatever the port; a right password's
// attempt is given back.
func TestAuthLimiterByIP(t *testing.T) {
	l := newAuthLimiter()
	now := gcra.InstantOf(t0)
	for i := 0; i < authFailBurst; i++ {
		_, ok := l.take("10.0.0.1:"+strconv.Itoa(1000+i), now)
		require.True(t, ok, "attempt %d", i+1)
	}
	_, ok := l.take("10.0.0.1:9999", now)
	require.False(t, ok, "the 11th attempt from the address, from any port")
	entry, ok := l.take("[::1]:5", now)
	require.True(t, ok, "another address has its own budget")
	require.Equal(t, "::1", entry)
	l.refund(entry, now)
	require.Equal(t, 1, l.size(), "a refunded attempt leaves nothing to remember")

	now += gcra.Instant(time.Second / authFailPerSecond)
	_, ok = l.take("10.0.0.1:1", now)
	require.True(t, ok, "one attempt earned back after a third of a second")
	_, ok = l.take("10.0.0.1:1", now)
	require.False(t, ok)
}

// However many addresses fail, the limiter remembers at most
// authFailMaxAddrs of them, and the ones beyond share one budget; entries
// whose attempts have all been earned back are dropped.
func TestAuthLimiterBoundsItsTable(t *testing.T) {
	l := newAuthLimiter()
	now := gcra.InstantOf(t0)
	ip := func(i int) string {
		return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":1"
	}
	n := authFailMaxAddrs + 1000
	for i := 0; i < n; i++ {
		l.take(ip(i), now)
	}
	require.Equal(t, authFailMaxAddrs+1, l.size(), "every address it had room for, and the overflow's")
	_, ok := l.take(ip(n+100), now)
	require.False(t, ok, "the 1000 addresses beyond the table shared one budget, spent after 10")
	_, ok = l.take(ip(5), now)
	require.True(t, ok, "a remembered address keeps its own")

	// Once every entry has expired, the next new address sweeps them.
	now += gcra.Instant(authFailBurst * time.Second / authFailPerSecond)
	_, ok = l.take(ip(n+200), now)
	require.True(t, ok)
	require.Equal(t, 1, l.size())
}
