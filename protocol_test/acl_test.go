package protocol_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// Redis 7's ACLs as applications and operators meet them: a user for the
// application allowed CL.THROTTLE on its own prefix, through go-redis's
// Username and redis-cli --user; the refusals in Redis's words; a deleted
// user's connections closed; a subscriber whose channels are taken away
// disconnected.

// appUser makes docs/security.md's application user over admin's connection:
// it may decide on keys of its prefix, and nothing else but PING and the
// CLIENT SETINFO go-redis sends as it connects (refused, it would fill the
// ACL LOG).
func appUser(t *testing.T, admin *testkit.Conn) {
	t.Helper()
	require.Equal(t, testkit.OK, admin.Do("ACL", "SETUSER", "app", "on", ">app-secret", "resetkeys", "~rl:app:*", "-@all",
		"+cl.throttle", "+ping", "+client|setinfo"))
}

// go-redis with Username and Password, its default RESP3 handshake (HELLO 3
// AUTH app ...) and RESP2's (AUTH app ...): the user decides on its keys,
// and is refused everything else in Redis's words.
func TestGoRedisWithUsername(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword("admin-secret"))
	admin := ts.Raw(t)
	require.Equal(t, testkit.OK, admin.Do("AUTH", "admin-secret"))
	require.Equal(t, testkit.OK, admin.Do("ACL", "SETUSER", "app", "on", ">app-secret", "~rl:app:*", "+cl.throttle", "+ping"))
	for _, proto := range []int{3, 2} {
		rdb := ts.GoRedis(t, func(o *redis.Options) { o.Username, o.Password, o.Protocol = "app", "app-secret", proto })
		c := harness.Ctx(t)
		key := "rl:app:" + strconv.Itoa(proto)
		res, err := rdb.Do(c, "CL.THROTTLE", key, 15, 30, 60).Int64Slice()
		require.NoError(t, err, "RESP%d", proto)
		require.Equal(t, []int64{0, 16, 15, -1, 2}, res)
		_, err = rdb.Do(c, "CL.THROTTLE", "rl:other:1", 15, 30, 60).Result()
		require.EqualError(t, err, "NOPERM No permissions to access a key")
		require.EqualError(t, rdb.FlushAll(c).Err(), "NOPERM User app has no permissions to run the 'flushall' command")
		require.EqualError(t, rdb.Do(c, "CONFIG", "SET", "masterauth", "x").Err(), "NOPERM User app has no permissions to run the 'config|set' command")
		require.EqualError(t, rdb.Do(c, "REPLICAOF", "10.0.0.1", "6379").Err(), "NOPERM User app has no permissions to run the 'replicaof' command")
		require.EqualError(t, rdb.Do(c, "CLUSTERX", "SETNODES", "x", "1").Err(), "NOPERM User app has no permissions to run the 'clusterx|setnodes' command")
	}
	wrong := ts.GoRedis(t, func(o *redis.Options) { o.Username, o.Password = "app", "nope" })
	require.EqualError(t, wrong.Ping(harness.Ctx(t)).Err(), "WRONGPASS invalid username-password pair or user is disabled.")

	log := admin.Do("ACL", "LOG", "3")
	require.Contains(t, log, testkit.Bulk("reason")+testkit.Bulk("auth"))
	require.Contains(t, log, testkit.Bulk("object")+testkit.Bulk("clusterx|setnodes"))
	require.Contains(t, admin.Do("CLIENT", "LIST"), " user=app ")
}

// redis-cli --user u --pass p, and AUTH u p in a session, as operators
// type them.
func TestRedisCLIWithUser(t *testing.T) {
	ts := harness.StartServer(t, harness.WithPassword("admin-secret"))
	admin := ts.Raw(t)
	require.Equal(t, testkit.OK, admin.Do("AUTH", "admin-secret"))
	appUser(t, admin)
	out := harness.CLI(t, ts.Port, "", "--no-auth-warning", "--user", "app", "--pass", "app-secret", "CL.THROTTLE", "rl:app:1", "15", "30", "60")
	require.Equal(t, "0\n16\n15\n-1\n2\n", out)
	out = harness.CLI(t, ts.Port, "", "--no-auth-warning", "--user", "app", "--pass", "app-secret", "FLUSHALL")
	require.Equal(t, "NOPERM User app has no permissions to run the 'flushall' command\n\n", out, "redis-cli prints an error and a blank line")
	out = harness.CLI(t, ts.Port, "", "--no-auth-warning", "--user", "app", "--pass", "app-secret", "CL.THROTTLE", "rl:other", "15", "30", "60")
	require.Equal(t, "NOPERM No permissions to access a key\n\n", out)
	out = harness.CLI(t, ts.Port, "AUTH app app-secret\nACL WHOAMI\nPING\n")
	require.Equal(t, "OK\nNOPERM User app has no permissions to run the 'acl|whoami' command\n\nPONG\n", out)
	_, stderr, err := harness.RunCLI(harness.RedisCLI(t), ts.Port, "", "--no-auth-warning", "--user", "admin", "--pass", "admin-secret", "PING")
	require.NoError(t, err)
	require.Equal(t, "AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\n", stderr, "no user admin")
	out = harness.CLI(t, ts.Port, "", "--no-auth-warning", "--user", "default", "--pass", "admin-secret", "ACL", "WHOAMI")
	require.Equal(t, "default\n", out)
}

