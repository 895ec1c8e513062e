package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// connect opens another connection to tc's server.
func (tc *testClient) connect(t testing.TB) *testClient {
	t.Helper()
	conn := newFakeConn()
	require.True(t, tc.srv.acceptFake(conn))
	return &testClient{srv: tc.srv, conn: conn, c: conn.client()}
}

func bulk(s string) string { return "$" + itoa(int64(len(s))) + "\r\n" + s + "\r\n" }

func wireErr(s string) string { return "-" + s + "\r\n" }

const ok = "+OK\r\n"

// An application user allowed CL.THROTTLE on its own prefix: what it may
// do, and each refusal in Redis 7.2's words.
func TestACLApplicationUser(t *testing.T) {
	admin := newTestClient(t, Config{})
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "on", ">secret", "~app:*", "+cl.throttle", "+ping"))
	app := admin.connect(t)
	require.Equal(t, "+PONG\r\n", app.do("PING"), "a connection starts as the default user")

	require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), app.do("AUTH", "app", "wrong"))
	require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), app.do("AUTH", "nobody", "secret"))
	require.Equal(t, ok, app.do("AUTH", "app", "secret"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'acl|whoami' command"), app.do("ACL", "WHOAMI"))
	require.Equal(t, testkit.Ints(0, 101, 100, -1, 1), app.do("CL.THROTTLE", "app:1", "100", "10", "1"))
	require.Equal(t, testkit.Ints(0, 101, 100, -1, 1), app.do("CL.THROTTLE", "app:1", "100", "10", "1", "0"), "a peek")
	require.Equal(t, wireErr("NOPERM No permissions to access a key"), app.do("CL.THROTTLE", "other:1", "100", "10", "1"))
	require.Equal(t, wireErr("NOPERM No permissions to access a key"), app.do("CL.THROTTLE", "other:1", "100", "10", "1", "0"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'flushall' command"), app.do("FLUSHALL"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'del' command"), app.do("DEL", "app:1"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'replicaof' command"), app.do("REPLICAOF", "10.0.0.1", "6379"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'client|kill' command"), app.do("CLIENT", "KILL", "ID", "1"))
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'publish' command"), app.do("PUBLISH", "c", "m"))
	// Arity and unknown subcommands are answered before the rules, as Redis.
	require.Equal(t, wireErr("ERR wrong number of arguments for 'flushall' command"), app.do("FLUSHALL", "a", "b", "c"))
	require.Equal(t, wireErr("ERR unknown subcommand 'NOPE'. Try CLIENT HELP."), app.do("CLIENT", "NOPE"))

	require.Contains(t, admin.do("CLIENT", "LIST"), " user=app ")
	require.Equal(t, testkit.Ints(0, 101, 99, -1, 1), admin.do("CL.THROTTLE", "app:1", "100", "10", "1"), "the default user may do anything")

	// The refused and the allowed are counted apart.
	info := admin.do("INFO", "stats")
	require.Contains(t, info, "acl_access_denied_auth:2\r\n")
	require.Contains(t, info, "acl_access_denied_cmd:6\r\n")
	require.Contains(t, info, "acl_access_denied_key:2\r\n")
	require.Contains(t, admin.do("INFO", "errorstats"), "errorstat_NOPERM:count=8")
}

// Key patterns by access: %R~ reads, %W~ writes, ~ both; every key of a
// command is checked.
func TestACLKeyPatterns(t *testing.T) {
	admin := newTestClient(t, Config{})
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "u", "on", "nopass", "+@all", "%R~r:*", "%W~w:*", "~rw:*"))
	u := admin.connect(t)
	require.Equal(t, ok, u.do("AUTH", "u", "x"))
	noKey := wireErr("NOPERM No permissions to access a key")
	require.Equal(t, "$-1\r\n", u.do("GET", "r:1"))
	require.Equal(t, noKey, u.do("GET", "w:1"))
	require.Equal(t, ":0\r\n", u.do("DEL", "w:1"))
	require.Equal(t, noKey, u.do("DEL", "r:1"))
	require.Equal(t, noKey, u.do("DEL", "w:1", "rw:1", "x"))
	require.Equal(t, ":0\r\n", u.do("EXISTS", "w:1", "r:1"), "EXISTS reads no value: any pattern matching the key allows it")
	require.Equal(t, noKey, u.do("CL.THROTTLE", "r:1", "1", "1", "1"), "a limiter reads and writes its key")
	require.Equal(t, noKey, u.do("CL.THROTTLE", "w:1", "1", "1", "1"))
	require.Equal(t, testkit.Ints(0, 2, 1, -1, 1), u.do("CL.THROTTLE", "rw:1", "1", "1", "1"))
	require.Equal(t, noKey, u.do("GCRA", "w:1", "1", "1", "1"))
	require.Equal(t, noKey, u.do("CL.WINDOW", "r:1", "1", "1"))
	require.Equal(t, noKey, u.do("CL.RESERVE", "r:1", "1", "1", "1"))
	require.Contains(t, u.do("KEYS", "*"), "*", "KEYS names no key: the command alone is checked, as in Redis")

	// The log names the key refused, the last one checked.
	log := admin.do("ACL", "LOG", "1")
	require.Contains(t, log, bulk("reason")+bulk("key"))
	require.Contains(t, log, bulk("object")+bulk("r:1"))
}

