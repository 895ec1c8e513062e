package server

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	require.True(t, tc.srv.accept(other))
	now.Add(int64(time.Second))
	tc.srv.handle(other, redconCommand(argv("CL.THROTTLE", "k", "1", "1", "1")))
	require.Equal(t, intsReply(0, 2, 1, -1, 1), other.take(), "the pause was over: the write ran at once")
	require.Zero(t, tc.srv.hooks.Load(), "and the command that found it over lifted it")
}
