package protocol_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// CLIENT HELP is Redis 7's help, less what redcell does not serve.
func TestClientHelp(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"    * ID <client-id>",
		"      Kill connections by client id.",
		"    * MAXAGE <maxage>",
		"      Kill connections older than the specified age.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"HELP",
		"    Print this help.",
	}
	want := testkit.Simples(lines...)
	require.Equal(t, want, c.Do("CLIENT", "HELP"))
	require.Equal(t, want, c.Do("client", "help"))
	require.Equal(t, testkit.Err("ERR wrong number of arguments for 'client|help' command"), c.Do("CLIENT", "HELP", "me"))

	// Each new subcommand is described to COMMAND, admin ones as admin.
	for _, sub := range []string{"help", "kill", "pause", "unpause"} {
		info := c.Do("COMMAND", "INFO", "client|"+sub)
		require.True(t, strings.HasPrefix(info, "*1\r\n*10\r\n"+testkit.Bulk("client|"+sub)), "COMMAND INFO client|%s = %q", sub, info)
		require.Equal(t, sub != "help", strings.Contains(info, testkit.Simple("admin")), "client|%s admin flag: %q", sub, info)
	}
	require.Contains(t, c.Do("COMMAND", "DOCS", "client|kill"), testkit.Bulk("Terminates open connections."))
	require.Contains(t, c.Do("COMMAND", "DOCS", "client"), testkit.Bulk("client|unpause"))
	require.Equal(t, testkit.Bulks("client|pause"), c.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|pa*"))
}

// clientID returns the id the server gave c.
func clientID(t *testing.T, c *testkit.Conn) int64 {
	t.Helper()
	reply := c.Do("CLIENT", "ID")
	id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
	require.NoError(t, err, "CLIENT ID = %q", reply)
	return id
}

// addrOf is where the server sees c coming from: CLIENT LIST's addr=.
func addrOf(c *testkit.Conn) string { return c.Conn.LocalAddr().String() }

// listedIDs returns the ids CLIENT LIST shows, as c sees them.
func listedIDs(t *testing.T, c *testkit.Conn) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(c.Do("CLIENT", "LIST"), "\n") {
		if i := strings.Index(line, "id="); i >= 0 {
			ids = append(ids, strings.Fields(line[i+3:])[0])
		}
	}
	return ids
}

