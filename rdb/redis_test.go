package rdb

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// These tests meet a real redis-server: it loads the Writer's file, and
// the Reader reads what it saves.

var updateTestdata = flag.Bool("update", false, "rewrite testdata/redis-"+redisTestdataVersion+".rdb from the installed redis-server")

const redisTestdataVersion = "7.0.15"

// unavailable ends a test that needs what is missing: skipped, saying how
// to install it, or failed when CI is set, since CI must run every test
// (as protocol_test's unavailable does).
func unavailable(t testing.TB, missing, install string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(missing + ", and CI is set, so this is a failure: install it with " + install)
	}
	t.Skip(missing + ": this test was skipped; install it with " + install)
}

// needTool returns the path of name on PATH; without it the test is
// unavailable.
func needTool(t testing.TB, install, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, name+" not found in PATH", install)
	}
	return p
}

// redisServer is a redis-server process of a test's own.
type redisServer struct {
	addr   string
	dir    string
	client *redis.Client
	log    *testkit.LockedBuffer // its standard output and error
}

// startRedis starts redis-server with its files in dir (dump.rdb is what
// it loads and saves), waits until it answers PING, and stops it when the
// test ends. extra are more configuration flags.
func startRedis(t *testing.T, dir string, extra ...string) *redisServer {
	t.Helper()
	bin := needTool(t, "`apt-get install redis-server` (Debian/Ubuntu) or `brew install redis`", "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--daemonize", "no"}, extra...)
	cmd := exec.Command(bin, args...)
	log := new(testkit.LockedBuffer)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, log: log}
	// One connection, so a SELECT holds for the commands after it.
	s.client = redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() {
		_ = s.client.ShutdownNoSave(context.Background()).Err()
		_ = s.client.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		pong, err := s.client.Ping(ctx).Result()
		cancel()
		if err == nil && pong == "PONG" {
			return s
		}
		select {
		case <-exited:
			t.Fatalf("redis-server %v exited before answering PING:\n%s", args, log.String())
		case <-deadline:
			t.Fatalf("redis-server %v did not answer PING in 15s (last: %v):\n%s", args, err, log.String())
		case <-tick.C:
		}
	}
}

// do sends a command and returns its reply, failing the test on an error
// other than a nil reply.
func (s *redisServer) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := s.client.Do(context.Background(), args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	require.NoError(t, err, "%v", args)
	return v
}

func TestRedisServerLoadsOurFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixMilli()
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000/16)
	es := entries(
		shown{"plain", "hello", 0},
		shown{"in an hour", "soon gone", now + 3600_000},
		shown{"a minute ago", "already gone", now - 60_000},
		shown{"bin\r\n\x00key", "\x00\xff\r\n", 0},
		shown{"empty", "", 0},
		shown{"12345", "-7", 0},
		shown{strings.Repeat("k", 20_000), "a key with a 32-bit length", 0},
	)
	es = append(es, Entry{Key: []byte("big"), Value: big, ExpireAtMs: now + 7200_000})
	aux := []Aux{
		{"redis-ver", "7.0.15"}, {"redis-bits", "64"}, {"ctime", strconv.FormatInt(now/1000, 10)},
		{"used-mem", "1048576"}, {"aof-base", "0"},
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.rdb"), writeFile(t, aux, es), 0o600))

	s := startRedis(t, dir)
	require.Equal(t, int64(len(es)-1), s.do(t, "DBSIZE"), "every key but the expired one")
	require.Equal(t, int64(0), s.do(t, "EXISTS", "a minute ago"))
	for _, e := range es {
		if e.ExpireAtMs != 0 && e.ExpireAtMs < now {
			continue
		}
		name := string(e.Key[:min(len(e.Key), 20)])
		require.Equal(t, string(e.Value), s.do(t, "GET", string(e.Key)), "GET %q", name)
		pttl := s.do(t, "PTTL", string(e.Key)).(int64)
		if e.ExpireAtMs == 0 {
			require.Equal(t, int64(-1), pttl, "PTTL %q", name)
			continue
		}
		// Redis counts from its clock, read after now.
		want := e.ExpireAtMs - now
		require.LessOrEqual(t, pttl, want, "PTTL %q", name)
		require.Greater(t, pttl, want-10_000, "PTTL %q", name)
	}
}

// A master with no keys sends SELECTDB 0 and RESIZEDB 0 0, which Redis,
// skipping empty dbs, never writes itself.
func TestRedisServerLoadsAnEmptyFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.rdb"), writeFile(t, []Aux{{"redis-ver", "7.0.15"}}, nil), 0o600))
	s := startRedis(t, dir)
	require.Equal(t, int64(0), s.do(t, "DBSIZE"))
	require.Contains(t, s.log.String(), "Done loading RDB, keys loaded: 0, keys expired: 0.")
}

