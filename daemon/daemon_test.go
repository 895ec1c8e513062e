package daemon

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// Run in-process: Ready reports the address, cancelling ctx stops it cleanly.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() {
		done <- Run(ctx, config.Config{Bind: "127.0.0.1", Port: 0, Dir: dir, FlushInterval: time.Second}, slog.New(slog.DiscardHandler), Options{Ready: ready})
	}()
	addr := <-ready
	rdb := redis.NewClient(&redis.Options{Addr: addr.String()})
	defer rdb.Close()
	r, err := rdb.Do(context.Background(), "CL.THROTTLE", "k", 4, 1, 1).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 1}, r)
	cancel()
	require.NoError(t, <-done)
}

// Run's log, in order: the start-up line with the settings (no password),
// the load, readiness, and on the way out the shutdown and the final save.
func TestRunLogsItsStartAndStop(t *testing.T) {
	var logs testkit.LockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	cfg := config.Config{Bind: "127.0.0.1", Dir: t.TempDir(), FlushInterval: time.Hour, RequirePass: "hunter2"}
	go func() { done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)), Options{Ready: ready}) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	cancel()
	require.NoError(t, <-done)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		m := regexp.MustCompile(`msg="([^"]*)"`).FindStringSubmatch(line)
		require.NotNil(t, m, line)
		msgs = append(msgs, m[1])
	}
	require.Equal(t, []string{"starting redcell", "loaded state", "ready to accept connections", "shutting down", "saved state"}, msgs)
	require.Contains(t, logs.String(), " require_pass=true ")
	require.Contains(t, logs.String(), " flush_interval=1h0m0s ")
	require.NotContains(t, logs.String(), "hunter2")
}

// --event-loops 0 means a goroutine per connection; the server's own 0
// means its default number of loops, so the flag's 0 must not pass as is.
func TestEventLoopsFlagReachesTheServer(t *testing.T) {
	require.Equal(t, -1, eventLoops(0))
	require.Equal(t, 3, eventLoops(3))
}

// The start-up line and the ready line give the shards that run: the
// default (0: 16 per CPU) resolved, a count rounded up to a power of two.
func TestStartAndReadyLogTheShardsThatRun(t *testing.T) {
	for _, c := range []struct{ shards, want int }{{0, storage.DefaultShards()}, {10, 16}, {64, 64}} {
		var logs testkit.LockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		cfg := config.Config{Bind: "127.0.0.1", InMemory: true, Dir: "unused", Shards: c.shards}
		go func() { done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)), Options{Ready: ready}) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("Run: %v", err)
		}
		cancel()
		require.NoError(t, <-done)
		var got []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `msg="starting redcell"`) || strings.Contains(line, `msg="ready to accept connections"`) {
				got = append(got, regexp.MustCompile(` shards=(\d+) `).FindStringSubmatch(line + " ")[1])
			}
		}
		want := strconv.Itoa(c.want)
		require.Equal(t, []string{want, want}, got, "--shards %d", c.shards)
	}
}

