package protocol_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// helloReply is HELLO's reply on the wire: Redis's seven fields, as a RESP3
// map or, under RESP2, a flat array.
func helloReply(proto, id int64) string {
	fields := testkit.Bulk("server") + testkit.Bulk("redis") +
		testkit.Bulk("version") + testkit.Bulk(server.RedisVersion) +
		testkit.Bulk("proto") + testkit.Int(proto) +
		testkit.Bulk("id") + testkit.Int(id) +
		testkit.Bulk("mode") + testkit.Bulk("standalone") +
		testkit.Bulk("role") + testkit.Bulk("master") +
		testkit.Bulk("modules") + "*0\r\n"
	if proto == 3 {
		return "%7\r\n" + fields
	}
	return "*14\r\n" + fields
}

func TestHelloRaw(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	id := int64(1) // the server's first connection
	require.Equal(t, testkit.Int(id), c.Do("CLIENT", "ID"))

	require.Equal(t, helloReply(2, id), c.Do("HELLO"), "HELLO without a version keeps RESP2")
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"))

	require.Equal(t, helloReply(3, id), c.Do("HELLO", "3"))
	require.Equal(t, testkit.Null3, c.Do("GET", "absent"), "RESP3 null after HELLO 3")
	require.Equal(t, helloReply(3, id), c.Do("HELLO"), "HELLO without a version keeps RESP3")
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "the same five integers under RESP3")

	require.Equal(t, helloReply(2, id), c.Do("hello", "2"))
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"), "back to RESP2")

	require.Equal(t, testkit.Err("NOPROTO unsupported protocol version"), c.Do("HELLO", "4"))
	require.Equal(t, testkit.Err("NOPROTO unsupported protocol version"), c.Do("HELLO", "1"))
	require.Equal(t, testkit.Err("ERR Protocol version is not an integer or out of range"), c.Do("HELLO", "three"))
	require.Equal(t, testkit.Err("ERR Syntax error in HELLO option 'FOO'"), c.Do("HELLO", "3", "FOO"))
	require.Equal(t, testkit.Err("ERR Syntax error in HELLO option 'AUTH'"), c.Do("HELLO", "3", "AUTH", "default"))
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"), "a failed HELLO changes nothing")

	require.Equal(t, helloReply(3, id), c.Do("HELLO", "3", "SETNAME", "worker-1"))
	require.Equal(t, testkit.Bulk("worker-1"), c.Do("CLIENT", "GETNAME"))
	require.Equal(t, testkit.Err("ERR Client names cannot contain spaces, newlines or special characters."), c.Do("HELLO", "3", "SETNAME", "two words"))
	// With no password configured, HELLO's AUTH accepts any password for default.
	require.Equal(t, helloReply(2, id), c.Do("HELLO", "2", "AUTH", "default", "anything"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("HELLO", "2", "AUTH", "someone", "anything"))
}

// goRedisLibName is what go-redis v9 reports with CLIENT SETINFO LIB-NAME.
func goRedisLibName() string {
	return "go-redis(," + strings.ReplaceAll(runtime.Version(), " ", "-") + ")"
}

// go-redis v9 with default options sends HELLO 3 and CLIENT SETINFO; the
// connection ends up in RESP3 with the library recorded.
func TestHandshakeGoRedisRESP3(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	info, err := rdb.ClientInfo(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, 3, info.Resp)
	require.Equal(t, goRedisLibName(), info.LibName)
	require.Equal(t, redis.Version(), info.LibVer)
	require.Equal(t, "default", info.User)

	hello, err := rdb.Do(harness.Ctx(t), "HELLO", "3").Result()
	require.NoError(t, err)
	require.Equal(t, map[any]any{
		"server": "redis", "version": server.RedisVersion, "proto": int64(3), "id": info.ID,
		"mode": "standalone", "role": "master", "modules": []any{},
	}, hello)
}

