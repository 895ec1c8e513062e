package daemon

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// The health check speaks RESP to the configured address: PING, after AUTH
// when a password is set; a server bound to every address is pinged on the
// loopback.
func TestHealthCheck(t *testing.T) {
	start := func(pass string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := server.New(server.Config{RequirePass: pass}, storage.New(storage.Config{}))
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		t.Cleanup(func() { require.NoError(t, srv.Close()); require.NoError(t, <-done) })
		return ln.Addr().(*net.TCPAddr).Port
	}
	open := start("")
	require.NoError(t, HealthCheck(config.Config{Bind: "127.0.0.1", Port: open}, 5*time.Second))
	require.NoError(t, HealthCheck(config.Config{Bind: "0.0.0.0", Port: open}, 5*time.Second))

	locked := start("pw")
	require.NoError(t, HealthCheck(config.Config{Bind: "127.0.0.1", Port: locked, RequirePass: "pw"}, 5*time.Second))
	err := HealthCheck(config.Config{Bind: "127.0.0.1", Port: locked}, 5*time.Second)
	require.EqualError(t, err, "127.0.0.1:"+strconv.Itoa(locked)+`: PING answered "-NOAUTH Authentication required."`)
	err = HealthCheck(config.Config{Bind: "127.0.0.1", Port: locked, RequirePass: "wrong"}, 5*time.Second)
	require.EqualError(t, err, "127.0.0.1:"+strconv.Itoa(locked)+`: AUTH answered "-WRONGPASS invalid username-password pair or user is disabled."`)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	var op *net.OpError
	require.True(t, errors.As(HealthCheck(config.Config{Bind: "127.0.0.1", Port: closed}, 5*time.Second), &op), "connection refused")
}
