package protocol_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"redcell/server"
)

// helloReply is HELLO's reply on the wire: Redis's seven fields, as a RESP3
// map or, under RESP2, a flat array.
func helloReply(proto, id int64) string {
	fields := bulk("server") + bulk("redis") +
		bulk("version") + bulk(server.RedisVersion) +
		bulk("proto") + integer(proto) +
		bulk("id") + integer(id) +
		bulk("mode") + bulk("standalone") +
		bulk("role") + bulk("master") +
		bulk("modules") + "*0\r\n"
	if proto == 3 {
		return "%7\r\n" + fields
	}
	return "*14\r\n" + fields
}

func TestHelloRaw(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	id := int64(1) // the server's first connection
	require.Equal(t, integer(id), c.do("CLIENT", "ID"))

	require.Equal(t, helloReply(2, id), c.do("HELLO"), "HELLO without a version keeps RESP2")
	require.Equal(t, null2, c.do("GET", "absent"))

	require.Equal(t, helloReply(3, id), c.do("HELLO", "3"))
	require.Equal(t, null3, c.do("GET", "absent"), "RESP3 null after HELLO 3")
	require.Equal(t, helloReply(3, id), c.do("HELLO"), "HELLO without a version keeps RESP3")
	require.Equal(t, ints(0, 5, 4, -1, 1), c.do("CL.THROTTLE", "k", "4", "1", "1"), "the same five integers under RESP3")

	require.Equal(t, helloReply(2, id), c.do("hello", "2"))
	require.Equal(t, null2, c.do("GET", "absent"), "back to RESP2")

	require.Equal(t, errReply("NOPROTO unsupported protocol version"), c.do("HELLO", "4"))
	require.Equal(t, errReply("NOPROTO unsupported protocol version"), c.do("HELLO", "1"))
	require.Equal(t, errReply("ERR Protocol version is not an integer or out of range"), c.do("HELLO", "three"))
	require.Equal(t, errReply("ERR Syntax error in HELLO option 'FOO'"), c.do("HELLO", "3", "FOO"))
	require.Equal(t, errReply("ERR Syntax error in HELLO option 'AUTH'"), c.do("HELLO", "3", "AUTH", "default"))
	require.Equal(t, null2, c.do("GET", "absent"), "a failed HELLO changes nothing")

	require.Equal(t, helloReply(3, id), c.do("HELLO", "3", "SETNAME", "worker-1"))
	require.Equal(t, bulk("worker-1"), c.do("CLIENT", "GETNAME"))
	require.Equal(t, errReply("ERR Client names cannot contain spaces, newlines or special characters."), c.do("HELLO", "3", "SETNAME", "two words"))
	// With no password configured, HELLO's AUTH accepts any password for default.
	require.Equal(t, helloReply(2, id), c.do("HELLO", "2", "AUTH", "default", "anything"))
	require.Equal(t, errReply(errWrongPass), c.do("HELLO", "2", "AUTH", "someone", "anything"))
}

// goRedisLibName is what go-redis v9 reports with CLIENT SETINFO LIB-NAME.
func goRedisLibName() string {
	return "go-redis(," + strings.ReplaceAll(runtime.Version(), " ", "-") + ")"
}

// go-redis v9 with default options sends HELLO 3 and CLIENT SETINFO; the
// connection ends up in RESP3 with the library recorded.
func TestHandshakeGoRedisRESP3(t *testing.T) {
	ts := startServer(t)
	rdb := ts.goRedis(t)
	info, err := rdb.ClientInfo(ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, 3, info.Resp)
	require.Equal(t, goRedisLibName(), info.LibName)
	require.Equal(t, redis.Version(), info.LibVer)
	require.Equal(t, "default", info.User)

	hello, err := rdb.Do(ctx(t), "HELLO", "3").Result()
	require.NoError(t, err)
	require.Equal(t, map[any]any{
		"server": "redis", "version": server.RedisVersion, "proto": int64(3), "id": info.ID,
		"mode": "standalone", "role": "master", "modules": []any{},
	}, hello)
}