func TestHandshakeGoRedisRESP2(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	info, err := rdb.ClientInfo(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, 2, info.Resp)
	require.Equal(t, goRedisLibName(), info.LibName)

	hello, err := rdb.Do(harness.Ctx(t), "HELLO").Result()
	require.NoError(t, err)
	require.Equal(t, []any{
		"server", "redis", "version", server.RedisVersion, "proto", int64(2), "id", info.ID,
		"mode", "standalone", "role", "master", "modules", []any{},
	}, hello)
}

// rueidis sends HELLO 3 and, unless DisableCache is set, CLIENT TRACKING ON
// OPTIN: both handshakes work (its client-side caching itself:
// TestRueidisClientSideCaching).
func TestHandshakeRueidis(t *testing.T) {
	ts := harness.StartServer(t)
	for _, disableCache := range []bool{false, true} {
		c := ts.Rueidis(t, func(o *rueidis.ClientOption) { o.DisableCache = disableCache })
		line, err := c.Do(harness.Ctx(t), c.B().ClientInfo().Build()).ToString()
		require.NoError(t, err)
		require.Contains(t, line, " resp=3 lib-name=rueidis lib-ver="+rueidis.LibVer+"\n")
		if !disableCache {
			require.Contains(t, line, " flags=t ", "tracking")
		}
		got, err := c.Do(harness.Ctx(t), c.B().Arbitrary("CL.THROTTLE").Keys("k").Args("4", "1", "1").Build()).AsIntSlice()
		require.NoError(t, err)
		require.Len(t, got, 5)
	}
}

func TestHandshakeRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t)
	require.Equal(t, "PONG\n", harness.CLI(t, ts.Port, "", "PING"))
	// -3 makes redis-cli send HELLO 3 first.
	require.Equal(t, "0\n5\n4\n-1\n1\n", harness.CLI(t, ts.Port, "", "-3", "CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, "server redis\nversion "+server.RedisVersion+"\nproto 3\nid 3\nmode standalone\nrole master\nmodules \n",
		harness.CLI(t, ts.Port, "", "HELLO", "3"))
}

const password = "s3cret"

// With a password set, every command but AUTH, HELLO, QUIT and RESET is
// refused until the connection authenticates, as in Redis, and a refused
// command does nothing.
func TestAuthRequiredForEveryCommand(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword(password))
	admin := ts.Raw(t)
	require.Equal(t, testkit.OK, admin.Do("AUTH", password))
	names := commandArities(t, admin)
	require.Contains(t, names, "cl.throttle")

	c := ts.Raw(t)
	tried := 0
	for name, arity := range names {
		if name == "auth" || name == "hello" || name == "quit" || name == "reset" {
			continue
		}
		args := []string{strings.ToUpper(name)}
		for len(args) < max(arity, -arity) {
			args = append(args, "x")
		}
		if got := c.Do(args...); got != testkit.Err(errNoAuth) {
			t.Errorf("%q before AUTH = %q want %q", args, got, testkit.Err(errNoAuth))
		}
		tried++
	}
	require.GreaterOrEqual(t, tried, 25)
	require.Equal(t, testkit.Int(0), admin.Do("DBSIZE"), "a refused CL.THROTTLE created nothing")
	require.Equal(t, testkit.Int(0), admin.Do("EXISTS", "x"))
}

// commandArities returns every command's name and arity from COMMAND.
func commandArities(t *testing.T, c *testkit.Conn) map[string]int {
	t.Helper()
	reply := c.Do("COMMAND")
	// Each entry starts "*10\r\n$<n>\r\n<name>\r\n:<arity>\r\n".
	out := map[string]int{}
	parts := strings.Split(reply, "*10\r\n")
	for _, p := range parts[1:] {
		lines := strings.Split(p, "\r\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[2], ":") || strings.Contains(lines[1], "|") {
			continue
		}
		arity, err := strconv.Atoi(lines[2][1:])
		require.NoError(t, err)
		out[lines[1]] = arity
	}
	return out
}