// Channel patterns: PUBLISH and SUBSCRIBE match them, PSUBSCRIBE's
// pattern must equal one.
func TestACLChannels(t *testing.T) {
	admin := newTestClient(t, Config{})
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*", "resetchannels", "&news.*"))
	u := admin.connect(t)
	require.Equal(t, ok, u.do("AUTH", "u", "x"))
	noChan := wireErr("NOPERM No permissions to access a channel")
	require.Equal(t, ":0\r\n", u.do("PUBLISH", "news.eu", "m"))
	require.Equal(t, noChan, u.do("PUBLISH", "other", "m"))
	require.Equal(t, noChan, u.do("SPUBLISH", "other", "m"))
	require.Equal(t, noChan, u.do("SUBSCRIBE", "news.eu", "other"))
	require.Equal(t, noChan, u.do("PSUBSCRIBE", "news.e*"))
	require.Equal(t, noChan, u.do("SSUBSCRIBE", "other"))
	// An allowed subscription reaches the handler (which needs a network).
	require.Equal(t, wireErr("ERR PSUBSCRIBE needs a network connection"), u.do("PSUBSCRIBE", "news.*"))
}

// ACL LOG: Redis 7.2's ten fields, alike refusals counted in one entry,
// MULTI's context, failed authentications, COUNT and RESET.
func TestACLLog(t *testing.T) {
	var now time.Time = t0
	tc := newTestClient(t, Config{Now: func() time.Time { return now }})
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", ">pw", "+ping", "+multi", "+exec", "~*"))
	app := tc.connect(t)
	require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), app.do("auth", "app", "nope"))
	require.Equal(t, ok, app.do("AUTH", "app", "pw"))
	app.do("FLUSHALL")
	now = now.Add(1500 * time.Millisecond)
	app.do("FLUSHALL")
	app.do("MULTI")
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'get' command"), app.do("GET", "k"))
	require.Equal(t, wireErr("EXECABORT Transaction discarded because of previous errors."), app.do("EXEC"))
	now = now.Add(500 * time.Millisecond)

	got := tc.do("ACL", "LOG")
	id := regexp.MustCompile(`id=\d+ `)
	clientInfo := id.ReplaceAllString(app.c.info(now), "id=X ")
	entry := func(count int, reason, ctx, object, user string, age string, infoCmd string, entryID, created, updated int64) string {
		info := strings.Replace(clientInfo, " cmd=exec ", " cmd="+infoCmd+" ", 1)
		if reason == "auth" { // refused before it authenticated: the default user's
			info = strings.Replace(info, " user=app ", " user=default ", 1)
		}
		return "*20\r\n" + bulk("count") + ":" + itoa(int64(count)) + "\r\n" + bulk("reason") + bulk(reason) +
			bulk("context") + bulk(ctx) + bulk("object") + bulk(object) + bulk("username") + bulk(user) +
			bulk("age-seconds") + bulk(age) + bulk("client-info") + bulk(info) +
			bulk("entry-id") + ":" + itoa(entryID) + "\r\n" + bulk("timestamp-created") + ":" + itoa(created) + "\r\n" +
			bulk("timestamp-last-updated") + ":" + itoa(updated) + "\r\n"
	}
	ms := t0.UnixMilli()
	// Client info lines vary by when they were taken (idle=, age=): blank
	// the IDs and compare the rest by shape.
	want := "*3\r\n" +
		entry(1, "command", "multi", "get", "app", "0.5", "get", 2, ms+1500, ms+1500) +
		entry(2, "command", "toplevel", "flushall", "app", "0.5", "flushall", 1, ms, ms+1500) +
		entry(1, "auth", "toplevel", "auth", "app", "2", "auth", 0, ms, ms)
	require.Equal(t, fields(want), fields(id.ReplaceAllString(got, "id=X ")))

	require.Equal(t, "*1\r\n", tc.do("ACL", "LOG", "1")[:4])
	require.Equal(t, "*0\r\n", tc.do("ACL", "LOG", "0"))
	require.Equal(t, "*0\r\n", tc.do("ACL", "LOG", "-5"))
	require.Equal(t, wireErr("ERR value is not an integer or out of range"), tc.do("ACL", "LOG", "many"))
	require.Equal(t, ok, tc.do("ACL", "LOG", "RESET"))
	require.Equal(t, "*0\r\n", tc.do("ACL", "LOG"))

	// RESP3: a map each, age a double.
	tc.do("HELLO", "3")
	app.do("FLUSHALL")
	require.Contains(t, tc.do("ACL", "LOG"), "%10\r\n$5\r\ncount\r\n:1\r\n")
	require.Contains(t, tc.do("ACL", "LOG"), "$11\r\nage-seconds\r\n,0\r\n")
}