func TestHandshakeGoRedisRESP2(t *testing.T) {
	ts := startServer(t)
	rdb := ts.goRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	info, err := rdb.ClientInfo(ctx(t)).Result()
	require.NoError(t, err)
	require.Equal(t, 2, info.Resp)
	require.Equal(t, goRedisLibName(), info.LibName)

	hello, err := rdb.Do(ctx(t), "HELLO").Result()
	require.NoError(t, err)
	require.Equal(t, []any{
		"server", "redis", "version", server.RedisVersion, "proto", int64(2), "id", info.ID,
		"mode", "standalone", "role", "master", "modules", []any{},
	}, hello)
}

// rueidis sends HELLO 3 and, unless DisableCache is set, CLIENT TRACKING ON
// OPTIN. redcell refuses tracking, so a rueidis user must set DisableCache:
// NewClient fails with redcell's message and rueidis.ErrNoCache, which says
// exactly that.
func TestHandshakeRueidis(t *testing.T) {
	ts := startServer(t)

	_, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.Addr}})
	require.ErrorIs(t, err, rueidis.ErrNoCache)
	require.Equal(t, strings.TrimPrefix(errTrackingRefused, "ERR ")+": [CLIENT TRACKING ON OPTIN]\n"+rueidis.ErrNoCache.Error(), err.Error())

	c := ts.rueidis(t) // DisableCache: true
	line, err := c.Do(ctx(t), c.B().ClientInfo().Build()).ToString()
	require.NoError(t, err)
	require.Contains(t, line, " resp=3 lib-name=rueidis lib-ver="+rueidis.LibVer+"\n")
	got, err := c.Do(ctx(t), c.B().Arbitrary("CL.THROTTLE").Keys("k").Args("4", "1", "1").Build()).AsIntSlice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 1}, got)
}

// The refusal itself, on the wire: an error, and the connection goes on.
func TestClientTrackingIsRefused(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	require.Equal(t, errReply(errTrackingRefused), c.do("CLIENT", "TRACKING", "ON", "OPTIN"))
	require.Equal(t, errReply(errTrackingRefused), c.do("CLIENT", "TRACKING", "off"))
	require.Equal(t, simple("PONG"), c.do("PING"))
}

