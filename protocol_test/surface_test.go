package protocol_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// The Redis commands a drop-in must answer as Redis does (docs/commands.md, "The Redis
// surface").

func TestPingEcho(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
	require.Equal(t, testkit.Simple("PONG"), c.Do("ping"))
	require.Equal(t, testkit.Bulk("hello world"), c.Do("PING", "hello world"))
	require.Equal(t, testkit.Bulk(""), c.Do("PING", ""))
	require.Equal(t, testkit.Bulk("a\r\nb"), c.Do("ECHO", "a\r\nb"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'ping' command"), c.Do("PING", "a", "b"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'echo' command"), c.Do("ECHO"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'echo' command"), c.Do("ECHO", "a", "b"))
}

// QUIT replies OK and closes; what was pipelined after it is not run.
func TestQuitStopsThePipeline(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	c.Write(testkit.Command("PING") + testkit.Command("QUIT") + testkit.Command("CL.THROTTLE", "after-quit", "4", "1", "1") + testkit.Command("PING"))
	require.Equal(t, testkit.Simple("PONG"), c.Read())
	require.Equal(t, testkit.OK, c.Read())
	c.ExpectClosed()

	other := ts.Raw(t)
	require.Equal(t, testkit.Int(0), other.Do("EXISTS", "after-quit"), "the command after QUIT did not run")
	require.Equal(t, testkit.Int(0), other.Do("DBSIZE"))
}

func TestSelect(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.OK, c.Do("SELECT", "0"))
	require.Equal(t, testkit.Err(errDBIndex), c.Do("SELECT", "1"))
	require.Equal(t, testkit.Err(errDBIndex), c.Do("SELECT", "15"))
	require.Equal(t, testkit.Err(errDBIndex), c.Do("SELECT", "-1"))
	require.Equal(t, testkit.Err(errNotInteger), c.Do("SELECT", "x"))
	require.Equal(t, testkit.Err(errNotInteger), c.Do("SELECT", "0.0"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'select' command"), c.Do("SELECT"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "the connection still works")

	// go-redis's DB option sends SELECT on connect: DB 0 is fine, 1 fails.
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.DB = 1 })
	require.EqualError(t, rdb.Ping(harness.Ctx(t)).Err(), errDBIndex)
}

// TIME reads the server's clock, the manual one here.
func TestTime(t *testing.T) {
	ts := harness.StartServer(t)
	at := time.Date(2027, 3, 1, 8, 30, 15, 123456789, time.UTC)
	ts.Clock.Set(at)
	c := ts.Raw(t)
	require.Equal(t, testkit.Bulks(strconv.FormatInt(at.Unix(), 10), "123456"), c.Do("TIME"))

	rdb := ts.GoRedis(t)
	got, err := rdb.Time(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.True(t, at.Truncate(time.Microsecond).Equal(got), "TIME = %v want %v", got, at)
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'time' command"), c.Do("TIME", "now"))
}

// throttle makes one allowed CL.THROTTLE call on key, with a TAT period
// seconds after now.
func throttle(t *testing.T, c *testkit.Conn, key string, period int) {
	t.Helper()
	require.Equal(t, testkit.Ints(0, 1, 0, -1, int64(period)), c.Do("CL.THROTTLE", key, "0", "1", strconv.Itoa(period)))
}

func TestDBSizeFlushDBFlushAll(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
	for _, k := range []string{"a", "b", "c"} {
		throttle(t, c, k, 60)
	}
	require.Equal(t, testkit.Int(3), c.Do("DBSIZE"))
	require.Equal(t, testkit.Ints(1, 1, 0, 60, 60), c.Do("CL.THROTTLE", "a", "0", "1", "60"))

	require.Equal(t, testkit.OK, c.Do("FLUSHDB"))
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
	require.Equal(t, testkit.Ints(0, 1, 0, -1, 60), c.Do("CL.THROTTLE", "a", "0", "1", "60"), "FLUSHDB reset the limiter")

	require.Equal(t, testkit.OK, c.Do("FLUSHALL", "ASYNC"))
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
	throttle(t, c, "a", 60)
	require.Equal(t, testkit.OK, c.Do("flushall", "sync"))
	require.Equal(t, testkit.OK, c.Do("FLUSHDB", "async"))
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("FLUSHDB", "now"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'flushall' command"), c.Do("FLUSHALL", "SYNC", "ASYNC"))
}

func TestKeys(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for _, k := range []string{"user:1", "user:2", "user:10", "admin:1", "a*b", "short"} {
		throttle(t, c, k, 60)
	}
	throttle(t, c, "user:soon-gone", 1)
	keys := func(pattern string) []string {
		t.Helper()
		rdb := ts.GoRedis(t)
		got, err := rdb.Keys(harness.Ctx(t), pattern).Result()
		require.NoError(t, err)
		sort.Strings(got)
		return got
	}
	require.Equal(t, []string{"a*b", "admin:1", "short", "user:1", "user:10", "user:2", "user:soon-gone"}, keys("*"))
	require.Equal(t, []string{"user:1", "user:10", "user:2", "user:soon-gone"}, keys("user:*"))
	require.Equal(t, []string{"user:1", "user:2"}, keys("user:?"))
	require.Equal(t, []string{"user:1", "user:2"}, keys("user:[0-9]"))
	require.Equal(t, []string{"admin:1", "user:1"}, keys("*:1"))
	require.Equal(t, []string{"a*b"}, keys(`a\*b`))
	require.Equal(t, []string{"short"}, keys("[^au]*"))
	require.Equal(t, []string{}, keys("nomatch*"))

	ts.Clock.Advance(time.Second)
	require.Equal(t, []string{"user:1", "user:10", "user:2"}, keys("user:*"), "an expired key is not listed")
	require.Equal(t, "*0\r\n", c.Do("KEYS", "nomatch"))
	require.Equal(t, testkit.Bulks("short"), c.Do("KEYS", "short"))

	// A pattern built to backtrack (CVE-2022-36021 in Redis) against a long
	// key answers at once, and decisions on other keys carry on.
	long := strings.Repeat("a", 2000)
	throttle(t, c, long, 60)
	abusive := strings.Repeat("*a", 40) + "*b"
	other := ts.Raw(t)
	done := make(chan string, 1)
	go func() { done <- c.Do("KEYS", abusive) }()
	require.Equal(t, testkit.Ints(0, 1, 0, -1, 60), other.Do("CL.THROTTLE", "during-keys", "0", "1", "60"))
	select {
	case got := <-done:
		require.Equal(t, "*0\r\n", got)
	case <-time.After(10 * time.Second):
		t.Fatal("KEYS with a backtracking pattern did not answer within 10s")
	}
	require.Equal(t, "*2\r\n$1\r\n0\r\n*0\r\n", c.Do("SCAN", "0", "MATCH", abusive, "COUNT", "100000"))
}

// redis-cli --scan walks SCAN to the end.
func TestRedisCLIScan(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	var want []string
	for i := 0; i < 120; i++ {
		k := fmt.Sprintf("user:%d", i)
		want = append(want, k)
		throttle(t, c, k, 60)
		throttle(t, c, fmt.Sprintf("other:%d", i), 60)
	}
	out := harness.CLI(t, ts.Port, "", "--scan", "--pattern", "user:*")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.ElementsMatch(t, want, got)
	require.Equal(t, "240\n", harness.CLI(t, ts.Port, "", "DBSIZE"))
}

func TestScanCoversEveryKey(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	var want []string
	for i := 0; i < 250; i++ {
		k := fmt.Sprintf("key:%d", i)
		want = append(want, k)
		require.NoError(t, rdb.Do(harness.Ctx(t), "CL.THROTTLE", k, 0, 1, 60).Err())
	}
	for i := 0; i < 20; i++ {
		require.NoError(t, rdb.Do(harness.Ctx(t), "CL.THROTTLE", fmt.Sprintf("other:%d", i), 0, 1, 60).Err())
	}

	var got []string
	cursor, calls := uint64(0), 0
	for {
		keys, next, err := rdb.Scan(harness.Ctx(t), cursor, "key:*", 7).Result()
		require.NoError(t, err)
		got = append(got, keys...)
		calls++
		cursor = next
		if cursor == 0 {
			break
		}
		require.Less(t, calls, 1000, "SCAN must terminate")
	}
	require.ElementsMatch(t, want, got, "every key exactly once")
	require.Greater(t, calls, 270/7, "COUNT bounds each call")

	// go-redis's iterator, no MATCH: all 270.
	n := 0
	iter := rdb.Scan(harness.Ctx(t), 0, "", 0).Iterator()
	for iter.Next(harness.Ctx(t)) {
		n++
	}
	require.NoError(t, iter.Err())
	require.Equal(t, 270, n)

	c := ts.Raw(t)
	require.Equal(t, testkit.Err("ERR invalid cursor"), c.Do("SCAN", "x"))
	require.Equal(t, testkit.Err("ERR invalid cursor"), c.Do("SCAN", "-1"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("SCAN", "0", "COUNT", "0"))
	require.Equal(t, testkit.Err(errNotInteger), c.Do("SCAN", "0", "COUNT", "x"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("SCAN", "0", "MATCH"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("SCAN", "0", "LIMIT", "5"))
	require.Equal(t, "*2\r\n$1\r\n0\r\n*0\r\n", c.Do("SCAN", "0", "COUNT", "1000", "TYPE", "hash"))
	require.Equal(t, "*2\r\n$1\r\n0\r\n"+testkit.Bulks("other:7"), c.Do("SCAN", "0", "MATCH", "other:7", "COUNT", "1000", "TYPE", "string"))
}

// DEL is redis-cell's documented way to reset a limiter; UNLINK too.
func TestDelAndUnlinkResetTheLimiter(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for i := int64(0); i < 5; i++ {
		require.Equal(t, testkit.Ints(0, 5, 4-i, -1, i+1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	}
	require.Equal(t, testkit.Ints(1, 5, 0, 1, 5), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Int(1), c.Do("DEL", "k"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "DEL reset the limiter")
	require.Equal(t, testkit.Int(0), c.Do("DEL", "absent"))

	require.Equal(t, testkit.Int(1), c.Do("UNLINK", "k"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "UNLINK reset the limiter")

	throttle(t, c, "a", 60)
	throttle(t, c, "b", 60)
	require.Equal(t, testkit.Int(3), c.Do("DEL", "a", "b", "k", "absent", "a"), "each existing key counted once")
	require.Equal(t, testkit.Int(0), c.Do("DBSIZE"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'del' command"), c.Do("DEL"))
}

func TestExists(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Int(0), c.Do("EXISTS", "k"))
	throttle(t, c, "k", 2)
	require.Equal(t, testkit.Int(1), c.Do("EXISTS", "k"))
	require.Equal(t, testkit.Int(2), c.Do("EXISTS", "k", "k", "absent"), "a key named twice counts twice")
	ts.Clock.Advance(2 * time.Second)
	require.Equal(t, testkit.Int(0), c.Do("EXISTS", "k"), "gone when its TAT passes")
}

// TTL and PTTL count down to the TAT on the manual clock, then -2.
func TestTTLAndPTTL(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 10), c.Do("CL.THROTTLE", "k", "4", "1", "10"))
	require.Equal(t, testkit.Int(10000), c.Do("PTTL", "k"))
	require.Equal(t, testkit.Int(10), c.Do("TTL", "k"))

	for _, tc := range []struct {
		at        time.Duration
		pttl, ttl int64
	}{
		{ms(2500), 7500, 8}, // TTL rounds as Redis: (7500+500)/1000
		{ms(2501), 7499, 7},
		{ms(9000), 1000, 1},
		{ms(9499), 501, 1},
		{ms(9501), 499, 0},
		{9*time.Second + 999_600*time.Microsecond, 0, 0}, // 0.4 ms left rounds to 0
		{10 * time.Second, -2, -2},
		{time.Hour, -2, -2},
	} {
		ts.Clock.Set(harness.T0.Add(tc.at))
		require.Equal(t, testkit.Int(tc.pttl), c.Do("PTTL", "k"), "PTTL at %v", tc.at)
		require.Equal(t, testkit.Int(tc.ttl), c.Do("TTL", "k"), "TTL at %v", tc.at)
	}
	require.Equal(t, testkit.Int(-2), c.Do("PTTL", "absent"))
	require.Equal(t, testkit.Int(-2), c.Do("TTL", "absent"))

	// go-redis's typed replies.
	ts.Clock.Set(harness.T0.Add(time.Hour))
	rdb := ts.GoRedis(t)
	require.NoError(t, rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 10, 3).Err())
	require.Equal(t, 30*time.Second, rdb.TTL(harness.Ctx(t), "k").Val())
	require.Equal(t, 30*time.Second, rdb.PTTL(harness.Ctx(t), "k").Val())
	require.Equal(t, time.Duration(-2), rdb.TTL(harness.Ctx(t), "absent").Val())
}

// A limited call changes neither the TAT nor the expiry.
func TestLimitedCallKeepsExpiry(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Ints(0, 1, 0, -1, 60), c.Do("CL.THROTTLE", "k", "0", "1", "60"))
	ts.Clock.Advance(10 * time.Second)
	require.Equal(t, testkit.Ints(1, 1, 0, 50, 50), c.Do("CL.THROTTLE", "k", "0", "1", "60"))
	require.Equal(t, testkit.Int(50000), c.Do("PTTL", "k"))
	require.Equal(t, testkit.Bulk(strconv.FormatInt(harness.T0.Add(time.Minute).UnixNano(), 10)), c.Do("GET", "k"))
	require.Equal(t, testkit.Ints(0, 1, 1, -1, 0), c.Do("CL.THROTTLE", "peek", "0", "1", "60", "0"))
	require.Equal(t, testkit.Int(0), c.Do("EXISTS", "peek"), "a peek never creates a key")
}

// GET shows the TAT in nanoseconds since the Unix epoch; TYPE says string.
func TestGetAndType(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Null2, c.Do("GET", "k"))
	require.Equal(t, testkit.Simple("none"), c.Do("TYPE", "k"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 10), c.Do("CL.THROTTLE", "k", "4", "1", "10"))
	tat := harness.T0.Add(10 * time.Second).UnixNano()
	require.Equal(t, testkit.Bulk(strconv.FormatInt(tat, 10)), c.Do("GET", "k"))
	require.Equal(t, testkit.Simple("string"), c.Do("TYPE", "k"))
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 20), c.Do("CL.THROTTLE", "k", "4", "1", "10"))
	require.Equal(t, testkit.Bulk(strconv.FormatInt(tat+int64(10*time.Second), 10)), c.Do("GET", "k"))

	rdb := ts.GoRedis(t)
	n, err := rdb.Get(harness.Ctx(t), "k").Int64()
	require.NoError(t, err)
	require.Equal(t, tat+int64(10*time.Second), n)
	require.Equal(t, "string", rdb.Type(harness.Ctx(t), "k").Val())
	require.ErrorIs(t, rdb.Get(harness.Ctx(t), "absent").Err(), redis.Nil, "RESP3 null is go-redis's redis.Nil")
	require.Equal(t, "none", rdb.Type(harness.Ctx(t), "absent").Val())

	ts.Clock.Advance(20 * time.Second)
	require.Equal(t, testkit.Null2, c.Do("GET", "k"), "gone at its TAT")
	require.Equal(t, testkit.Simple("none"), c.Do("TYPE", "k"))
}

// An expired key stops costing memory without being touched again: the
// store's sweeper (as main runs it) frees it, and INFO counts it.
func TestActiveExpiry(t *testing.T) {
	ts := harness.StartServer(t)
	sweep, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Store.RunExpiry(sweep, storage.ExpiryOptions{Interval: time.Millisecond, Batch: 1000, Now: ts.Clock.Now})
	}()
	t.Cleanup(func() { stop(); <-done })

	c := ts.Raw(t)
	for i := 0; i < 100; i++ {
		throttle(t, c, fmt.Sprintf("k%d", i), 5)
	}
	throttle(t, c, "long", 3600)
	require.Equal(t, testkit.Int(101), c.Do("DBSIZE"))
	ts.Clock.Advance(5 * time.Second)
	require.Eventually(t, func() bool { return ts.Store.Len() == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, testkit.Int(1), c.Do("DBSIZE"))
	require.Contains(t, c.Do("INFO", "stats"), "\r\nexpired_keys:100\r\n")
	require.Equal(t, "# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=3595000\r\n", bulkBody(t, c.Do("INFO", "keyspace")),
		"avg_ttl in ms: the one key left has 3600 s - 5 s to go")
}

// bulkBody returns the text of a RESP2 bulk string reply.
func bulkBody(t *testing.T, reply string) string {
	t.Helper()
	head, body, found := strings.Cut(reply, "\r\n")
	require.True(t, found && strings.HasPrefix(head, "$"), "not a bulk string: %q", reply)
	n, err := strconv.Atoi(head[1:])
	require.NoError(t, err)
	require.Len(t, body, n+2)
	return body[:n]
}

// clientLine is one line of CLIENT LIST / CLIENT INFO as redcell prints it.
func clientLine(id int64, addr, laddr, name string, age, idle int, cmd string, resp int, libName, libVer string) string {
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s",
		id, addr, laddr, name, age, idle, cmd, resp, libName, libVer)
}

func TestClientCommands(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	addr := c.Conn.LocalAddr().String()
	require.Equal(t, testkit.Int(1), c.Do("CLIENT", "ID"))
	require.Equal(t, testkit.Null2, c.Do("CLIENT", "GETNAME"))
	require.Equal(t, testkit.OK, c.Do("CLIENT", "SETNAME", "app-1"))
	require.Equal(t, testkit.Bulk("app-1"), c.Do("client", "getname"))
	require.Equal(t, testkit.Err("ERR Client names cannot contain spaces, newlines or special characters."), c.Do("CLIENT", "SETNAME", "app 1"))
	require.Equal(t, testkit.Err("ERR Client names cannot contain spaces, newlines or special characters."), c.Do("CLIENT", "SETNAME", "app\n1"))
	require.Equal(t, testkit.Bulk("app-1"), c.Do("CLIENT", "GETNAME"), "a refused name changes nothing")
	require.Equal(t, testkit.OK, c.Do("CLIENT", "SETNAME", ""))
	require.Equal(t, testkit.Null2, c.Do("CLIENT", "GETNAME"), "an empty name clears it")
	require.Equal(t, testkit.OK, c.Do("CLIENT", "SETNAME", "app-1"))

	require.Equal(t, testkit.OK, c.Do("CLIENT", "SETINFO", "LIB-NAME", "mylib"))
	require.Equal(t, testkit.OK, c.Do("CLIENT", "SETINFO", "lib-ver", "1.2.3"))
	require.Equal(t, testkit.Err("ERR Unrecognized option 'lib-color'"), c.Do("CLIENT", "SETINFO", "lib-color", "red"))
	require.Equal(t, testkit.Err("ERR Unrecognized option 'lib-color'"), c.Do("CLIENT", "SETINFO", "lib-color", "bright red"))
	require.Equal(t, testkit.Err("ERR LIB-NAME cannot contain spaces, newlines or special characters."), c.Do("CLIENT", "SETINFO", "LIB-NAME", "my lib"))
	require.Equal(t, testkit.Err("ERR lib-ver cannot contain spaces, newlines or special characters."), c.Do("CLIENT", "SETINFO", "lib-ver", "1.2\t3"))
	require.Equal(t, testkit.Err("ERR lib-ver cannot contain spaces, newlines or special characters."), c.Do("CLIENT", "SETINFO", "lib-ver", "1.2é"))

	ts.Clock.Advance(65 * time.Second)
	info := clientLine(1, addr, ts.Addr, "app-1", 65, 0, "client|info", 2, "mylib", "1.2.3") + "\n"
	require.Equal(t, testkit.Bulk(info), c.Do("CLIENT", "INFO"))

	// A second connection, 5 s later: CLIENT LIST shows both, oldest first,
	// each with its last command and how long it has been idle.
	ts.Clock.Advance(5 * time.Second)
	c2 := ts.Raw(t)
	require.Equal(t, helloReply(3, 2), c2.Do("HELLO", "3"))
	ts.Clock.Advance(time.Second)
	list := clientLine(1, addr, ts.Addr, "app-1", 71, 6, "client|info", 2, "mylib", "1.2.3") + "\n" +
		clientLine(2, c2.Conn.LocalAddr().String(), ts.Addr, "", 1, 0, "client|list", 3, "", "") + "\n"
	require.Equal(t, "="+strconv.Itoa(len(list)+4)+"\r\ntxt:"+list+"\r\n", c2.Do("CLIENT", "LIST"), "RESP3 verbatim text")
	fromC := clientLine(1, addr, ts.Addr, "app-1", 71, 0, "client|list", 2, "mylib", "1.2.3") + "\n" +
		clientLine(2, c2.Conn.LocalAddr().String(), ts.Addr, "", 1, 0, "client|list", 3, "", "") + "\n"
	require.Equal(t, testkit.Bulk(fromC), c.Do("CLIENT", "LIST", "TYPE", "normal"))
	require.Equal(t, "$0\r\n\r\n", c.Do("CLIENT", "LIST", "TYPE", "pubsub"))
	require.Equal(t, testkit.Err("ERR Unknown client type 'bogus'"), c.Do("CLIENT", "LIST", "TYPE", "bogus"))
	require.Equal(t, testkit.Bulk(clientLine(2, c2.Conn.LocalAddr().String(), ts.Addr, "", 1, 0, "client|list", 3, "", "")+"\n"), c.Do("CLIENT", "LIST", "ID", "2", "99"))
	require.Equal(t, testkit.Err("ERR Invalid client ID"), c.Do("CLIENT", "LIST", "ID", "x"))

	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'client|setname' command"), c.Do("CLIENT", "SETNAME"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'client|id' command"), c.Do("CLIENT", "ID", "extra"))
	require.Equal(t, testkit.Err("ERR unknown subcommand 'FROB'. Try CLIENT HELP."), c.Do("CLIENT", "FROB"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'client' command"), c.Do("CLIENT"))

	// go-redis parses the lines.
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.ClientName = "gr" })
	ci, err := rdb.ClientInfo(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, "gr", ci.Name)
	require.Equal(t, "client|info", ci.LastCmd)
	require.Equal(t, ts.Addr, ci.LAddr)
	id, err := rdb.ClientID(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, ci.ID, id)
	name, err := rdb.ClientGetName(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, "gr", name)
	all, err := rdb.ClientList(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSuffix(all, "\n"), "\n"), 3)
}