// fields is a reply with each client-info line's idle= and age= blanked,
// which depend on the instant the line was taken.
func fields(reply string) string {
	return regexp.MustCompile(`(idle|age)=\d+`).ReplaceAllString(reply, "$1=N")
}

// ACL GETUSER, LIST, USERS, WHOAMI, CAT and DRYRUN, as Redis answers them.
func TestACLViews(t *testing.T) {
	tc := newTestClient(t, Config{})
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", ">secret", "~app:*", "+cl.throttle", "(", "+get", "~ro:*", ")"))
	h := acl.HashPassword([]byte("secret"))
	require.Equal(t, "*12\r\n"+bulk("flags")+"*2\r\n"+bulk("on")+bulk("sanitize-payload")+
		bulk("passwords")+"*1\r\n"+bulk(h)+
		bulk("commands")+bulk("-@all +cl.throttle")+bulk("keys")+bulk("~app:*")+bulk("channels")+bulk("")+
		bulk("selectors")+"*1\r\n*6\r\n"+bulk("commands")+bulk("-@all +get")+bulk("keys")+bulk("~ro:*")+bulk("channels")+bulk(""),
		tc.do("ACL", "GETUSER", "app"))
	require.Equal(t, "$-1\r\n", tc.do("ACL", "GETUSER", "nobody"))
	require.Equal(t, "*2\r\n"+bulk("user app on sanitize-payload #"+h+" ~app:* resetchannels -@all +cl.throttle (~ro:* resetchannels -@all +get)")+
		bulk("user default on nopass sanitize-payload ~* &* +@all"), tc.do("ACL", "LIST"))
	require.Equal(t, "*2\r\n"+bulk("app")+bulk("default"), tc.do("ACL", "USERS"))
	require.Equal(t, bulk("default"), tc.do("ACL", "WHOAMI"))

	cats := tc.do("ACL", "CAT")
	require.True(t, strings.HasPrefix(cats, "*21\r\n"+bulk("keyspace")+bulk("read")+bulk("write")), cats)
	require.Equal(t, "*7\r\n"+bulk("cl.acquire")+bulk("cl.count")+bulk("cl.release")+bulk("cl.renew")+bulk("cl.reserve")+bulk("cl.throttle")+bulk("cl.window"), filterBulks(tc.do("ACL", "CAT", "write"), "cl."))
	require.Contains(t, tc.do("ACL", "CAT", "dangerous"), bulk("flushall"))
	require.Contains(t, tc.do("ACL", "CAT", "admin"), bulk("clusterx|setnodes"))
	require.Equal(t, wireErr("ERR Unknown category 'nope'"), tc.do("ACL", "CAT", "nope"))

	require.Equal(t, ok, tc.do("ACL", "DRYRUN", "app", "CL.THROTTLE", "app:1", "1", "1", "1"))
	require.Equal(t, bulk("User app has no permissions to access the 'x' key"), tc.do("ACL", "DRYRUN", "app", "CL.THROTTLE", "x", "1", "1", "1"))
	require.Equal(t, ok, tc.do("ACL", "DRYRUN", "app", "get", "ro:1"), "the selector allows it")
	require.Equal(t, bulk("User app has no permissions to run the 'flushall' command"), tc.do("ACL", "DRYRUN", "app", "flushall"))
	require.Equal(t, bulk("User app has no permissions to run the 'client|kill' command"), tc.do("ACL", "DRYRUN", "app", "client", "kill", "x"))
	require.Equal(t, wireErr("ERR User 'nobody' not found"), tc.do("ACL", "DRYRUN", "nobody", "get", "x"))
	require.Equal(t, wireErr("ERR Command 'nocmd' not found"), tc.do("ACL", "DRYRUN", "app", "nocmd"))
	require.Equal(t, wireErr("ERR wrong number of arguments for 'get' command"), tc.do("ACL", "DRYRUN", "app", "get"))

	require.Regexp(t, `^\$64\r\n[0-9a-f]{64}\r\n$`, tc.do("ACL", "GENPASS"))
	require.Regexp(t, `^\$2\r\n[0-9a-f]{2}\r\n$`, tc.do("ACL", "GENPASS", "5"))
	require.Equal(t, wireErr("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"), tc.do("ACL", "GENPASS", "0"))
	require.Equal(t, wireErr("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"), tc.do("ACL", "GENPASS", "4097"))
	require.Equal(t, wireErr("ERR value is not an integer or out of range"), tc.do("ACL", "GENPASS", "x"))
	require.Contains(t, tc.do("ACL", "HELP"), "+DRYRUN <username> <command> [<arg> ...]\r\n")
	require.Equal(t, wireErr("ERR unknown subcommand 'NOPE'. Try ACL HELP."), tc.do("ACL", "NOPE"))
}