func TestHandshakeRedisCLI(t *testing.T) {
	redisCLI(t)
	ts := startServer(t)
	require.Equal(t, "PONG\n", cli(t, ts.Port, "", "PING"))
	// -3 makes redis-cli send HELLO 3 first.
	require.Equal(t, "0\n5\n4\n-1\n1\n", cli(t, ts.Port, "", "-3", "CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, "server redis\nversion "+server.RedisVersion+"\nproto 3\nid 3\nmode standalone\nrole master\nmodules \n",
		cli(t, ts.Port, "", "HELLO", "3"))
}

const password = "s3cret"

// With a password set, every command but AUTH, HELLO, QUIT and RESET is
// refused until the connection authenticates, as in Redis, and a refused
// command does nothing.
func TestAuthRequiredForEveryCommand(t *testing.T) {
	ts := startServer(t, withPassword(password))
	admin := ts.raw(t)
	require.Equal(t, ok, admin.do("AUTH", password))
	names := commandArities(t, admin)
	require.Contains(t, names, "cl.throttle")

	c := ts.raw(t)
	tried := 0
	for name, arity := range names {
		if name == "auth" || name == "hello" || name == "quit" || name == "reset" {
			continue
		}
		args := []string{strings.ToUpper(name)}
		for len(args) < max(arity, -arity) {
			args = append(args, "x")
		}
		if got := c.do(args...); got != errReply(errNoAuth) {
			t.Errorf("%q before AUTH = %q want %q", args, got, errReply(errNoAuth))
		}
		tried++
	}
	require.GreaterOrEqual(t, tried, 25)
	require.Equal(t, integer(0), admin.do("DBSIZE"), "a refused CL.THROTTLE created nothing")
	require.Equal(t, integer(0), admin.do("EXISTS", "x"))
}

// commandArities returns every command's name and arity from COMMAND.
func commandArities(t *testing.T, c *rawConn) map[string]int {
	t.Helper()
	reply := c.do("COMMAND")
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
	ts := startServer(t, withPassword(password))
	c := ts.raw(t)
	require.Equal(t, errReply(errNoAuth), c.do("PING"))
	require.Equal(t, errReply(errWrongPass), c.do("AUTH", "wrong"))
	require.Equal(t, errReply(errWrongPass), c.do("AUTH", "default", "wrong"))
	require.Equal(t, errReply(errWrongPass), c.do("AUTH", "someone", password))
	require.Equal(t, errReply("ERR wrong number of arguments for 'auth' command"), c.do("AUTH"))
	require.Equal(t, errReply(errHelloNoAuth), c.do("HELLO", "3"))
	require.Equal(t, errReply(errWrongPass), c.do("HELLO", "3", "AUTH", "default", "wrong"))
	require.Equal(t, errReply(errNoAuth), c.do("CL.THROTTLE", "k", "4", "1", "1"), "failed attempts leave the connection unauthenticated")

	require.Equal(t, ok, c.do("AUTH", password))
	require.Equal(t, null2, c.do("GET", "absent"), "the failed HELLOs did not switch to RESP3")
	require.Equal(t, simple("PONG"), c.do("PING"))
	require.Equal(t, ints(0, 5, 4, -1, 1), c.do("CL.THROTTLE", "k", "4", "1", "1"))

	// AUTH default <password>, and HELLO 3 AUTH, on fresh connections.
	c2 := ts.raw(t)
	require.Equal(t, ok, c2.do("AUTH", "default", password))
	require.Equal(t, ints(0, 5, 3, -1, 2), c2.do("CL.THROTTLE", "k", "4", "1", "1"))
	c3 := ts.raw(t)
	require.Equal(t, helloReply(3, 3), c3.do("HELLO", "3", "AUTH", "default", password, "SETNAME", "c3"))
	require.Equal(t, ints(0, 5, 2, -1, 3), c3.do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, bulk("c3"), c3.do("CLIENT", "GETNAME"))

	// QUIT works before AUTH.
	c4 := ts.raw(t)
	require.Equal(t, ok, c4.do("QUIT"))
	c4.expectClosed()
}

func TestAuthGoRedis(t *testing.T) {
	ts := startServer(t, withPassword(password))
	for _, proto := range []int{2, 3} {
		rdb := ts.goRedis(t, func(o *redis.Options) { o.Password = password; o.Protocol = proto })
		got, err := rdb.Do(ctx(t), "CL.THROTTLE", "k"+strconv.Itoa(proto), 4, 1, 1).Int64Slice()
		require.NoError(t, err, "RESP%d", proto)
		require.Equal(t, []int64{0, 5, 4, -1, 1}, got)
		info, err := rdb.ClientInfo(ctx(t)).Result()
		require.NoError(t, err)
		require.Equal(t, proto, info.Resp)
	}

	// Without the password go-redis connects, and every command reports NOAUTH.
	rdb := ts.goRedis(t)
	err := rdb.Do(ctx(t), "CL.THROTTLE", "k", 4, 1, 1).Err()
	var rerr redis.Error
	require.True(t, errors.As(err, &rerr), "%v", err)
	require.Equal(t, errNoAuth, err.Error())

	// A wrong password is WRONGPASS.
	rdb = ts.goRedis(t, func(o *redis.Options) { o.Password = "wrong" })
	err = rdb.Ping(ctx(t)).Err()
	require.ErrorContains(t, err, errWrongPass)
}

func TestAuthRueidis(t *testing.T) {
	ts := startServer(t, withPassword(password))
	c := ts.rueidis(t, func(o *rueidis.ClientOption) { o.Password = password })
	got, err := c.Do(ctx(t), c.B().Arbitrary("CL.THROTTLE").Keys("k").Args("4", "1", "1").Build()).AsIntSlice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 1}, got)

	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.Addr}, DisableCache: true, Password: "wrong"})
	require.ErrorContains(t, err, errWrongPass)
}

func TestAuthRedisCLI(t *testing.T) {
	redisCLI(t)
	ts := startServer(t, withPassword(password))
	require.Equal(t, errNoAuth+"\n\n", cli(t, ts.Port, "", "CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, "0\n5\n4\n-1\n1\n", cli(t, ts.Port, "", "-a", password, "--no-auth-warning", "CL.THROTTLE", "k", "4", "1", "1"))
}

// Without a configured password AUTH <password> is an error, as in Redis,
// while AUTH default <anything> succeeds.
func TestAuthWithoutPasswordConfigured(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	require.Equal(t, errReply(errAuthNoPassword), c.do("AUTH", "anything"))
	require.Equal(t, ok, c.do("AUTH", "default", "anything"))
	require.Equal(t, errReply(errWrongPass), c.do("AUTH", "someone", "anything"))
	require.Equal(t, simple("PONG"), c.do("PING"))
}
