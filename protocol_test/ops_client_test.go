package protocol_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// CLIENT HELP is Redis 7's help, less what redcell does not serve.
func TestClientHelp(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
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
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"HELP",
		"    Print this help.",
	}
	want := "*" + strconv.Itoa(len(lines)) + "\r\n"
	for _, l := range lines {
		want += simple(l)
	}
	require.Equal(t, want, c.do("CLIENT", "HELP"))
	require.Equal(t, want, c.do("client", "help"))
	require.Equal(t, errReply("ERR wrong number of arguments for 'client|help' command"), c.do("CLIENT", "HELP", "me"))

	// Each new subcommand is described to COMMAND, admin ones as admin.
	for _, sub := range []string{"help", "kill", "pause", "unpause"} {
		info := c.do("COMMAND", "INFO", "client|"+sub)
		require.True(t, strings.HasPrefix(info, "*1\r\n*10\r\n"+bulk("client|"+sub)), "COMMAND INFO client|%s = %q", sub, info)
		require.Equal(t, sub != "help", strings.Contains(info, simple("admin")), "client|%s admin flag: %q", sub, info)
	}
	require.Contains(t, c.do("COMMAND", "DOCS", "client|kill"), bulk("Terminates open connections."))
	require.Contains(t, c.do("COMMAND", "DOCS", "client"), bulk("client|unpause"))
	require.Equal(t, bulks("client|pause"), c.do("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|pa*"))
}

// clientID returns the id the server gave c.
func clientID(t *testing.T, c *rawConn) int64 {
	t.Helper()
	reply := c.do("CLIENT", "ID")
	id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
	require.NoError(t, err, "CLIENT ID = %q", reply)
	return id
}

// addrOf is where the server sees c coming from: CLIENT LIST's addr=.
func addrOf(c *rawConn) string { return c.conn.LocalAddr().String() }