// COMMAND describes the commands served so that cluster-aware clients find
// CL.THROTTLE's key at position 1.
func TestCommand(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	// As Redis: every command, each followed by its subcommands' full names;
	// COMMAND COUNT counts the commands.
	listed := testkit.BulkList(t, c.Do("COMMAND", "LIST"))
	var names []string
	for _, n := range listed {
		if !strings.Contains(n, "|") {
			names = append(names, n)
		}
	}
	require.Contains(t, names, "cl.throttle")
	require.Contains(t, names, "ping")
	require.Contains(t, listed, "client|setname")
	require.True(t, sort.StringsAreSorted(names), "COMMAND LIST is sorted: %v", names)
	require.Equal(t, testkit.Int(int64(len(names))), c.Do("COMMAND", "COUNT"))
	require.Equal(t, testkit.Bulks("client|getname", "client|setname"), c.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|?etname"))
	require.Equal(t, testkit.Bulks("cl.acquire", "cl.count", "cl.leases", "cl.release", "cl.renew", "cl.reserve", "cl.throttle", "cl.top", "cl.window"), c.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", "cl.*"))
	require.Equal(t, testkit.Bulks("cl.throttle"), c.Do("COMMAND", "LIST", "FILTERBY", "pattern", "CL.THROTTLE"))
	require.Equal(t, "*0\r\n", c.Do("COMMAND", "LIST", "FILTERBY", "MODULE", "redis-cell"))
	require.Contains(t, c.Do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "write"), testkit.Bulk("cl.throttle"))
	require.NotContains(t, c.Do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "read"), testkit.Bulk("cl.throttle"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("COMMAND", "LIST", "FILTERBY", "COLOR", "red"))
	require.Equal(t, testkit.Err(errSyntax), c.Do("COMMAND", "LIST", "extra"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'command|count' command"), c.Do("COMMAND", "COUNT", "extra"))
	require.Equal(t, testkit.Err("ERR unknown subcommand 'FROB'. Try COMMAND HELP."), c.Do("COMMAND", "FROB"))

	// COMMAND GETKEYS, as cluster clients ask it.
	require.Equal(t, testkit.Bulks("user:1"), c.Do("COMMAND", "GETKEYS", "CL.THROTTLE", "user:1", "4", "1", "1"))
	require.Equal(t, testkit.Bulks("a", "b", "c"), c.Do("COMMAND", "GETKEYS", "del", "a", "b", "c"))
	require.Equal(t, testkit.Err("ERR Invalid command specified"), c.Do("COMMAND", "GETKEYS", "nosuch", "k"))
	require.Equal(t, testkit.Err("ERR The command has no key arguments"), c.Do("COMMAND", "GETKEYS", "PING"))
	require.Equal(t, testkit.Err("ERR Invalid number of arguments specified for command"), c.Do("COMMAND", "GETKEYS", "CL.THROTTLE", "k"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'command|getkeys' command"), c.Do("COMMAND", "GETKEYS"))

	// COMMAND INFO cl.throttle, byte for byte, as Redis 7 shapes an entry;
	// its key-spec is the one Redis gives a module's command (redis-cell's):
	// RW access update, so ACLs need read and write on the key.
	throttleInfo := "*10\r\n" + testkit.Bulk("cl.throttle") + testkit.Int(-5) +
		"*3\r\n" + testkit.Simple("write") + testkit.Simple("denyoom") + testkit.Simple("fast") +
		testkit.Int(1) + testkit.Int(1) + testkit.Int(1) +
		"*2\r\n" + testkit.Simple("@write") + testkit.Simple("@fast") +
		"*0\r\n" + // tips
		"*1\r\n*6\r\n" + testkit.Bulk("flags") + "*3\r\n" + testkit.Simple("RW") + testkit.Simple("access") + testkit.Simple("update") +
		testkit.Bulk("begin_search") + "*4\r\n" + testkit.Bulk("type") + testkit.Bulk("index") + testkit.Bulk("spec") + "*2\r\n" + testkit.Bulk("index") + testkit.Int(1) +
		testkit.Bulk("find_keys") + "*4\r\n" + testkit.Bulk("type") + testkit.Bulk("range") + testkit.Bulk("spec") +
		"*6\r\n" + testkit.Bulk("lastkey") + testkit.Int(0) + testkit.Bulk("keystep") + testkit.Int(1) + testkit.Bulk("limit") + testkit.Int(0) +
		"*0\r\n" // subcommands
	require.Equal(t, "*1\r\n"+throttleInfo, c.Do("COMMAND", "INFO", "cl.throttle"))
	require.Equal(t, "*2\r\n"+throttleInfo+testkit.Null2, c.Do("COMMAND", "INFO", "CL.THROTTLE", "nosuch"))
	require.True(t, strings.HasPrefix(c.Do("COMMAND", "INFO", "client|list"), "*1\r\n*10\r\n"+testkit.Bulk("client|list")+testkit.Int(-2)))
	all := c.Do("COMMAND")
	require.True(t, strings.HasPrefix(all, "*"+strconv.Itoa(len(names))+"\r\n"))
	require.Contains(t, all, throttleInfo)

	for _, proto := range []int{2, 3} {
		rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
		cmds, err := rdb.Command(harness.Ctx(t)).Result()
		require.NoError(t, err, "RESP%d", proto)
		require.Len(t, cmds, len(names))
		ct := cmds["cl.throttle"]
		require.NotNil(t, ct)
		require.Equal(t, int8(-5), ct.Arity)
		require.Equal(t, int8(1), ct.FirstKeyPos)
		require.Equal(t, int8(1), ct.LastKeyPos)
		require.Equal(t, int8(1), ct.StepCount)
		require.Equal(t, []string{"write", "denyoom", "fast"}, ct.Flags)
		require.Equal(t, []string{"@write", "@fast"}, ct.ACLFlags)
		require.False(t, ct.ReadOnly)
		require.True(t, cmds["get"].ReadOnly)
		require.Equal(t, int8(-1), cmds["del"].LastKeyPos)
		require.Equal(t, int8(0), cmds["ping"].FirstKeyPos)

		docs, err := rdb.Do(harness.Ctx(t), "COMMAND", "DOCS", "cl.throttle").Result()
		require.NoError(t, err)
		doc := docMap(t, proto, docs)["cl.throttle"]
		require.NotNil(t, doc)
		fields := docMap(t, proto, doc)
		require.Equal(t, "generic", fields["group"])
		require.Equal(t, "0.1.0", fields["since"])
		require.Equal(t, "O(1)", fields["complexity"])
		require.Contains(t, fields["summary"], "redis-cell")
	}
	require.Equal(t, "*0\r\n", c.Do("COMMAND", "DOCS", "nosuch"))
	require.Equal(t, "*2\r\n"+testkit.Bulk("ping"), c.Do("COMMAND", "DOCS", "ping")[:len("*2\r\n$4\r\nping\r\n")])
}

// docMap reads a COMMAND DOCS map under either protocol.
func docMap(t *testing.T, proto int, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	if proto == 3 {
		m, ok := v.(map[any]any)
		require.True(t, ok, "%T", v)
		for k, v := range m {
			out[k.(string)] = v
		}
		return out
	}
	a, ok := v.([]any)
	require.True(t, ok, "%T", v)
	for i := 0; i+1 < len(a); i += 2 {
		out[a[i].(string)] = a[i+1]
	}
	return out
}

var infoLine = regexp.MustCompile(`^(# [A-Za-z]+|[a-z0-9_]+:[^\r\n]*|)$`)

// INFO is Redis's text: "# Section" headers, "field:value" lines, CRLF line
// ends, a blank line between sections.
func TestInfo(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	throttle(t, c, "a", 60)
	throttle(t, c, "b", 60)
	ts.Clock.Advance(3600 * time.Second)
	throttle(t, c, "c", 3600)
	throttle(t, c, "d", 3600)

	text := bulkBody(t, c.Do("INFO"))
	require.True(t, strings.HasSuffix(text, "\r\n"))
	require.NotContains(t, strings.ReplaceAll(text, "\r\n", ""), "\n", "every line ends in CRLF")
	var headers []string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n") {
		require.Regexp(t, infoLine, line)
		if strings.HasPrefix(line, "# ") {
			headers = append(headers, line[2:])
		}
	}
	for _, h := range []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Keyspace"} {
		require.Contains(t, headers, h)
	}
	require.Equal(t, "Server", headers[0])
	require.Equal(t, "Keyspace", headers[len(headers)-1])
	require.Contains(t, text, "\r\n\r\n# Clients\r\n", "a blank line before each section")
	require.Contains(t, text, "# Server\r\nredis_version:"+server.RedisVersion+"\r\n")
	require.Contains(t, text, "\r\ntcp_port:"+strconv.Itoa(ts.Port)+"\r\n")
	require.Contains(t, text, "\r\nuptime_in_seconds:3600\r\n")
	require.Contains(t, text, "\r\nserver_time_usec:"+strconv.FormatInt(harness.T0.Add(time.Hour).UnixMicro(), 10)+"\r\n")
	require.Contains(t, text, "\r\nconnected_clients:1\r\n")
	// a and b expired an hour ago but nothing swept them: as in Redis, they
	// are counted until they are. avg_ttl (ms) averages the live keys.
	require.Contains(t, text, "# Keyspace\r\ndb0:keys=4,expires=4,avg_ttl=3600000\r\n")

	c2 := ts.Raw(t)
	require.Equal(t, "# Clients\r\nconnected_clients:2\r\nmaxclients:10000\r\nblocked_clients:0\r\ntracking_clients:0\r\npubsub_clients:0\r\n", bulkBody(t, c2.Do("INFO", "clients")))
	require.Equal(t, testkit.OK, c.Do("FLUSHDB"))
	require.Equal(t, "# Keyspace\r\n", bulkBody(t, c.Do("INFO", "KEYSPACE")))
	two := bulkBody(t, c.Do("INFO", "server", "keyspace"))
	require.True(t, strings.HasPrefix(two, "# Server\r\n"))
	require.True(t, strings.HasSuffix(two, "\r\n\r\n# Keyspace\r\n"))
	require.NotContains(t, two, "# Clients")

	// go-redis reads it the same under RESP3 (verbatim text) and RESP2.
	for _, proto := range []int{2, 3} {
		rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
		got, err := rdb.Info(harness.Ctx(t), "keyspace").Result()
		require.NoError(t, err)
		require.Equal(t, "# Keyspace\r\n", got)
		m, err := rdb.InfoMap(harness.Ctx(t), "server").Result()
		require.NoError(t, err)
		require.Equal(t, server.RedisVersion, m["Server"]["redis_version"])
	}
}

func TestConfigGet(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Bulks("maxmemory", "0"), c.Do("CONFIG", "GET", "maxmemory"))
	require.Equal(t, testkit.Bulks("maxmemory", "0"), c.Do("config", "get", "MAXMEMORY"))
	require.Equal(t, testkit.Bulks("maxmemory", "0", "maxmemory-clients", "268435456", "maxmemory-policy", "noeviction", "maxmemory-samples", "5"),
		c.Do("CONFIG", "GET", "maxmemory*"))
	require.Equal(t, testkit.Bulks("port", strconv.Itoa(ts.Port)), c.Do("CONFIG", "GET", "port"))
	require.Equal(t, "*0\r\n", c.Do("CONFIG", "GET", "no-such-setting"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'config|get' command"), c.Do("CONFIG", "GET"))
	require.Equal(t, "%1\r\n"+testkit.Bulk("maxmemory")+testkit.Bulk("0"), helloThen(t, c, "CONFIG", "GET", "maxmemory"), "a RESP3 map")

	rdb := ts.GoRedis(t)
	got, err := rdb.ConfigGet(harness.Ctx(t), "*").Result()
	require.NoError(t, err)
	for _, k := range []string{"maxmemory", "maxmemory-policy", "maxclients", "databases", "save", "appendonly", "timeout", "bind", "port", "dir", "cluster-enabled"} {
		require.Contains(t, got, k)
	}
	require.Equal(t, "noeviction", got["maxmemory-policy"])
	require.Equal(t, "1", got["databases"])
	require.Equal(t, "no", got["cluster-enabled"])
}

// helloThen switches c to RESP3 and sends one command.
func helloThen(t *testing.T, c *testkit.Conn, args ...string) string {
	t.Helper()
	require.Contains(t, c.Do("HELLO", "3"), "proto")
	return c.Do(args...)
}

// Unknown commands and wrong arities read exactly as Redis words them.
func TestUnknownCommandAndArity(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Err("ERR unknown command 'foo', with args beginning with: 'a' 'b' "), c.Do("foo", "a", "b"))
	require.Equal(t, testkit.Err("ERR unknown command 'FOO', with args beginning with: "), c.Do("FOO"))
	require.Equal(t, testkit.Err("ERR unknown command 'foo', with args beginning with: 'a  b' "), c.Do("foo", "a\r\nb"), "CR and LF become spaces")
	long := strings.Repeat("x", 200)
	require.Equal(t, testkit.Err("ERR unknown command 'foo', with args beginning with: '"+long[:128]+"' "), c.Do("foo", long, "next"))
	require.Equal(t, testkit.Err("ERR unknown command '"+long[:128]+"', with args beginning with: "), c.Do(long))
	require.Equal(t, testkit.Err("ERR unknown command 'cl.throttl', with args beginning with: 'k' "), c.Do("cl.throttl", "k"))

	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{"GET"}, "get"},
		{[]string{"get", "a", "b"}, "get"},
		{[]string{"TTL"}, "ttl"},
		{[]string{"PTTL", "a", "b"}, "pttl"},
		{[]string{"TYPE"}, "type"},
		{[]string{"EXISTS"}, "exists"},
		{[]string{"UNLINK"}, "unlink"},
		{[]string{"KEYS"}, "keys"},
		{[]string{"SCAN"}, "scan"},
		{[]string{"DBSIZE", "x"}, "dbsize"},
		{[]string{"SELECT", "0", "1"}, "select"},
		{[]string{"AUTH", "a", "b", "c"}, "auth"},
		{[]string{"CLIENT", "GETNAME", "x"}, "client|getname"},
		{[]string{"CLIENT", "SETINFO", "lib-name"}, "client|setinfo"},
		{[]string{"CONFIG"}, "config"},
		{[]string{"CONFIG", "GET"}, "config|get"},
	} {
		want := testkit.Err("ERR wrong number of arguments for '" + tc.name + "' command")
		require.Equal(t, want, c.Do(tc.args...), "%q", tc.args)
	}
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"), "the connection still works")

	rdb := ts.GoRedis(t)
	require.EqualError(t, rdb.Do(harness.Ctx(t), "NOSUCH", "x").Err(), "ERR unknown command 'NOSUCH', with args beginning with: 'x' ")
}

// go-redis's typed helpers parse every reply of section 2 under both
// protocols.
func TestGoRedisTypedAPI(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ts := harness.StartServer(t)
			rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
			c := harness.Ctx(t)
			require.Equal(t, "PONG", rdb.Ping(c).Val())
			require.Equal(t, "hi", rdb.Echo(c, "hi").Val())
			got, err := rdb.Do(c, "CL.THROTTLE", "k", 4, 1, 10).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, []int64{0, 5, 4, -1, 10}, got)
			require.Equal(t, int64(1), rdb.DBSize(c).Val())
			require.Equal(t, int64(1), rdb.Exists(c, "k").Val())
			require.Equal(t, 10*time.Second, rdb.TTL(c, "k").Val())
			require.Equal(t, 10*time.Second, rdb.PTTL(c, "k").Val())
			require.Equal(t, strconv.FormatInt(harness.T0.Add(10*time.Second).UnixNano(), 10), rdb.Get(c, "k").Val())
			require.Equal(t, "string", rdb.Type(c, "k").Val())
			require.Equal(t, []string{"k"}, rdb.Keys(c, "*").Val())
			require.Equal(t, int64(1), rdb.Del(c, "k").Val())
			require.Equal(t, int64(0), rdb.Unlink(c, "k").Val())
			require.Equal(t, "OK", rdb.FlushDB(c).Val())
			require.Equal(t, "OK", rdb.FlushAll(c).Val())
			require.Equal(t, map[string]string{"maxmemory": "0"}, rdb.ConfigGet(c, "maxmemory").Val())
			require.True(t, harness.T0.Equal(rdb.Time(c).Val()))
			require.Equal(t, "OK", rdb.Do(c, "SELECT", 0).Val())
		})
	}
}