// filterBulks keeps the bulk strings of an array reply that begin with
// prefix.
func filterBulks(reply, prefix string) string {
	parts := strings.Split(reply, "\r\n")
	var kept []string
	for i := 2; i < len(parts); i += 2 {
		if strings.HasPrefix(parts[i], prefix) {
			kept = append(kept, bulk(parts[i]))
		}
	}
	return "*" + itoa(int64(len(kept))) + "\r\n" + strings.Join(kept, "")
}

// ACL SETUSER's errors, in Redis's words; nothing of a refused SETUSER is
// applied.
func TestACLSetUserErrors(t *testing.T) {
	tc := newTestClient(t, Config{})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"u", "+nosuch"}, "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{[]string{"u", "on", "bogus"}, "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]string{"u", "allkeys", "~k"}, "ERR Error in ACL SETUSER modifier '~k': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{[]string{"u", "&*", "&c"}, "ERR Error in ACL SETUSER modifier '&c': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{[]string{"u", "<nosuch"}, "ERR Error in ACL SETUSER modifier '<nosuch': The password you are trying to remove from the user does not exist"},
		{[]string{"u", "#abc"}, "ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{[]string{"u", "+client|id|x"}, "ERR Error in ACL SETUSER modifier '+client|id|x': Allowing first-arg of a subcommand is not supported"},
		{[]string{"u", "(~a", "+get"}, "ERR Unmatched parenthesis in acl selector starting at '(~a'."},
		{[]string{"a b"}, "ERR Usernames can't contain spaces or null characters"},
	} {
		require.Equal(t, wireErr(c.want), tc.do(append([]string{"ACL", "SETUSER"}, c.args...)...), c.args)
	}
	require.Equal(t, "*1\r\n"+bulk("default"), tc.do("ACL", "USERS"), "no user made by a refused SETUSER")
	require.Equal(t, wireErr("ERR The 'default' user cannot be removed"), tc.do("ACL", "DELUSER", "x", "default"))
	require.Equal(t, ":0\r\n", tc.do("ACL", "DELUSER", "x"))
}

