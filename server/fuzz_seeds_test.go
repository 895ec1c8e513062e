package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/resp"
	"github.com/redcell/redcell/storage"
)

// TestRecordFuzzSeeds records what real clients send (go-redis, rueidis,
// redis-cli, redis-benchmark) and writes it as seed corpora of the fuzz
// tests under testdata/fuzz/, and of resp's FuzzReader under
// ../resp/testdata/fuzz/. It runs only when asked:
//
//	REDCELLTEST_RECORD_FUZZ_SEEDS=1 go test -run TestRecordFuzzSeeds ./server/
func TestRecordFuzzSeeds(t *testing.T) {
	if os.Getenv("REDCELLTEST_RECORD_FUZZ_SEEDS") == "" {
		t.Skip("set REDCELLTEST_RECORD_FUZZ_SEEDS=1 to record the fuzz seeds again")
	}
	rec := &recordListener{}
	addr, authAddr := recordingServer(t, rec, ""), recordingServer(t, rec, "pw")
	ctx := context.Background()

	// go-redis: RESP3 handshake, typed API, a pipeline; RESP2 with AUTH.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	require.NoError(t, rdb.Do(ctx, "CL.THROTTLE", "user123", 15, 30, 60).Err())
	pipe := rdb.Pipeline()
	for i := 0; i < 5; i++ {
		pipe.Do(ctx, "CL.THROTTLE", "user:"+strconv.Itoa(i), 4, 1, 1, i)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	rdb.Get(ctx, "user123")
	rdb.TTL(ctx, "user123")
	rdb.PTTL(ctx, "user123")
	rdb.Exists(ctx, "user123", "nope")
	rdb.Type(ctx, "user123")
	rdb.Scan(ctx, 0, "user*", 10)
	rdb.Keys(ctx, "*")
	rdb.Info(ctx, "stats")
	rdb.ConfigGet(ctx, "maxclients")
	rdb.ClientList(ctx)
	rdb.Echo(ctx, "hello")
	rdb.Time(ctx)
	rdb.DBSize(ctx)
	rdb.Del(ctx, "user123")
	require.NoError(t, rdb.Close())
	auth := redis.NewClient(&redis.Options{Addr: authAddr, Password: "pw", Protocol: 2, ClientName: "seed"})
	require.NoError(t, auth.Do(ctx, "CL.THROTTLE", "k", 4, 1, 1).Err())
	require.NoError(t, auth.Close())

	// rueidis, client-side caching off.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	require.NoError(t, err)
	for _, resp := range rc.DoMulti(ctx,
		rc.B().Arbitrary("CL.THROTTLE").Keys("r1").Args("4", "1", "1").Build(),
		rc.B().Arbitrary("CL.THROTTLE").Keys("r2").Args("4", "1", "1", "2").Build(),
		rc.B().Pttl().Key("r1").Build()) {
		require.NoError(t, resp.Error())
	}
	rc.Close()

	// redis-cli and redis-benchmark, when installed.
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		_, port, _ := net.SplitHostPort(addr)
		run := func(stdin string, args ...string) {
			cmd := exec.Command(cli, append([]string{"-h", "127.0.0.1", "-p", port}, args...)...)
			cmd.Stdin = strings.NewReader(stdin)
			_ = cmd.Run()
		}
		run("", "CL.THROTTLE", "cli", "4", "1", "1")
		run("CL.THROTTLE cli 4 1 1 0\nINFO server\nCLIENT LIST\nCOMMAND COUNT\nSELECT 0\n")
		run("", "--scan", "--pattern", "user*")
		run("", "-3", "HELLO", "3")
		run("*1\r\n$4\r\nPING\r\n", "--pipe")
		_, authPort, _ := net.SplitHostPort(authAddr)
		cmd := exec.Command(cli, "-h", "127.0.0.1", "-p", authPort, "-a", "pw", "--no-auth-warning", "PING")
		_ = cmd.Run()
	}
	if bench, err := exec.LookPath("redis-benchmark"); err == nil {
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bench, "-h", "127.0.0.1", "-p", port, "-c", "2", "-n", "40", "-P", "4", "-q",
			"CL.THROTTLE", "bench:__rand_int__", "100", "10", "1")
		_ = cmd.Run()
		cmd = exec.Command(bench, "-h", "127.0.0.1", "-p", port, "-c", "1", "-n", "20", "-q", "-t", "ping")
		_ = cmd.Run()
	}
	// What telnet and health checks send.
	for _, raw := range []string{"PING\r\n", "PING\n", "ECHO \"hello world\"\r\nQUIT\r\n"} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, _ = c.Write([]byte(raw))
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = c.Read(make([]byte, 64))
		_ = c.Close()
	}

	streams := rec.streams()
	require.NotEmpty(t, streams)
	seen := map[string]bool{}
	for _, s := range streams {
		if len(s) > 4096 {
			s = s[:4096]
		}
		sum := sha256.Sum256(s)
		name := hex.EncodeToString(sum[:8])
		if seen[name] || len(s) == 0 {
			continue
		}
		seen[name] = true
		writeSeed(t, "testdata", "FuzzServerConn", "traffic-"+name, fmt.Sprintf("[]byte(%q)", s))
		writeSeed(t, filepath.Join("..", "resp", "testdata"), "FuzzReader", "traffic-"+name,
			fmt.Sprintf("[]byte(%q)\nuint16(%d)\nuint16(%d)", s, 1+len(s)%13, 64+len(s)%4000))
		var cmds [][]string
		rd := resp.NewReader(bytes.NewReader(s), resp.Limits{})
		for len(cmds) < 32 {
			args, err := rd.Next(true)
			if err == nil && args == nil {
				err = rd.Fill()
				if err == nil {
					continue
				}
			}
			if err != nil {
				break
			}
			var strs []string
			for _, a := range args {
				strs = append(strs, string(a))
			}
			cmds = append(cmds, strs)
		}
		if len(cmds) > 0 {
			writeSeed(t, "testdata", "FuzzCommands", "traffic-"+name, fmt.Sprintf("[]byte(%q)", encodeFuzzCommands(cmds)))
		}
	}
	t.Logf("recorded %d connections, %d distinct", len(streams), len(seen))
}

// writeSeed writes a seed of the fuzz test target, whose package's testdata
// directory is testdata.
func writeSeed(t *testing.T, testdata, target, name, values string) {
	dir := filepath.Join(testdata, "fuzz", target)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+values+"\n"), 0o644))
}

// recordingServer serves on loopback through rec, which keeps every byte
// clients send.
func recordingServer(t *testing.T, rec *recordListener, pass string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(Config{RequirePass: pass}, storage.New(storage.Config{Shards: 1}))
	done := make(chan struct{})
	go func() { _ = srv.Serve(&recordListener{Listener: ln, into: rec}); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

// recordListener's connections copy what they read into its streams.
type recordListener struct {
	net.Listener
	into *recordListener // where streams are kept; nil: this one

	mu    sync.Mutex
	conns []*bytes.Buffer
}

func (l *recordListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	buf := &bytes.Buffer{}
	l.into.mu.Lock()
	l.into.conns = append(l.into.conns, buf)
	l.into.mu.Unlock()
	return &recordConn{Conn: c, buf: buf, mu: &l.into.mu}, nil
}

func (l *recordListener) streams() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for _, b := range l.conns {
		out = append(out, bytes.Clone(b.Bytes()))
	}
	return out
}

type recordConn struct {
	net.Conn
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (c *recordConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}
