package server

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// blockingPersistence's Flush waits for release.
type blockingPersistence struct {
	nopPersistence
	entered, release chan struct{}
}

func (p blockingPersistence) Flush() error {
	close(p.entered)
	<-p.release
	return nil
}

// Serve returns only once the commands of the connections it closed have
// finished: its caller then closes the store, and a SAVE still running
// would write to a closed Pebble (which panics).
func TestServeWaitsForRunningCommands(t *testing.T) {
	p := blockingPersistence{entered: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(Config{Persistence: p}, storage.New(storage.Config{Shards: 1}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	testkit.Dial(t, ln.Addr().String()).Write("SAVE\r\n")
	<-p.entered

	require.NoError(t, srv.Close())
	require.Never(t, func() bool { return len(served) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"Serve returned while SAVE was still running")
	close(p.release)
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return once SAVE finished")
	}
}