// A user deleted, or turned off, has its connections closed: the asking
// connection after its reply. Redis closes a deleted user's; a disabled
// user's it keeps, which redcell does not (README).
func TestACLDeleteOrDisableClosesConnections(t *testing.T) {
	admin := newTestClient(t, Config{})
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "on", "nopass", "+@all", "~*", "&*"))
	a, b, other := admin.connect(t), admin.connect(t), admin.connect(t)
	require.Equal(t, ok, a.do("AUTH", "app", "x"))
	require.Equal(t, ok, b.do("AUTH", "app", "x"))
	require.Equal(t, ok, a.do("ACL", "SETUSER", "app", "-flushall"), "rules changed: the connections stay")
	require.False(t, b.conn.closed)
	require.Equal(t, wireErr("NOPERM User app has no permissions to run the 'flushall' command"), b.do("FLUSHALL"))
	require.Equal(t, ":1\r\n", a.do("ACL", "DELUSER", "app"), "its own user: answered, then closed")
	require.True(t, a.conn.closed)
	require.True(t, a.c.closing())
	require.True(t, b.conn.closed)
	require.False(t, other.conn.closed)
	require.False(t, admin.conn.closed)

	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "on", "nopass", "+@all"))
	c := admin.connect(t)
	require.Equal(t, ok, c.do("AUTH", "app", "x"))
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "off"))
	require.True(t, c.conn.closed, "a user turned off")
	require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), admin.connect(t).do("AUTH", "app", "x"))
	require.Contains(t, admin.do("CLIENT", "LIST"), "user=default")
}

// A transaction queued by a user whose rules change before EXEC: the
// command no longer allowed is refused inside EXEC's reply, as Redis does.
func TestACLRulesCheckedAgainAtExec(t *testing.T) {
	admin := newTestClient(t, Config{})
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "on", "nopass", "+@all", "~*"))
	app := admin.connect(t)
	require.Equal(t, ok, app.do("AUTH", "app", "x"))
	require.Equal(t, ok, app.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", app.do("CL.THROTTLE", "k", "1", "1", "1"))
	require.Equal(t, "+QUEUED\r\n", app.do("PING"))
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "-cl.throttle"))
	require.Equal(t, "*2\r\n"+wireErr("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand")+"+PONG\r\n",
		app.do("EXEC"))
	require.Contains(t, admin.do("ACL", "LOG", "1"), bulk("context")+bulk("multi"))
}