// The ready line says where state is kept: the directory and the flush
// interval, or under --in-memory that persistence is off, where it gave
// the unused defaults (dir=./data flush_interval=1s) as if they applied.
func TestReadyLineSaysWherePersistenceGoes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg       config.Config
		want, not []string
	}{
		{config.Config{Bind: "127.0.0.1", InMemory: true, Dir: config.DefaultDir, FlushInterval: time.Second},
			[]string{" persistence=off"}, []string{" dir=", " flush_interval="}},
		{config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Second},
			[]string{" dir=" + dir + " ", " flush_interval=1s"}, []string{" persistence="}},
	} {
		var logs testkit.LockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- Run(ctx, c.cfg, slog.New(slog.NewTextHandler(&logs, nil)), Options{Ready: ready}) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("Run: %v", err)
		}
		cancel()
		require.NoError(t, <-done)
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="ready to accept connections"`) {
				line = l + " "
			}
		}
		for _, w := range c.want {
			require.Contains(t, line, w, "--in-memory=%v", c.cfg.InMemory)
		}
		for _, n := range c.not {
			require.NotContains(t, line, n, "--in-memory=%v", c.cfg.InMemory)
		}
	}
}

// A start whose port is in use fails with the bind error before it opens the
// store: a fresh --dir is not created, so no 16 MiB reserve is left behind.
// Likewise for --metrics-addr and --pprof-addr.
func TestAStartThatCannotBindLeavesTheDirUntouched(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyAddr := busy.Addr().String()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name string
		set  func(*config.Config)
		want string
	}{
		{"port", func(c *config.Config) { c.Port = busyPort }, "listen on " + busyAddr + ": listen tcp " + busyAddr + ": bind: address already in use"},
		{"metrics", func(c *config.Config) { c.MetricsAddr = busyAddr }, "--metrics-addr " + busyAddr + ": listen tcp " + busyAddr + ": bind: address already in use"},
		{"pprof", func(c *config.Config) { c.PprofAddr = busyAddr }, "--pprof-addr " + busyAddr + ": listen tcp " + busyAddr + ": bind: address already in use"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		cfg := config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Second, DiskReserve: 16 << 20}
		c.set(&cfg)
		var logs testkit.LockedBuffer
		err := Run(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)), Options{})
		require.EqualError(t, err, c.want, c.name)
		_, serr := os.Stat(dir)
		require.ErrorIs(t, serr, fs.ErrNotExist, "%s: nothing in --dir", c.name)
		require.NotContains(t, logs.String(), "loaded state", c.name)
	}
}

// The listener is open while the store loads: a client that connects then
// is not refused; it waits in the kernel's backlog, and is answered once the
// state is loaded.
func TestAClientConnectingDuringTheLoadIsAnsweredOnceLoaded(t *testing.T) {
	for _, loops := range []int{0, 1} { // a goroutine per connection; an event loop
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		listening, load := make(chan net.Addr, 1), make(chan struct{})
		opts := Options{Ready: ready, listening: func(addr net.Addr) { listening <- addr; <-load }}
		cfg := config.Config{Bind: "127.0.0.1", Dir: t.TempDir(), FlushInterval: time.Second, EventLoops: loops}
		go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler), opts) }()

		addr := <-listening // the store is not open yet
		conn, err := net.Dial("tcp", addr.String())
		require.NoError(t, err, "--event-loops %d: connected during the load", loops)
		_, err = conn.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		close(load)
		require.Equal(t, addr, <-ready)
		reply := make([]byte, 7)
		_, err = io.ReadFull(conn, reply)
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", string(reply), "--event-loops %d", loops)
		require.NoError(t, conn.Close())
		cancel()
		require.NoError(t, <-done)
	}
}

// --protected-mode reaches the server, which checks each connection by it
// and reports it: CONFIG GET protected-mode.
func TestProtectedModeReachesTheServer(t *testing.T) {
	for _, on := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		cfg := config.Config{Bind: "127.0.0.1", InMemory: true, ProtectedMode: on}
		go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler), Options{Ready: ready}) }()
		var addr net.Addr
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatalf("Run: %v", err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr.String()})
		got, err := rdb.ConfigGet(context.Background(), "protected-mode").Result()
		require.NoError(t, err)
		want := map[bool]string{true: "yes", false: "no"}[on]
		require.Equal(t, map[string]string{"protected-mode": want}, got)
		_ = rdb.Close()
		cancel()
		require.NoError(t, <-done)
	}
}

// A missing --aclfile stops the start before the store is opened (nothing
// is written to --dir), saying how to make an empty one.
func TestAMissingACLFileStopsTheStartFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	acl := filepath.Join(t.TempDir(), "users.acl")
	err := Run(context.Background(), config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Second, ACLFile: acl,
		MaxKeyLen: 1 << 13, WindowLogMax: 10000}, slog.New(slog.DiscardHandler), Options{})
	require.EqualError(t, err, "--aclfile: Error loading ACLs, opening file '"+acl+"': No such file or directory; create an empty one (touch "+acl+") to start without users and keep those ACL SETUSER makes (ACL SAVE)")
	_, serr := os.Stat(dir)
	require.ErrorIs(t, serr, fs.ErrNotExist, "the store was not opened")
}

// A server left at rest after a fill gives its arenas' garbage back: the
// lease states that outgrew their blobs while filling are compacted off
// the command path (storage.Store.RunTidy), seen in INFO's
// redcell_arena_garbage, and every lease is still held.
func TestAServerAtRestTidiesItsArenas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	cfg := config.Config{Bind: "127.0.0.1", InMemory: true, Shards: 1}
	go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler), Options{Ready: ready}) }()
	addr := <-ready
	rdb := redis.NewClient(&redis.Options{Addr: addr.String()})
	defer rdb.Close()
	// The fill storage's tests show leaves over an eighth of the arena
	// garbage and under the half at which the table compacts itself.
	for k := range 300 {
		p := rdb.Pipeline()
		for i := range 100 {
			p.Do(ctx, "CL.ACQUIRE", "leases:"+strconv.Itoa(k), 100, 3600000, "TOKEN", "holder-"+strconv.Itoa(i))
		}
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
	garbage := func() int64 {
		info, err := rdb.Info(ctx, "memory").Result()
		require.NoError(t, err)
		m := regexp.MustCompile(`\r\nredcell_arena_garbage:(\d+)\r\n`).FindStringSubmatch(info)
		require.NotNil(t, m, info)
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	require.Greater(t, garbage(), int64(100<<10), "the fill's garbage")
	require.Eventually(t, func() bool { return garbage() == 0 }, 10*time.Second, 100*time.Millisecond,
		"tidied within two looks (storage.DefaultTidyInterval)")
	for _, k := range []int{0, 150, 299} {
		n, err := rdb.Do(ctx, "CL.LEASES", "leases:"+strconv.Itoa(k)).Slice()
		require.NoError(t, err)
		require.Len(t, n, 100)
	}
	cancel()
	require.NoError(t, <-done)
}