// listedIDs returns the ids CLIENT LIST shows, as c sees them.
func listedIDs(t *testing.T, c *rawConn) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(c.do("CLIENT", "LIST"), "\n") {
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
	ts := startServer(t)
	k := ts.raw(t)
	a, b := ts.raw(t), ts.raw(t)
	idA, idB := clientID(t, a), clientID(t, b)

	require.Equal(t, ok, k.do("CLIENT", "KILL", addrOf(a)))
	a.expectClosed()
	require.Equal(t, errReply("ERR No such client"), k.do("CLIENT", "KILL", addrOf(a)), "a killed client is gone at once")
	require.Equal(t, errReply("ERR No such client"), k.do("CLIENT", "KILL", "10.0.0.1:1"))
	require.NotContains(t, listedIDs(t, k), strconv.FormatInt(idA, 10))

	require.Equal(t, integer(0), k.do("CLIENT", "KILL", "ID", strconv.FormatInt(idA, 10)))
	require.Equal(t, integer(0), k.do("CLIENT", "KILL", "ID", strconv.FormatInt(idB, 10), "ADDR", addrOf(k)), "every filter must match")
	require.Equal(t, integer(1), k.do("CLIENT", "KILL", "ID", strconv.FormatInt(idB, 10), "ADDR", addrOf(b), "LADDR", ts.Addr, "TYPE", "normal", "USER", "default"))
	b.expectClosed()

	for _, typ := range []string{"master", "replica", "slave", "pubsub", "PUBSUB"} {
		require.Equal(t, integer(0), k.do("CLIENT", "KILL", "TYPE", typ), "no %s connection here", typ)
	}

	// MAXAGE: older is at least 10 s old, newer younger.
	older := ts.raw(t)
	require.Equal(t, simple("PONG"), older.do("PING"))
	ts.Clock.Advance(10 * time.Second)
	newer := ts.raw(t)
	require.Equal(t, simple("PONG"), newer.do("PING"))
	require.Equal(t, integer(0), newer.do("CLIENT", "KILL", "MAXAGE", "11", "SKIPME", "no"))
	require.Equal(t, integer(2), newer.do("CLIENT", "KILL", "MAXAGE", "10", "SKIPME", "no"), "k and older are 10 s old")
	k.expectClosed()
	older.expectClosed()
	require.Equal(t, simple("PONG"), newer.do("PING"))

	// LADDR, spared caller: every other connection.
	x, y := ts.raw(t), ts.raw(t)
	require.Equal(t, simple("PONG"), x.do("PING"))
	require.Equal(t, simple("PONG"), y.do("PING"))
	require.Equal(t, integer(2), newer.do("CLIENT", "KILL", "LADDR", ts.Addr, "SKIPME", "yes"))
	x.expectClosed()
	y.expectClosed()
	require.Equal(t, simple("PONG"), newer.do("PING"), "SKIPME yes spares the caller")
	require.Equal(t, []string{strconv.FormatInt(clientID(t, newer), 10)}, listedIDs(t, newer))

	// The caller's own connection: the reply is sent, then it is closed.
	require.Equal(t, integer(1), newer.do("CLIENT", "KILL", "ADDR", addrOf(newer), "SKIPME", "no"))
	newer.expectClosed()
	self := ts.raw(t)
	require.Equal(t, ok, self.do("CLIENT", "KILL", addrOf(self)), "the old form may kill its caller")
	self.expectClosed()

	c := ts.raw(t)
	for _, e := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "KILL"}, "ERR wrong number of arguments for 'client|kill' command"},
		{[]string{"CLIENT", "KILL", "ID", "0"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "x"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "-3"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "MAXAGE", "0"}, "ERR maxage should be greater than 0"},
		{[]string{"CLIENT", "KILL", "MAXAGE", "1.5"}, "ERR maxage is not an integer or out of range"},
		{[]string{"CLIENT", "KILL", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'"},
		{[]string{"CLIENT", "KILL", "USER", "alice"}, "ERR No such user 'alice'"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "COLOR", "red"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "ID", "1", "TYPE"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "TYPE", "bogus", "ID", "0"}, "ERR Unknown client type 'bogus'"},
		{[]string{"CLIENT", "KILL", "ID"}, "ERR No such client"}, // the old form, address "ID"
	} {
		require.Equal(t, errReply(e.want), c.do(e.args...), "%q", e.args)
	}
	require.Equal(t, simple("PONG"), c.do("PING"), "a refused KILL kills nothing")
}

// A client killed while another goroutine serves its commands: the kill
// closes its socket, its loop ends after the command it is running, and
// nothing races (this test runs under -race in CI).
func TestClientKillBusyConnection(t *testing.T) {
	ts := startServer(t)
	busy := ts.goRedis(t, func(o *redis.Options) { o.PoolSize = 1; o.MaxRetries = -1 })
	id, err := busy.ClientID(ctx(t)).Result()
	require.NoError(t, err)
	c, cancel := context.WithCancel(ctx(t))
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
	killer := ts.raw(t)
	require.Eventually(t, func() bool { return killer.do("EXISTS", "busy:49") == integer(1) },
		10*time.Second, time.Millisecond, "the busy client is running")
	require.Equal(t, integer(1), killer.do("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)))
	require.NotContains(t, killer.do("CLIENT", "LIST"), "id="+strconv.FormatInt(id, 10)+" ", "a killed client is not listed")
	require.Eventually(t, func() bool {
		return strings.Contains(killer.do("INFO", "clients"), "\r\nconnected_clients:2\r\n") // killer and busy's new connection
	}, 10*time.Second, 10*time.Millisecond, "the killed connection's loop ended")
	cancel()
	wg.Wait()
	newID, err := busy.ClientID(ctx(t)).Result()
	require.NoError(t, err)
	require.NotEqual(t, id, newID, "go-redis reconnected")
	require.Equal(t, simple("PONG"), killer.do("PING"))
}