// redisKey is a key set in a redis-server, in its db.
type redisKey struct {
	db int
	shown
}

// Far-future expiries, so the testdata file's keys never expire.
const (
	expire2100 = 4102444800000
	expire2101 = 4133980800123
)

// redisKeys covers each way Redis 7.0 saves a string: an integer in 8, 16
// and 32 bits, LZF for a value or key that compresses, plain bytes.
var redisKeys = []redisKey{
	{0, shown{"int16", "12345", 0}},
	{0, shown{"int8", "-7", expire2100}},
	{0, shown{"int32", "-2147483648", 0}},
	{0, shown{"not int32", "2147483648", 0}},
	{0, shown{"leading zero", "007", 0}},
	{0, shown{"1000", "an integer key", 0}},
	{0, shown{"lzf", strings.Repeat("redcell ", 250), expire2101}},
	{0, shown{strings.Repeat("long key ", 12), "a compressed key", 0}},
	{0, shown{"text", "hello world", expire2100}},
	{0, shown{"bin\r\n\x00", "\x00\r\n\xff", 0}},
	{0, shown{"empty", "", 0}},
	{1, shown{"in db 1", "returned like the others", 0}},
}

func wantRedisKeys() []shown {
	var want []shown
	for _, k := range redisKeys {
		want = append(want, k.shown)
	}
	return sortedByKey(want)
}

func sortedByKey(s []shown) []shown {
	return slices.SortedFunc(slices.Values(s), func(a, b shown) int { return strings.Compare(a.Key, b.Key) })
}

// fillRedis sets redisKeys and a function library (saved as FUNCTION2).
func fillRedis(t *testing.T, s *redisServer) {
	for _, k := range redisKeys {
		s.do(t, "SELECT", k.db)
		s.do(t, "SET", k.Key, k.Value)
		if k.ExpireAtMs != 0 {
			require.Equal(t, int64(1), s.do(t, "PEXPIREAT", k.Key, k.ExpireAtMs), "PEXPIREAT %q", k.Key)
		}
	}
	s.do(t, "SELECT", 0)
	s.do(t, "FUNCTION", "LOAD", "#!lua name=redcelltest\nredis.register_function('one', function() return 1 end)")
}

// checkRedisDump reads a dump.rdb that redis-server saved after fillRedis.
func checkRedisDump(t *testing.T, data []byte, redisVersion string) {
	t.Helper()
	got, aux, err := readAll(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, wantRedisKeys(), sortedByKey(show(got)))
	auxMap := map[string]string{}
	for _, a := range aux {
		auxMap[a.Key] = a.Value
	}
	require.Equal(t, redisVersion, auxMap["redis-ver"])
	require.Equal(t, "64", auxMap["redis-bits"], "an aux field Redis saves integer-encoded")
	require.Equal(t, "0", auxMap["aof-base"])
	// The 2000-byte value and the 108-byte key are in the file compressed,
	// the integers not as text.
	require.Less(t, len(data), 2000, "the file's size")
	require.False(t, bytes.Contains(data, []byte("12345")), "12345 stored as text")
	require.True(t, bytes.Contains(data, []byte("hello world")), "a short string stored as text")
}

func TestReaderReadsRedisServersDump(t *testing.T) {
	dir := t.TempDir()
	s := startRedis(t, dir, "--rdbcompression", "yes", "--maxmemory-policy", "allkeys-lfu")
	fillRedis(t, s)
	info := s.do(t, "INFO", "server").(string)
	version := strings.TrimSpace(strings.SplitN(strings.SplitN(info, "redis_version:", 2)[1], "\n", 2)[0])

	// Under an LFU policy each key is saved with FREQ, under LRU with IDLE.
	for _, policy := range []string{"allkeys-lfu", "allkeys-lru"} {
		s.do(t, "CONFIG", "SET", "maxmemory-policy", policy)
		require.Equal(t, "OK", s.do(t, "SAVE"))
		data, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
		require.NoError(t, err)
		t.Run(policy, func(t *testing.T) { checkRedisDump(t, data, version) })
		if *updateTestdata && policy == "allkeys-lfu" {
			require.Equal(t, redisTestdataVersion, version, "-update wants redis-server %s", redisTestdataVersion)
			require.NoError(t, os.WriteFile(redisTestdata, data, 0o644))
		}
	}
}

var redisTestdata = filepath.Join("testdata", "redis-"+redisTestdataVersion+".rdb")

// The dump TestReaderReadsRedisServersDump saved with -update, read where
// no redis-server is installed: keys with FREQ, a FUNCTION2 library, a db 1.
func TestReaderReadsRedisTestdata(t *testing.T) {
	data, err := os.ReadFile(redisTestdata)
	require.NoError(t, err)
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, 10, r.Version(), "Redis 7.0's RDB version")
	checkRedisDump(t, data, redisTestdataVersion)
}
