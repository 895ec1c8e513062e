package client_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// The client as its users meet it: against redcell on loopback, on the real
// clock (the client's cache works in real time), in process, or the built
// binary where the server must die (testkit).

// exampleAddr is where Example's server listens: one for the package's
// run, started by TestMain.
var exampleAddr string

func TestMain(m *testing.M) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := server.New(server.Config{}, storage.New(storage.Config{}))
	go func() { _ = srv.Serve(ln) }()
	exampleAddr = ln.Addr().String()
	code := testkit.Main(m)
	_ = srv.Close()
	os.Exit(code)
}

// redcell is one in-process server on 127.0.0.1, on the real clock.
type redcell struct {
	Addr  string
	Srv   *server.Server
	Store *storage.Store
}

// startRedcell starts a server on a free port and closes it when the test
// ends.
func startRedcell(t testing.TB) *redcell {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	store := storage.New(storage.Config{})
	srv := server.New(server.Config{}, store)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-done)
	})
	return &redcell{Addr: ln.Addr().String(), Srv: srv, Store: store}
}

// goRedis is a go-redis client to addr, closed when the test ends.
func goRedis(t testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// ctx is a context that ends with the test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// infoField is one field of the server's INFO.
func infoField(t testing.TB, rdb redis.UniversalClient, section, field string) int64 {
	t.Helper()
	text, err := rdb.Info(ctx(t), section).Result()
	require.NoError(t, err)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, line)
			return n
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return 0
}

// throttleCalls is how many CL.THROTTLE the server has run.
func throttleCalls(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	text, err := rdb.Info(ctx(t), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_cl.throttle:calls="); ok {
			n, err := strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}