// The default user is --requirepass's: AUTH with the password alone or
// with its name, and ACL rules change it as any user.
func TestACLDefaultUserIsRequirePass(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	require.Equal(t, wireErr("NOAUTH Authentication required."), tc.do("ACL", "WHOAMI"))
	require.Equal(t, ok, tc.do("AUTH", "pw"))
	require.Equal(t, bulk("default"), tc.do("ACL", "WHOAMI"))
	require.Equal(t, "*1\r\n"+bulk("user default on sanitize-payload #"+acl.HashPassword([]byte("pw"))+" ~* &* +@all"), tc.do("ACL", "LIST"))
	other := tc.connect(t)
	require.Equal(t, ok, other.do("AUTH", "default", "pw"))
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", "nopass"))
	require.Equal(t, "+PONG\r\n", tc.connect(t).do("PING"), "default nopass: new connections need no AUTH")
	require.Equal(t, wireErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), tc.do("AUTH", "x"))

	// RESET: back to the default user.
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", "nopass", "+@all"))
	require.Equal(t, ok, other.do("AUTH", "app", "x"))
	require.Equal(t, "+RESET\r\n", other.do("RESET"))
	require.Equal(t, bulk("default"), other.do("ACL", "WHOAMI"))
}

// HELLO 3 AUTH user pass authenticates as the user; a bad option
// authenticates no one.
func TestHelloAuthWithUser(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	admin := tc.connect(t)
	require.Equal(t, ok, admin.do("AUTH", "pw"))
	require.Equal(t, ok, admin.do("ACL", "SETUSER", "app", "on", ">secret", "+@all", "~*"))
	require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), tc.do("HELLO", "3", "AUTH", "app", "nope"))
	require.Equal(t, wireErr("ERR Syntax error in HELLO option 'bogus'"), tc.do("HELLO", "3", "AUTH", "app", "secret", "bogus"))
	require.Equal(t, wireErr("NOAUTH Authentication required."), tc.do("PING"))
	require.True(t, strings.HasPrefix(tc.do("HELLO", "3", "AUTH", "app", "secret", "SETNAME", "w1"), "%7\r\n"))
	require.Equal(t, bulk("app"), tc.do("ACL", "WHOAMI"))
	require.Contains(t, admin.do("CLIENT", "LIST"), "name=w1 ")
	require.Contains(t, admin.do("ACL", "LOG"), bulk("object")+bulk("HELLO"))
}

// Failures are charged to the address whatever the user named, and a right
// password passes whatever the address's failures: guessing one user's
// password never locks another user, or the same one, out.
func TestRightPasswordPassesAfterWrongOnes(t *testing.T) {
	tc := newTestClient(t, Config{})
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", ">secret", "+@all"))
	for i := range authFailBurst {
		require.Equal(t, wireErr("WRONGPASS invalid username-password pair or user is disabled."), tc.do("AUTH", "app", "guess"+itoa(int64(i))))
	}
	require.Equal(t, ok, tc.do("AUTH", "app", "secret"))
	require.Equal(t, bulk("app"), tc.do("ACL", "WHOAMI"))
	require.True(t, strings.HasPrefix(tc.do("HELLO", "2", "AUTH", "default", "x"), "*14\r\n"), "the default user, nopass")
}

// CLIENT KILL USER kills the connections of a user there is.
func TestClientKillUser(t *testing.T) {
	tc := newTestClient(t, Config{})
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", "nopass", "+ping"))
	app := tc.connect(t)
	require.Equal(t, ok, app.do("AUTH", "app", "x"))
	require.Equal(t, wireErr("ERR No such user 'nobody'"), tc.do("CLIENT", "KILL", "USER", "nobody"))
	require.Equal(t, ":1\r\n", tc.do("CLIENT", "KILL", "USER", "app"))
	require.True(t, app.conn.closed)
}

