package server

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// The command path looks at pauses only while Server.hooks says one may be in
// force: the bit is set by CLIENT PAUSE and cleared by UNPAUSE, or by the
// first command that finds the pause over.
func TestPauseHook(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(t, Config{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	require.Zero(t, tc.srv.hooks.Load())
	require.Equal(t, "+OK\r\n", tc.do("CLIENT", "PAUSE", "1000", "WRITE"))
	require.Equal(t, uint32(hookPause), tc.srv.hooks.Load())
	require.Equal(t, "+OK\r\n", tc.do("CLIENT", "UNPAUSE"))
	require.Zero(t, tc.srv.hooks.Load())
	require.Nil(t, tc.srv.pause.Load())

	require.Equal(t, "+OK\r\n", tc.do("CLIENT", "PAUSE", "1000"))
	other := newFakeConn()
	require.True(t, tc.srv.acceptFake(other))
	now.Add(int64(time.Second))
	tc.srv.handle(other, redconCommand(argv("CL.THROTTLE", "k", "1", "1", "1")))
	require.Equal(t, testkit.Ints(0, 2, 1, -1, 1), other.take(), "the pause was over: the write ran at once")
	require.Zero(t, tc.srv.hooks.Load(), "and the command that found it over lifted it")
}

// Close ends the connections whose commands wait on a pause: Serve returns
// without waiting for the pause to end.
func TestCloseEndsPausedClients(t *testing.T) {
	srv := New(Config{Now: func() time.Time { return t0 }}, storage.New(storage.Config{Shards: 1}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	pauser := testkit.Dial(t, ln.Addr().String())
	require.Equal(t, "+OK\r\n", pauser.DoInline("CLIENT PAUSE 600000"))
	testkit.Dial(t, ln.Addr().String()).Write("PING\r\n")
	require.Eventually(t, func() bool {
		for _, c := range srv.connectedClients() {
			if c.waiting.Load() {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "the PING waits on the pause")

	require.NoError(t, srv.Close())
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve waited for the pause to end")
	}
}
