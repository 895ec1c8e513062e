package protocol_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// The idle timeout's pacing tests run on the real clock, as TestIdleTimeout
// does: a socket deadline is real time. Each asserts what the client sees
// (replies, or the connection closed) with lower bounds that cannot fail by
// chance and upper bounds loose enough for a loaded machine.
const trickleIdle = time.Second

// A client that trickles a command a byte at a time, a byte every tenth of
// the timeout, is closed once the timeout has passed since the command's
// first byte: every byte used to push the deadline back, so such a client
// held its connection for as long as it liked.
func TestIdleTimeoutClosesATrickledCommand(t *testing.T) {
	harness.SkipIfShortSleeps(t)
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{IdleTimeout: trickleIdle}))
	c := ts.Raw(t)
	stop := make(chan struct{})
	trickled := make(chan struct{})
	t.Cleanup(func() { close(stop); <-trickled })
	// ECHO of a 1 MB argument: at this pace it would take days to arrive.
	msg := "*2\r\n$4\r\nECHO\r\n$1000000\r\n" + strings.Repeat("x", 1000)
	start := time.Now()
	go func() {
		defer close(trickled)
		tick := time.NewTicker(trickleIdle / 10)
		defer tick.Stop()
		for i := 0; i < len(msg); i++ {
			if _, err := c.Conn.Write([]byte{msg[i]}); err != nil {
				return // closed by the server
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	got, err := c.ReadAll()
	elapsed := time.Since(start)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server never closed the trickling client (%v)", elapsed)
	require.Empty(t, got, "nothing is answered to a command that never arrived")
	require.GreaterOrEqual(t, elapsed, trickleIdle, "closed only once the timeout has passed since the first byte")
	require.Less(t, elapsed, 3*trickleIdle, "closed about the timeout after the command's first byte")
}

// Clients the timeout must leave alone: one whose commands each arrive in two
// parts, the second 0.4 of the timeout after the first, one after another for
// three timeouts (each command arrives within the timeout of its first byte,
// and the command after it starts the count again); and one that sends
// nothing while it reads a long reply slowly.
func TestIdleTimeoutSparesSlowButSteadyClients(t *testing.T) {
	harness.SkipIfShortSleeps(t)
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{IdleTimeout: trickleIdle}))

	halves := ts.Raw(t)
	ping := testkit.Command("ECHO", "steady")
	tick := time.NewTicker(trickleIdle * 4 / 10)
	defer tick.Stop()
	for until := time.Now().Add(3 * trickleIdle); time.Now().Before(until); {
		halves.Write(ping[:len(ping)/2])
		<-tick.C
		halves.Write(ping[len(ping)/2:])
		require.Equal(t, testkit.Bulk("steady"), halves.Read())
	}

	one := ts.Raw(t).Do("COMMAND")
	reader := ts.Raw(t)
	require.NoError(t, reader.Conn.(*net.TCPConn).SetReadBuffer(64<<10))
	n := (4 << 20) / len(one) // 4 MB of COMMAND replies: more than the socket buffers hold
	reader.Write(strings.Repeat("COMMAND\r\n", n))
	want := strings.Repeat(one, n)
	buf := make([]byte, 64<<10)
	var got strings.Builder
	pace := time.NewTicker(25 * time.Millisecond) // 64 KB each: ~2.5 MB/s, longer than the timeout in all
	defer pace.Stop()
	started := time.Now()
	for got.Len() < len(want) {
		<-pace.C
		require.NoError(t, reader.Conn.SetReadDeadline(harness.Deadline()))
		k, err := io.ReadFull(reader.Reader, buf[:min(len(buf), len(want)-got.Len())])
		got.Write(buf[:k])
		require.NoError(t, err, "after %d of %d bytes, %v", got.Len(), len(want), time.Since(started))
	}
	t.Logf("read %d bytes in %v", got.Len(), time.Since(started))
	require.Equal(t, want, got.String(), "every reply, whole")
}