// A user deleted, or turned off, has its connections closed at once:
// its client's next command fails; others go on.
func TestDeletedUsersConnectionsAreClosed(t *testing.T) {
	ts := harness.StartServer(t)
	admin := ts.Raw(t)
	appUser(t, admin)
	app := ts.Raw(t)
	require.Equal(t, testkit.OK, app.Do("AUTH", "app", "app-secret"))
	require.Equal(t, testkit.Simple("PONG"), app.Do("PING"))
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.Username, o.Password, o.MaxRetries = "app", "app-secret", -1 })
	require.NoError(t, rdb.Ping(harness.Ctx(t)).Err())
	other := ts.Raw(t)

	require.Equal(t, testkit.Int(1), admin.Do("ACL", "DELUSER", "app"))
	app.ExpectClosed()
	require.Error(t, rdb.Ping(harness.Ctx(t)).Err(), "go-redis's pooled connection was closed")
	require.Equal(t, testkit.Simple("PONG"), other.Do("PING"), "the default user's connection goes on")
	require.Equal(t, testkit.Err(errWrongPass), ts.Raw(t).Do("AUTH", "app", "app-secret"), "and the user is gone")
	require.NotContains(t, admin.Do("CLIENT", "LIST"), "user=app")

	// Turned off: the same (Redis keeps a disabled user's connections;
	// redcell closes them, see docs/security.md).
	appUser(t, admin)
	app = ts.Raw(t)
	require.Equal(t, testkit.OK, app.Do("AUTH", "app", "app-secret"))
	require.Equal(t, testkit.OK, admin.Do("ACL", "SETUSER", "app", "off"))
	app.ExpectClosed()
}

// A subscriber whose user loses the channel it listens to is disconnected,
// as Redis does; one whose channels are still allowed stays.
func TestSubscriberDisconnectedWhenItsChannelIsRevoked(t *testing.T) {
	ts := harness.StartServer(t)
	admin := ts.Raw(t)
	require.Equal(t, testkit.OK, admin.Do("ACL", "SETUSER", "sub", "on", "nopass", "+@pubsub", "+auth", "resetchannels", "&news.*", "&alerts"))
	news, alerts := ts.Raw(t), ts.Raw(t)
	require.Equal(t, testkit.OK, news.Do("AUTH", "sub", "x"))
	require.Equal(t, testkit.OK, alerts.Do("AUTH", "sub", "x"))
	require.Equal(t, "*3\r\n"+testkit.Bulk("subscribe")+testkit.Bulk("news.eu")+testkit.Int(1), news.Do("SUBSCRIBE", "news.eu"))
	require.Equal(t, "*3\r\n"+testkit.Bulk("psubscribe")+testkit.Bulk("alerts")+testkit.Int(1), alerts.Do("PSUBSCRIBE", "alerts"))
	require.Equal(t, testkit.Err("NOPERM No permissions to access a channel"), alerts.Do("PSUBSCRIBE", "news.e*"))

	require.Equal(t, testkit.OK, admin.Do("ACL", "SETUSER", "sub", "resetchannels", "&alerts"))
	news.ExpectClosed()
	require.Equal(t, testkit.Int(1), admin.Do("PUBLISH", "alerts", "hello"))
	require.Equal(t, "*4\r\n"+testkit.Bulk("pmessage")+testkit.Bulk("alerts")+testkit.Bulk("alerts")+testkit.Bulk("hello"), alerts.Read())
}