// ACL SAVE writes the users to --aclfile, passwords as digests; ACL LOAD
// reads them back, all or nothing; without a file both are refused.
func TestACLSaveAndLoad(t *testing.T) {
	require.Equal(t, errReply(errNoACLFile), newTestClient(t, Config{}).do("ACL", "SAVE"))
	require.Equal(t, errReply(errNoACLFile), newTestClient(t, Config{}).do("ACL", "LOAD"))

	file := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tc := newTestClient(t, Config{ACLFile: file, RequirePass: "pw"})
	require.NoError(t, tc.srv.LoadACLFile())
	require.Equal(t, ok, tc.do("AUTH", "pw"), "an empty file: the default user is --requirepass's")
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "app", "on", ">secret", "~app:*", "+cl.throttle"))
	require.Equal(t, ok, tc.do("ACL", "SAVE"))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "user app on sanitize-payload #"+acl.HashPassword([]byte("secret"))+" ~app:* resetchannels -@all +cl.throttle\n"+
		"user default on sanitize-payload #"+acl.HashPassword([]byte("pw"))+" ~* &* +@all\n", string(data))
	require.NotContains(t, string(data), "secret")

	app := tc.connect(t)
	require.Equal(t, ok, app.do("AUTH", "app", "secret"))
	stale := tc.connect(t)
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "gone", "on", "nopass", "+@all"))
	require.Equal(t, ok, stale.do("AUTH", "gone", "x"))

	// A file with errors changes nothing, and says what is wrong where.
	require.NoError(t, os.WriteFile(file, []byte("user app on +nosuch\n# no comments\n"), 0o600))
	require.Equal(t, wireErr("ERR "+file+":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+
		file+":2 should start with user keyword followed by the username. "+
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"), tc.do("ACL", "LOAD"))
	require.Contains(t, tc.do("ACL", "USERS"), "gone")

	// LOAD: a user the file lacks is gone, and its connections closed; a
	// user it keeps has its connections rebound to its new rules.
	require.NoError(t, os.WriteFile(file, data, 0o600))
	require.Equal(t, ok, tc.do("ACL", "LOAD"))
	require.Equal(t, "*2\r\n"+bulk("app")+bulk("default"), tc.do("ACL", "USERS"))
	require.True(t, stale.conn.closed)
	require.False(t, app.conn.closed)
	require.Equal(t, wireErr("NOPERM No permissions to access a key"), app.do("CL.THROTTLE", "x", "1", "1", "1"))

	require.NoError(t, os.Remove(file))
	require.Equal(t, wireErr("ERR Error loading ACLs, opening file '"+file+"': No such file or directory"), tc.do("ACL", "LOAD"))
}

// LoadACLFile at the start: the file's users, its default user over
// --requirepass's, and every error to stop the start with.
func TestLoadACLFileAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(file, []byte("user default on >filepw ~* &* +@all\nuser app on >s +ping\n"), 0o600))
	srv := New(Config{ACLFile: file, RequirePass: "flagpw", Now: func() time.Time { return t0 }}, storage.New(storage.Config{}))
	require.NoError(t, srv.LoadACLFile())
	require.True(t, srv.users.defaultUser().CheckPassword([]byte("filepw")))
	require.False(t, srv.users.defaultUser().CheckPassword([]byte("flagpw")))

	require.NoError(t, os.WriteFile(file, []byte("user app on +nosuch\n"), 0o600))
	err := New(Config{ACLFile: file}, storage.New(storage.Config{})).LoadACLFile()
	require.EqualError(t, err, file+":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
}

// The default user without ACLs costs a decision one test: its connection's
// access word is 0 once authenticated. A restricted user's is not.
func TestUnrestrictedUserIsNotChecked(t *testing.T) {
	tc := newTestClient(t, Config{})
	require.Zero(t, tc.c.access.Load())
	tc = newTestClient(t, Config{RequirePass: "pw"})
	require.Equal(t, accessUnauthed, tc.c.access.Load())
	require.Equal(t, ok, tc.do("AUTH", "pw"))
	require.Zero(t, tc.c.access.Load())
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", "-flushall"))
	require.Equal(t, accessLimited, tc.c.access.Load(), "rebound at once")
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", "+@all"))
	require.Zero(t, tc.c.access.Load())
}