// CLIENT KILL's old form takes an address, answers OK or No such client, and
// may kill the caller; the new form's filters (ID, ADDR, LADDR, TYPE, USER,
// SKIPME, MAXAGE) all must match, it answers how many it killed and spares
// the caller unless SKIPME no. A killed client's connection is closed
// without another byte.
func TestClientKill(t *testing.T) {
	ts := harness.StartServer(t)
	k := ts.Raw(t)
	a, b := ts.Raw(t), ts.Raw(t)
	idA, idB := clientID(t, a), clientID(t, b)

	require.Equal(t, testkit.OK, k.Do("CLIENT", "KILL", addrOf(a)))
	a.ExpectClosed()
	require.Equal(t, testkit.Err("ERR No such client"), k.Do("CLIENT", "KILL", addrOf(a)), "a killed client is gone at once")
	require.Equal(t, testkit.Err("ERR No such client"), k.Do("CLIENT", "KILL", "10.0.0.1:1"))
	require.NotContains(t, listedIDs(t, k), strconv.FormatInt(idA, 10))

	require.Equal(t, testkit.Int(0), k.Do("CLIENT", "KILL", "ID", strconv.FormatInt(idA, 10)))
	require.Equal(t, testkit.Int(0), k.Do("CLIENT", "KILL", "ID", strconv.FormatInt(idB, 10), "ADDR", addrOf(k)), "every filter must match")
	require.Equal(t, testkit.Int(1), k.Do("CLIENT", "KILL", "ID", strconv.FormatInt(idB, 10), "ADDR", addrOf(b), "LADDR", ts.Addr, "TYPE", "normal", "USER", "default"))
	b.ExpectClosed()

	for _, typ := range []string{"master", "replica", "slave", "pubsub", "PUBSUB"} {
		require.Equal(t, testkit.Int(0), k.Do("CLIENT", "KILL", "TYPE", typ), "no %s connection here", typ)
	}

	// MAXAGE: older is at least 10 s old, newer younger.
	older := ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), older.Do("PING"))
	ts.Clock.Advance(10 * time.Second)
	newer := ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), newer.Do("PING"))
	require.Equal(t, testkit.Int(0), newer.Do("CLIENT", "KILL", "MAXAGE", "11", "SKIPME", "no"))
	require.Equal(t, testkit.Int(2), newer.Do("CLIENT", "KILL", "MAXAGE", "10", "SKIPME", "no"), "k and older are 10 s old")
	k.ExpectClosed()
	older.ExpectClosed()
	require.Equal(t, testkit.Simple("PONG"), newer.Do("PING"))

	// LADDR, spared caller: every other connection.
	x, y := ts.Raw(t), ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), x.Do("PING"))
	require.Equal(t, testkit.Simple("PONG"), y.Do("PING"))
	require.Equal(t, testkit.Int(2), newer.Do("CLIENT", "KILL", "LADDR", ts.Addr, "SKIPME", "yes"))
	x.ExpectClosed()
	y.ExpectClosed()
	require.Equal(t, testkit.Simple("PONG"), newer.Do("PING"), "SKIPME yes spares the caller")
	require.Equal(t, []string{strconv.FormatInt(clientID(t, newer), 10)}, listedIDs(t, newer))

	// The caller's own connection: the reply is sent, then it is closed.
	require.Equal(t, testkit.Int(1), newer.Do("CLIENT", "KILL", "ADDR", addrOf(newer), "SKIPME", "no"))
	newer.ExpectClosed()
	self := ts.Raw(t)
	require.Equal(t, testkit.OK, self.Do("CLIENT", "KILL", addrOf(self)), "the old form may kill its caller")
	self.ExpectClosed()

	c := ts.Raw(t)
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"CLIENT", "KILL"}, Want: testkit.Err("ERR wrong number of arguments for 'client|kill' command")},
		{Args: []string{"CLIENT", "KILL", "ID", "0"}, Want: testkit.Err("ERR client-id should be greater than 0")},
		{Args: []string{"CLIENT", "KILL", "ID", "x"}, Want: testkit.Err("ERR client-id should be greater than 0")},
		{Args: []string{"CLIENT", "KILL", "ID", "-3"}, Want: testkit.Err("ERR client-id should be greater than 0")},
		{Args: []string{"CLIENT", "KILL", "MAXAGE", "0"}, Want: testkit.Err("ERR maxage should be greater than 0")},
		{Args: []string{"CLIENT", "KILL", "MAXAGE", "1.5"}, Want: testkit.Err("ERR maxage is not an integer or out of range")},
		{Args: []string{"CLIENT", "KILL", "TYPE", "bogus"}, Want: testkit.Err("ERR Unknown client type 'bogus'")},
		{Args: []string{"CLIENT", "KILL", "USER", "alice"}, Want: testkit.Err("ERR No such user 'alice'")},
		{Args: []string{"CLIENT", "KILL", "SKIPME", "maybe"}, Want: testkit.Err("ERR syntax error")},
		{Args: []string{"CLIENT", "KILL", "COLOR", "red"}, Want: testkit.Err("ERR syntax error")},
		{Args: []string{"CLIENT", "KILL", "ID", "1", "TYPE"}, Want: testkit.Err("ERR syntax error")},
		{Args: []string{"CLIENT", "KILL", "TYPE", "bogus", "ID", "0"}, Want: testkit.Err("ERR Unknown client type 'bogus'")},
		{Args: []string{"CLIENT", "KILL", "ID"}, Want: testkit.Err("ERR No such client")}, // the old form, address "ID"
	}, c.Do, nil)
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"), "a refused KILL kills nothing")
}

// A client killed while another goroutine serves its commands: the kill
// closes its socket, its loop ends after the command it is running, and
// nothing races (this test runs under -race in CI).
func TestClientKillBusyConnection(t *testing.T) {
	ts := harness.StartServer(t)
	busy := ts.GoRedis(t, func(o *redis.Options) { o.PoolSize = 1; o.MaxRetries = -1 })
	id, err := busy.ClientID(harness.Ctx(t)).Result()
	require.NoError(t, err)
	c, cancel := context.WithCancel(harness.Ctx(t))
	var wg sync.WaitGroup
	wg.Go(func() {
		for c.Err() == nil {
			pipe := busy.Pipeline()
			for i := 0; i < 50; i++ {
				pipe.Do(c, "CL.THROTTLE", "busy:"+strconv.Itoa(i), "1000", "1000", "1")
			}
			_, _ = pipe.Exec(c) // fails, once, when killed mid-pipeline
		}
	})
	killer := ts.Raw(t)
	require.Eventually(t, func() bool { return killer.Do("EXISTS", "busy:49") == testkit.Int(1) },
		10*time.Second, time.Millisecond, "the busy client is running")
	require.Equal(t, testkit.Int(1), killer.Do("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)))
	require.NotContains(t, killer.Do("CLIENT", "LIST"), "id="+strconv.FormatInt(id, 10)+" ", "a killed client is not listed")
	require.Eventually(t, func() bool {
		return strings.Contains(killer.Do("INFO", "clients"), "\r\nconnected_clients:2\r\n") // killer and busy's new connection
	}, 10*time.Second, 10*time.Millisecond, "the killed connection's loop ended")
	cancel()
	wg.Wait()
	newID, err := busy.ClientID(harness.Ctx(t)).Result()
	require.NoError(t, err)
	require.NotEqual(t, id, newID, "go-redis reconnected")
	require.Equal(t, testkit.Simple("PONG"), killer.Do("PING"))
}