// ACL LOG through go-redis, as an operator reads it: the fields Redis 7.2
// gives each entry.
func TestACLLogFields(t *testing.T) {
	ts := harness.StartServer(t)
	appUser(t, ts.Raw(t))
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.Username, o.Password = "app", "app-secret" })
	c := harness.Ctx(t)
	for i := 0; i < 3; i++ {
		require.Error(t, rdb.Do(c, "CL.THROTTLE", "rl:elsewhere", 1, 1, 1).Err())
	}
	admin := ts.GoRedis(t)
	entries, err := admin.Do(c, "ACL", "LOG").Slice()
	require.NoError(t, err)
	require.Len(t, entries, 1, "three alike refusals, one entry")
	e := entries[0].(map[any]any)
	var keys []string
	for k := range e {
		keys = append(keys, k.(string))
	}
	require.ElementsMatch(t, []string{"count", "reason", "context", "object", "username", "age-seconds", "client-info",
		"entry-id", "timestamp-created", "timestamp-last-updated"}, keys)
	require.Equal(t, int64(3), e["count"])
	require.Equal(t, "key", e["reason"])
	require.Equal(t, "toplevel", e["context"])
	require.Equal(t, "rl:elsewhere", e["object"])
	require.Equal(t, "app", e["username"])
	require.Equal(t, float64(0), e["age-seconds"], "the manual clock did not move")
	require.Contains(t, e["client-info"], " user=app ")
	require.Contains(t, e["client-info"], " cmd=cl.throttle ")
	require.Equal(t, harness.T0.UnixMilli(), e["timestamp-created"])

	ts.Clock.Advance(1500 * time.Millisecond)
	entries, err = admin.Do(c, "ACL", "LOG").Slice()
	require.NoError(t, err)
	require.Equal(t, 1.5, entries[0].(map[any]any)["age-seconds"])
	require.NoError(t, admin.Do(c, "ACL", "LOG", "RESET").Err())
	require.Empty(t, admin.Do(c, "ACL", "LOG").Val())
}

// Every command of the table a user's +@category names is one ACL CAT
// lists for it, and what redis-cli's ACL CAT shows: the limiters are @write
// and @fast, CLUSTERX and the cluster's admin commands @admin @dangerous.
func TestACLCategoriesOfRedcellsCommands(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	c := harness.Ctx(t)
	cat := func(name string) []string {
		v, err := rdb.Do(c, "ACL", "CAT", name).StringSlice()
		require.NoError(t, err)
		return v
	}
	for _, cmd := range []string{"cl.throttle", "cl.window", "cl.reserve", "gcra"} {
		require.Contains(t, cat("write"), cmd)
		require.Contains(t, cat("fast"), cmd)
		require.NotContains(t, cat("read"), cmd)
	}
	for _, cmd := range []string{"clusterx|setnodes", "clusterx|migrate", "cluster|failover", "flushall", "replicaof", "config|set", "shutdown", "acl|setuser"} {
		require.Contains(t, cat("dangerous"), cmd)
	}
	require.Contains(t, cat("admin"), "clusterx|import")
	info, err := rdb.Do(c, "COMMAND", "INFO", "cl.throttle").Slice()
	require.NoError(t, err)
	require.Equal(t, []any{"@write", "@fast"}, info[0].([]any)[6])
	require.EqualError(t, rdb.Do(c, "ACL", "CAT", "nosuch").Err(), "ERR Unknown category 'nosuch'")
}

// COMMAND INFO's categories of every command and subcommand both serve are
// the installed redis-server's: what a user's +@category allows there it
// allows here. SLOWLOG and LATENCY are one @admin command each here, where
// Redis's are containers. Needs redis-server.
func TestACLCategoriesAsRedisServer(t *testing.T) {
	real := harness.StartRedisServer(t).Raw(t)
	ours := harness.StartServer(t).Raw(t)
	compared := 0
	for _, name := range testkit.BulkList(t, ours.Do("COMMAND", "LIST")) {
		if name == "slowlog" || name == "latency" {
			continue
		}
		want := real.DoReply("COMMAND", "INFO", name).Elems[0]
		if want.Kind != '*' {
			continue // redcell's own
		}
		got := ours.DoReply("COMMAND", "INFO", name).Elems[0]
		require.Equal(t, want.Elems[6].String(), got.Elems[6].String(), "%s: ACL categories", name)
		theirs := map[string]string{}
		for _, sub := range want.Elems[9].Elems {
			theirs[sub.Elems[0].Text] = sub.Elems[6].String()
		}
		for _, sub := range got.Elems[9].Elems {
			if cats, ok := theirs[sub.Elems[0].Text]; ok { // a later Redis's subcommand (CLIENT SETINFO) is not there
				require.Equal(t, cats, sub.Elems[6].String(), "%s: ACL categories", sub.Elems[0].Text)
				compared++
			}
		}
		compared++
	}
	require.Greater(t, compared, 50, "commands both serve")
}