func TestAuthRaw(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword(password))
	c := ts.Raw(t)
	require.Equal(t, testkit.Err(errNoAuth), c.Do("PING"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("AUTH", "wrong"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("AUTH", "default", "wrong"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("AUTH", "someone", password))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'auth' command"), c.Do("AUTH"))
	require.Equal(t, testkit.Err(errHelloNoAuth), c.Do("HELLO", "3"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("HELLO", "3", "AUTH", "default", "wrong"))
	require.Equal(t, testkit.Err(errNoAuth), c.Do("CL.THROTTLE", "k", "4", "1", "1"), "failed attempts leave the connection unauthenticated")

	require.Equal(t, testkit.OK, c.Do("AUTH", password))
	require.Equal(t, testkit.Null2, c.Do("GET", "absent"), "the failed HELLOs did not switch to RESP3")
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))

	// AUTH default <password>, and HELLO 3 AUTH, on fresh connections.
	c2 := ts.Raw(t)
	require.Equal(t, testkit.OK, c2.Do("AUTH", "default", password))
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 2), c2.Do("CL.THROTTLE", "k", "4", "1", "1"))
	c3 := ts.Raw(t)
	require.Equal(t, helloReply(3, 3), c3.Do("HELLO", "3", "AUTH", "default", password, "SETNAME", "c3"))
	require.Equal(t, testkit.Ints(0, 5, 2, -1, 3), c3.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Bulk("c3"), c3.Do("CLIENT", "GETNAME"))

	// QUIT works before AUTH.
	c4 := ts.Raw(t)
	require.Equal(t, testkit.OK, c4.Do("QUIT"))
	c4.ExpectClosed()
}

func TestAuthGoRedis(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword(password))
	for _, proto := range []int{2, 3} {
		rdb := ts.GoRedis(t, func(o *redis.Options) { o.Password = password; o.Protocol = proto })
		got, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k"+strconv.Itoa(proto), 4, 1, 1).Int64Slice()
		require.NoError(t, err, "RESP%d", proto)
		require.Equal(t, []int64{0, 5, 4, -1, 1}, got)
		info, err := rdb.ClientInfo(harness.Ctx(t)).Result()
		require.NoError(t, err)
		require.Equal(t, proto, info.Resp)
	}

	// Without the password go-redis connects, and every command reports NOAUTH.
	rdb := ts.GoRedis(t)
	err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 1).Err()
	var rerr redis.Error
	require.True(t, errors.As(err, &rerr), "%v", err)
	require.Equal(t, errNoAuth, err.Error())

	// A wrong password is WRONGPASS.
	rdb = ts.GoRedis(t, func(o *redis.Options) { o.Password = "wrong" })
	err = rdb.Ping(harness.Ctx(t)).Err()
	require.ErrorContains(t, err, errWrongPass)
}

func TestAuthRueidis(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword(password))
	c := ts.Rueidis(t, func(o *rueidis.ClientOption) { o.Password = password })
	got, err := c.Do(harness.Ctx(t), c.B().Arbitrary("CL.THROTTLE").Keys("k").Args("4", "1", "1").Build()).AsIntSlice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 1}, got)

	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.Addr}, DisableCache: true, Password: "wrong"})
	require.ErrorContains(t, err, errWrongPass)
}

func TestAuthRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t, harness.WithPassword(password))
	require.Equal(t, errNoAuth+"\n\n", harness.CLI(t, ts.Port, "", "CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, "0\n5\n4\n-1\n1\n", harness.CLI(t, ts.Port, "", "-a", password, "--no-auth-warning", "CL.THROTTLE", "k", "4", "1", "1"))
}

// Without a configured password AUTH <password> is an error, as in Redis,
// while AUTH default <anything> succeeds.
func TestAuthWithoutPasswordConfigured(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Err(errAuthNoPassword), c.Do("AUTH", "anything"))
	require.Equal(t, testkit.OK, c.Do("AUTH", "default", "anything"))
	require.Equal(t, testkit.Err(errWrongPass), c.Do("AUTH", "someone", "anything"))
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
}
