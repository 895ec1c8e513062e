package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/internal/testkit"
)

// CLIENT TRACKING takes its connection off the event loop (its outbox
// writes through the netpoller); CLIENT's other subcommands run on the loop
// as before, and CLUSTERX's, admin, still leave it.
func TestClientTrackingLeavesTheLoopAndTheOtherSubcommandsStay(t *testing.T) {
	if !engine.HaveEventLoops {
		t.Skip("no event loops on this platform")
	}
	addr, srv := startServer(t, Config{EventLoops: 1})
	c := testkit.Dial(t, addr)
	id := c.DoInline("CLIENT ID")
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT SETNAME x"))
	require.Contains(t, c.DoInline("CLIENT INFO"), " name=x ")
	require.True(t, onLoop(t, srv, id), "CLIENT SETNAME and INFO run on the loop")
	c.Write(testkit.Command("HELLO", "3"))
	c.Read()
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT TRACKING ON"))
	require.False(t, onLoop(t, srv, id), "CLIENT TRACKING left it")
	require.Equal(t, ":0\r\n", c.DoInline("EXISTS k"))
	w := testkit.Dial(t, addr)
	require.Equal(t, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:1\r\n", w.DoInline("CL.THROTTLE k 1 1 1"))
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", c.Read())
}

// The table of tracked keys holds at most maxTrackedKeys: past that, a key
// leaves it and its clients are told, as if it had changed.
func TestTrackingTableIsBounded(t *testing.T) {
	defer func(n int) { maxTrackedKeys = n }(maxTrackedKeys)
	maxTrackedKeys = 4 * trackStripes
	addr, srv := startServer(t, Config{})
	c := testkit.Dial(t, addr)
	c.Write(testkit.Command("HELLO", "3"))
	c.Read()
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT TRACKING ON"))
	var reads strings.Builder
	for i := range 2000 {
		reads.WriteString(testkit.Command("EXISTS", "k"+strconv.Itoa(i)))
	}
	reads.WriteString(testkit.Command("PING"))
	c.Write(reads.String())
	replies, pushes := 0, 0
	for {
		r := c.Read()
		if strings.HasPrefix(r, ">2\r\n$10\r\ninvalidate\r\n") {
			pushes++
			continue
		}
		if r == "+PONG\r\n" {
			break
		}
		require.Equal(t, ":0\r\n", r)
		replies++
	}
	require.Equal(t, 2000, replies)
	keys, items, _ := srv.tracking.counts()
	require.LessOrEqual(t, keys, int64(maxTrackedKeys+trackStripes))
	require.Equal(t, keys, items)
	require.Equal(t, 2000-int(keys), pushes, "each key that left the table was told")
	t.Logf("%d keys tracked, %d invalidated to make room", keys, pushes)
}

// Tracking off everywhere, the store has no observer again and the table
// is empty: a decision pays nothing for it.
func TestTrackingOffRemovesTheObserver(t *testing.T) {
	addr, srv := startServer(t, Config{})
	c := testkit.Dial(t, addr)
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT TRACKING ON"))
	require.Equal(t, ":0\r\n", c.DoInline("EXISTS k"))
	require.True(t, srv.store.Observed())
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT TRACKING OFF"))
	require.False(t, srv.store.Observed())
	keys, items, prefixes := srv.tracking.counts()
	require.Zero(t, keys+items+int64(prefixes))
	require.Equal(t, "+OK\r\n", c.DoInline("CLIENT TRACKING ON"))
	require.NoError(t, c.Conn.Close())
	require.Eventually(t, func() bool { return !srv.store.Observed() }, testkit.Timeout, time.Millisecond, "the connection's end turns it off")
}