// docs/security.md's file of users loads, and its users may do what it says
// they may: the application decides on its prefix alone, the operator
// reads but cannot reset or reconfigure the server, Sentinel, the replica
// and the cluster's internal user run what they send.
func TestDocumentedUsers(t *testing.T) {
	readme, err := os.ReadFile("../docs/security.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Users and permissions\n")
	require.True(t, found)
	_, block, found := strings.Cut(section, "```\n")
	require.True(t, found)
	block, _, _ = strings.Cut(block, "```")
	file := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(file, []byte(block), 0o600))
	tc := newTestClient(t, Config{ACLFile: file})
	require.NoError(t, tc.srv.LoadACLFile())
	for _, c := range []struct {
		user string
		cmd  []string
		want string
	}{
		{"app", []string{"CL.THROTTLE", "rl:app:user123", "15", "30", "60"}, ok},
		{"app", []string{"CL.THROTTLE", "rl:billing:7", "15", "30", "60"}, bulk("User app has no permissions to access the 'rl:billing:7' key")},
		{"app", []string{"FLUSHALL"}, bulk("User app has no permissions to run the 'flushall' command")},
		{"app", []string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis"}, ok},
		{"ops", []string{"INFO"}, ok},
		{"ops", []string{"CLIENT", "LIST"}, ok},
		{"ops", []string{"ACL", "LOG"}, ok},
		{"ops", []string{"DEL", "rl:app:user123"}, ok},
		{"ops", []string{"FLUSHALL"}, bulk("User ops has no permissions to run the 'flushall' command")},
		{"ops", []string{"CONFIG", "SET", "masterauth", "x"}, bulk("User ops has no permissions to run the 'config|set' command")},
		{"ops", []string{"REPLICAOF", "10.0.0.1", "6379"}, bulk("User ops has no permissions to run the 'replicaof' command")},
		{"ops", []string{"SHUTDOWN"}, bulk("User ops has no permissions to run the 'shutdown' command")},
		{"ops", []string{"CLUSTERX", "SETNODES", "x", "1"}, bulk("User ops has no permissions to run the 'clusterx|setnodes' command")},
		{"ops", []string{"ACL", "SETUSER", "ops", "+@all"}, bulk("User ops has no permissions to run the 'acl|setuser' command")},
		{"sentinel", []string{"SLAVEOF", "NO", "ONE"}, ok},
		{"sentinel", []string{"CONFIG", "REWRITE"}, ok},
		{"sentinel", []string{"CLIENT", "KILL", "TYPE", "normal"}, ok},
		{"sentinel", []string{"PUBLISH", "__sentinel__:hello", "x"}, ok},
		{"sentinel", []string{"CL.THROTTLE", "k", "1", "1", "1"}, bulk("User sentinel has no permissions to run the 'cl.throttle' command")},
		{"replica", []string{"PSYNC", "?", "-1"}, ok},
		{"replica", []string{"REPLCONF", "ACK", "0"}, ok},
		{"replica", []string{"DEL", "k"}, bulk("User replica has no permissions to run the 'del' command")},
		{"cluster", []string{"CLUSTERX", "IMPORT", "1", "START", "x"}, ok},
		{"cluster", []string{"CLIENT", "PAUSE", "10", "WRITE"}, ok},
		{"cluster", []string{"FLUSHALL"}, bulk("User cluster has no permissions to run the 'flushall' command")},
	} {
		require.Equal(t, c.want, tc.do(append([]string{"ACL", "DRYRUN", c.user}, c.cmd...)...), "%s: %v", c.user, c.cmd)
	}
}
