package server

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// scriptStep is one command of a script served on one connection and the
// bytes that must answer it.
type scriptStep struct {
	send, want string
}

// runScript serves every step's command on one connection of a fresh
// server (serveScript), then checks the replies step by step.
func runScript(t *testing.T, steps []scriptStep) {
	t.Helper()
	var in strings.Builder
	for _, s := range steps {
		in.WriteString(s.send + "\r\n")
	}
	rest := serveScript(t, in.String(), 1<<20)
	for i, s := range steps {
		if !strings.HasPrefix(rest, s.want) {
			t.Fatalf("step %d: %q = %q want %q", i, s.send, rest[:min(len(rest), len(s.want)+40)], s.want)
		}
		rest = rest[len(s.want):]
	}
	require.Empty(t, rest, "replies after the last step's")
}

// frame is an array (RESP2) or push (RESP3) of the elements given, each
// already encoded.
func frame(resp int, elems ...string) string {
	kind := "*"
	if resp == 3 {
		kind = ">"
	}
	return fmt.Sprintf("%s%d\r\n%s", kind, len(elems), strings.Join(elems, ""))
}

// sub is an (un)subscription reply: kind, the name, the count after it.
func sub(resp int, kind, name string, count int) string {
	return frame(resp, testkit.Bulk(kind), testkit.Bulk(name), testkit.Int(int64(count)))
}

func subscribedError(name string) string {
	return errReply(errSubscribedContext(name))
}

// helloReply is what HELLO 3 answers the first client of a server.
var hello3 = "%7\r\n" + testkit.Bulk("server") + testkit.Bulk("redis") + testkit.Bulk("version") + testkit.Bulk(RedisVersion) +
	testkit.Bulk("proto") + testkit.Int(3) + testkit.Bulk("id") + testkit.Int(1) + testkit.Bulk("mode") + testkit.Bulk("standalone") +
	testkit.Bulk("role") + testkit.Bulk("master") + testkit.Bulk("modules") + "*0\r\n"

// Subscribed under RESP2, a client gets an array for each (un)subscription,
// with its count of channels and patterns; may run only (P)(UN)SUBSCRIBE,
// PING (answered by an array), QUIT and RESET, others refused in Redis's
// words, naming a subcommand by its full name; UNSUBSCRIBE without
// arguments unsubscribes from every channel, and with none answers a null.
func TestPubsubRESP2(t *testing.T) {
	runScript(t, []scriptStep{
		{"UNSUBSCRIBE", frame(2, testkit.Bulk("unsubscribe"), "$-1\r\n", testkit.Int(0))},
		{"UNSUBSCRIBE x y", sub(2, "unsubscribe", "x", 0) + sub(2, "unsubscribe", "y", 0)},
		{"PING", "+PONG\r\n"},
		{"SUBSCRIBE a b", sub(2, "subscribe", "a", 1) + sub(2, "subscribe", "b", 2)},
		{"SUBSCRIBE a", sub(2, "subscribe", "a", 2)},
		{"PSUBSCRIBE h?llo", sub(2, "psubscribe", "h?llo", 3)},
		{"PING", frame(2, testkit.Bulk("pong"), testkit.Bulk(""))},
		{"PING x", frame(2, testkit.Bulk("pong"), testkit.Bulk("x"))},
		{"GET k", subscribedError("get")},
		{"PUBLISH a m", subscribedError("publish")},
		{"CLIENT LIST", subscribedError("client|list")},
		{"CLIENT NOPE", errReply(errUnknownSubcommand([]byte("NOPE"), "CLIENT"))},
		{"MULTI", subscribedError("multi")},
		{"HELLO 3", subscribedError("hello")},
		{"UNSUBSCRIBE b c", sub(2, "unsubscribe", "b", 2) + sub(2, "unsubscribe", "c", 2)},
		{"SUBSCRIBE b", sub(2, "subscribe", "b", 3)},
		{"UNSUBSCRIBE", sub(2, "unsubscribe", "a", 2) + sub(2, "unsubscribe", "b", 1)},
		{"PING", frame(2, testkit.Bulk("pong"), testkit.Bulk(""))},
		{"PUNSUBSCRIBE", sub(2, "punsubscribe", "h?llo", 0)},
		{"PUNSUBSCRIBE", frame(2, testkit.Bulk("punsubscribe"), "$-1\r\n", testkit.Int(0))},
		{"PING", "+PONG\r\n"},
		{"GET k", "$-1\r\n"},
		{"SUBSCRIBE a", sub(2, "subscribe", "a", 1)},
		{"QUIT", "+OK\r\n"},
	})
}

// Subscribed under RESP3, the replies are pushes and the client may run any
// command; a message it publishes to itself follows PUBLISH's reply, and
// inside EXEC follows EXEC's, as in Redis 7.2; a message matching a pattern
// comes as a pmessage, after the channel's.
func TestPubsubRESP3(t *testing.T) {
	runScript(t, []scriptStep{
		{"HELLO 3", hello3},
		{"UNSUBSCRIBE", frame(3, testkit.Bulk("unsubscribe"), "_\r\n", testkit.Int(0))},
		{"SUBSCRIBE foo", sub(3, "subscribe", "foo", 1)},
		{"PING", "+PONG\r\n"},
		{"GET k", "_\r\n"},
		{"PUBLISH foo bar", testkit.Int(1) + frame(3, testkit.Bulk("message"), testkit.Bulk("foo"), testkit.Bulk("bar"))},
		{"PUBLISH other bar", testkit.Int(0)},
		{"MULTI", "+OK\r\n"},
		{"PING abc", "+QUEUED\r\n"},
		{"PUBLISH foo bar", "+QUEUED\r\n"},
		{"PUBLISH foo vaz", "+QUEUED\r\n"},
		{"PING def", "+QUEUED\r\n"},
		{"EXEC", "*4\r\n" + testkit.Bulk("abc") + testkit.Int(1) + testkit.Int(1) + testkit.Bulk("def") +
			frame(3, testkit.Bulk("message"), testkit.Bulk("foo"), testkit.Bulk("bar")) +
			frame(3, testkit.Bulk("message"), testkit.Bulk("foo"), testkit.Bulk("vaz"))},
		{"PSUBSCRIBE f*", sub(3, "psubscribe", "f*", 2)},
		{"PUBLISH foo x", testkit.Int(2) + frame(3, testkit.Bulk("message"), testkit.Bulk("foo"), testkit.Bulk("x")) +
			frame(3, testkit.Bulk("pmessage"), testkit.Bulk("f*"), testkit.Bulk("foo"), testkit.Bulk("x"))},
		{"PUBLISH fab y", testkit.Int(1) + frame(3, testkit.Bulk("pmessage"), testkit.Bulk("f*"), testkit.Bulk("fab"), testkit.Bulk("y"))},
		{"PUBSUB NUMSUB foo fab", "*4\r\n" + testkit.Bulk("foo") + testkit.Int(1) + testkit.Bulk("fab") + testkit.Int(0)},
		{"PUBSUB NUMPAT", testkit.Int(1)},
		{"PUBSUB CHANNELS", "*1\r\n" + testkit.Bulk("foo")},
		{"HELLO 2", strings.Replace(strings.Replace(hello3, "%7", "*14", 1), testkit.Int(3), testkit.Int(2), 1)},
		{"GET k", subscribedError("get")},
		{"PUBLISH foo z", subscribedError("publish")},
		{"RESET", "+RESET\r\n"},
		{"GET k", "$-1\r\n"},
		{"PUBSUB NUMSUB foo", "*2\r\n" + testkit.Bulk("foo") + testkit.Int(0)},
		{"PUBSUB NUMPAT", testkit.Int(0)},
	})
}

// SUBSCRIBE and PUBLISH are accepted inside MULTI, as in Redis; a client
// subscribed by its EXEC is then in subscribed mode. MONITOR is not.
func TestPubsubInMulti(t *testing.T) {
	runScript(t, []scriptStep{
		{"MULTI", "+OK\r\n"},
		{"PUBLISH a m", "+QUEUED\r\n"},
		{"SUBSCRIBE a", "+QUEUED\r\n"},
		{"PUBSUB NUMSUB a", "+QUEUED\r\n"},
		{"EXEC", "*3\r\n" + testkit.Int(0) + sub(2, "subscribe", "a", 1) + "*2\r\n" + testkit.Bulk("a") + testkit.Int(1)},
		{"GET k", subscribedError("get")},
		{"RESET", "+RESET\r\n"},
		{"MULTI", "+OK\r\n"},
		{"RESET", "+RESET\r\n"},
		{"EXEC", errReply(errExecWithoutMulti)},
	})
}

// RESET drops the subscriptions and the protocol, the transaction, the
// name, and authentication where a password is required.
func TestReset(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	require.Equal(t, "+OK\r\n", tc.do("AUTH", "pw"))
	require.Equal(t, "+OK\r\n", tc.do("CLIENT", "SETNAME", "app"))
	require.Equal(t, "+OK\r\n", tc.do("CLIENT", "SETINFO", "LIB-NAME", "lib"))
	require.True(t, strings.HasPrefix(tc.do("HELLO", "3"), "%7\r\n"))
	require.Equal(t, "+OK\r\n", tc.do("WATCH", "k"))
	require.Equal(t, "+OK\r\n", tc.do("MULTI"))
	require.Equal(t, "+RESET\r\n", tc.do("RESET"))
	require.Equal(t, 2, tc.c.session.resp)
	require.Nil(t, tc.c.tx.multi)
	require.Empty(t, tc.c.tx.watched)
	require.False(t, tc.c.gated)
	require.Equal(t, errReply(errNoAuth), tc.do("CLIENT", "GETNAME"))
	require.Equal(t, "+OK\r\n", tc.do("AUTH", "pw"))
	require.Equal(t, "$-1\r\n", tc.do("CLIENT", "GETNAME"))
	require.Contains(t, tc.do("CLIENT", "INFO"), " lib-name=lib ")
}

// subscriber is a client on a real connection (net.Pipe) with a goroutine
// of its own, as a subscriber needs; the test reads what it is sent.
type subscriber struct {
	c      *client
	conn   *testkit.Conn
	served chan struct{}
}

func newSubscriber(t *testing.T, srv *Server) *subscriber {
	t.Helper()
	client, c, served := servePipe(t, srv)
	s := &subscriber{c: c, conn: testkit.NewConn(t, client, 4096), served: served}
	t.Cleanup(func() { _ = client.Close(); <-s.served })
	return s
}

func (s *subscriber) send(t *testing.T, line string) {
	t.Helper()
	s.conn.Write(line + "\r\n")
}

// read reads exactly len(want) bytes and checks they are want.
func (s *subscriber) read(t *testing.T, want string) {
	t.Helper()
	require.NoError(t, s.conn.Conn.SetReadDeadline(time.Now().Add(testkit.Timeout)))
	got := make([]byte, len(want))
	_, err := io.ReadFull(s.conn.Reader, got)
	require.NoError(t, err, "read so far %q", got)
	require.Equal(t, want, string(got))
}

func newPubsubServer(cfg Config) *Server {
	cfg.Now = func() time.Time { return t0 }
	return New(cfg, storage.New(storage.Config{Shards: 1}))
}

func publisher(t *testing.T, srv *Server) *testClient {
	conn := newFakeConn()
	require.True(t, srv.acceptFake(conn))
	return &testClient{srv: srv, conn: conn, c: conn.client()}
}

// Messages reach other clients' connections, each in its own protocol; a
// channel and a matching pattern both count, and both are sent; the
// counts in PUBSUB, INFO and CLIENT LIST follow the subscriptions, and a
// subscriber's end drops them.
func TestPubsubDeliversToOthers(t *testing.T) {
	srv := newPubsubServer(Config{})
	s2, s3 := newSubscriber(t, srv), newSubscriber(t, srv)
	s2.send(t, "SUBSCRIBE news")
	s2.read(t, sub(2, "subscribe", "news", 1))
	s3.send(t, "HELLO 3")
	s3.read(t, strings.Replace(hello3, testkit.Int(1), testkit.Int(2), 1))
	s3.send(t, "PSUBSCRIBE n*")
	s3.read(t, sub(3, "psubscribe", "n*", 1))
	s3.send(t, "SUBSCRIBE news other")
	s3.read(t, sub(3, "subscribe", "news", 2)+sub(3, "subscribe", "other", 3))

	p := publisher(t, srv)
	require.Equal(t, testkit.Int(3), p.do("PUBLISH", "news", "hi"))
	s2.read(t, frame(2, testkit.Bulk("message"), testkit.Bulk("news"), testkit.Bulk("hi")))
	s3.read(t, frame(3, testkit.Bulk("message"), testkit.Bulk("news"), testkit.Bulk("hi")))
	s3.read(t, frame(3, testkit.Bulk("pmessage"), testkit.Bulk("n*"), testkit.Bulk("news"), testkit.Bulk("hi")))
	require.Equal(t, testkit.Int(1), p.do("PUBLISH", "nope", "x"))
	s3.read(t, frame(3, testkit.Bulk("pmessage"), testkit.Bulk("n*"), testkit.Bulk("nope"), testkit.Bulk("x")))
	require.Equal(t, testkit.Int(0), p.do("PUBLISH", "zzz", "x"))

	require.Equal(t, "*2\r\n"+testkit.Bulk("news")+testkit.Bulk("other"), p.do("PUBSUB", "CHANNELS"))
	require.Equal(t, "*1\r\n"+testkit.Bulk("other"), p.do("PUBSUB", "CHANNELS", "o*"))
	require.Equal(t, "*4\r\n"+testkit.Bulk("news")+testkit.Int(2)+testkit.Bulk("n*")+testkit.Int(0), p.do("PUBSUB", "NUMSUB", "news", "n*"))
	require.Equal(t, "*0\r\n", p.do("PUBSUB", "NUMSUB"))
	require.Equal(t, testkit.Int(1), p.do("PUBSUB", "NUMPAT"))
	require.Equal(t, errReply(errSubcommandSyntax([]byte("channels"), "PUBSUB")), p.do("PUBSUB", "channels", "a", "b"))
	info := p.do("INFO", "stats", "clients")
	require.Contains(t, info, "\r\npubsub_channels:2\r\npubsub_patterns:1\r\n")
	require.Contains(t, info, "\r\npubsub_clients:2\r\n")
	list := p.do("CLIENT", "LIST")
	require.Contains(t, list, "id=1 addr=pipe laddr=pipe fd=-1 name= age=0 idle=0 flags=P db=0 sub=1 psub=0 ")
	require.Contains(t, list, "id=2 addr=pipe laddr=pipe fd=-1 name= age=0 idle=0 flags=P db=0 sub=2 psub=1 ")
	require.Contains(t, list, "id=3 addr=127.0.0.1:50000 laddr= fd=-1 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ")

	s3.send(t, "PUNSUBSCRIBE")
	s3.read(t, sub(3, "punsubscribe", "n*", 2))
	require.NoError(t, s2.conn.Conn.Close())
	<-s2.served
	require.Equal(t, testkit.Int(1), p.do("PUBLISH", "news", "again"))
	s3.read(t, frame(3, testkit.Bulk("message"), testkit.Bulk("news"), testkit.Bulk("again")))
	require.Contains(t, p.do("INFO", "stats", "clients"), "\r\npubsub_clients:1\r\n")
	require.NoError(t, s3.conn.Conn.Close())
	<-s3.served
	require.Contains(t, p.do("INFO", "stats", "clients"), "\r\npubsub_channels:0\r\npubsub_patterns:0\r\n")
	require.Equal(t, testkit.Int(0), p.do("PUBLISH", "news", "gone"))
}

// A subscriber that does not read is disconnected once what waits for it
// would pass its backlog; the publisher is never held up by it.
func TestPubsubSlowSubscriberIsDisconnected(t *testing.T) {
	srv := newPubsubServer(Config{Limits: Limits{MaxOutput: 4096}})
	s := newSubscriber(t, srv)
	s.send(t, "SUBSCRIBE ch")
	s.read(t, sub(2, "subscribe", "ch", 1))
	p := publisher(t, srv)
	payload := strings.Repeat("x", 1000)
	// A pipe holds nothing: the writer blocks on the first batch it takes,
	// and no more than four messages fit behind it.
	for i := 0; !s.c.killed(); i++ {
		require.Less(t, i, 100, "the subscriber was not disconnected")
		require.Contains(t, []string{testkit.Int(1), testkit.Int(0)}, p.do("PUBLISH", "ch", payload), "publish %d", i)
	}
	<-s.served // its connection closed and its subscriptions gone
	require.Equal(t, testkit.Int(0), p.do("PUBLISH", "ch", payload))
	require.Contains(t, p.do("INFO", "clients"), "\r\nconnected_clients:1\r\n")
}

// MONITOR and SUBSCRIBE on one connection, as Redis allows: lines and
// messages come through one outbox, in the order they happened, and the
// client shows both flags.
func TestPubsubAndMonitorOnOneConnection(t *testing.T) {
	srv := newPubsubServer(Config{})
	s := newSubscriber(t, srv)
	s.send(t, "MONITOR")
	s.read(t, "+OK\r\n")
	s.send(t, "SUBSCRIBE ch")
	s.read(t, sub(2, "subscribe", "ch", 1))
	s.read(t, "+1795953600.000000 [0 pipe] \"SUBSCRIBE\" \"ch\"\r\n")
	p := publisher(t, srv)
	require.Equal(t, testkit.Int(1), p.do("PUBLISH", "ch", "hi"))
	s.read(t, frame(2, testkit.Bulk("message"), testkit.Bulk("ch"), testkit.Bulk("hi")))
	s.read(t, "+1795953600.000000 [0 127.0.0.1:50000] \"PUBLISH\" \"ch\" \"hi\"\r\n")
	require.Contains(t, p.do("CLIENT", "LIST"), " flags=OP db=0 sub=1 psub=0 ")
	s.send(t, "GET k")
	s.read(t, subscribedError("get"))
	s.send(t, "RESET")
	s.read(t, "+RESET\r\n")
	require.Zero(t, srv.hooks.Load(), "no monitor left")
	s.send(t, "PUBLISH ch x")
	s.read(t, testkit.Int(0))
}

// CLIENT KILL TYPE pubsub kills the subscribed clients and TYPE normal the
// others (a monitor is normal), as Redis; CLIENT LIST TYPE lists them so.
func TestClientTypePubsub(t *testing.T) {
	srv := newPubsubServer(Config{})
	s := newSubscriber(t, srv)
	s.send(t, "SUBSCRIBE ch")
	s.read(t, sub(2, "subscribe", "ch", 1))
	k, other := publisher(t, srv), publisher(t, srv)
	require.Equal(t, testkit.Bulk(srv.clientByID(1).info(t0)+"\n"), k.do("CLIENT", "LIST", "TYPE", "pubsub"))
	require.NotContains(t, k.do("CLIENT", "LIST", "TYPE", "normal"), "id=1 ")
	require.Contains(t, k.do("CLIENT", "LIST", "TYPE", "normal"), "id=3 ")
	require.Equal(t, "$0\r\n\r\n", k.do("CLIENT", "LIST", "TYPE", "replica"))

	require.Equal(t, "+OK\r\n", k.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", k.do("CLIENT", "KILL", "TYPE", "pubsub"))
	require.Equal(t, "+QUEUED\r\n", k.do("CLIENT", "KILL", "TYPE", "normal"))
	require.Equal(t, "*2\r\n"+testkit.Int(1)+testkit.Int(1), k.do("EXEC"))
	<-s.served
	require.True(t, other.conn.closed, "the other normal client was killed")
	require.False(t, k.conn.closed, "the caller was skipped")
}

// clientByID finds a connected client.
func (s *Server) clientByID(id int64) *client {
	for _, c := range s.connectedClients() {
		if c.id == id {
			return c
		}
	}
	return nil
}

// Without a network a connection cannot have an outbox: SUBSCRIBE says so.
func TestSubscribeNeedsANetwork(t *testing.T) {
	tc := newTestClient(t, Config{})
	require.Equal(t, errReply(errNoNetwork("SUBSCRIBE")), tc.do("SUBSCRIBE", "a"))
	require.Equal(t, errReply(errNoNetwork("PSUBSCRIBE")), tc.do("PSUBSCRIBE", "a"))
	require.False(t, tc.c.gated)
}

// COMMAND INFO describes the Pub/Sub commands as redis-server 7 does (the
// replies compared with 7.0.15's): flags, ACL categories, no keys.
func TestPubsubCommandInfo(t *testing.T) {
	tc := newTestClient(t, Config{})
	info := func(name string, arity int, flags, acl []string) string {
		return "*10\r\n" + testkit.Bulk(name) + testkit.Int(int64(arity)) + testkit.Simples(flags...) + testkit.Int(0) + testkit.Int(0) + testkit.Int(0) + testkit.Simples(acl...) + "*0\r\n*0\r\n*0\r\n"
	}
	require.Equal(t, "*3\r\n"+
		info("subscribe", -2, []string{"pubsub", "noscript", "loading", "stale"}, []string{"@pubsub", "@slow"})+
		info("publish", 3, []string{"pubsub", "loading", "stale", "fast"}, []string{"@pubsub", "@fast"})+
		info("reset", 1, []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, []string{"@fast", "@connection"}),
		tc.do("COMMAND", "INFO", "subscribe", "publish", "reset"))
}

// A monitor may not PUBLISH, as Redis's may not run a may_replicate command.
func TestMonitorMayNotPublish(t *testing.T) {
	srv := newPubsubServer(Config{})
	m := newSubscriber(t, srv)
	m.send(t, "MONITOR")
	m.read(t, "+OK\r\n")
	m.send(t, "PUBLISH ch x")
	m.read(t, errReply(errMonitorKeyspace))
}

// Sharded Pub/Sub (Redis 7's SSUBSCRIBE, SPUBLISH, SUNSUBSCRIBE): shard
// channels are apart from channels of the same name and from patterns;
// their replies count shard channels only, their messages are smessages,
// and PUBSUB SHARDCHANNELS, SHARDNUMSUB, INFO and CLIENT LIST count them.
func TestShardedPubsub(t *testing.T) {
	srv := newPubsubServer(Config{})
	s2, s3 := newSubscriber(t, srv), newSubscriber(t, srv)
	s2.send(t, "SUBSCRIBE news")
	s2.read(t, sub(2, "subscribe", "news", 1))
	s2.send(t, "PSUBSCRIBE n*")
	s2.read(t, sub(2, "psubscribe", "n*", 2))
	s2.send(t, "SSUBSCRIBE news sport")
	s2.read(t, sub(2, "ssubscribe", "news", 1)+sub(2, "ssubscribe", "sport", 2))
	s3.send(t, "HELLO 3")
	s3.read(t, strings.Replace(hello3, testkit.Int(1), testkit.Int(2), 1))
	s3.send(t, "SSUBSCRIBE news")
	s3.read(t, sub(3, "ssubscribe", "news", 1))

	p := publisher(t, srv)
	require.Equal(t, testkit.Int(2), p.do("SPUBLISH", "news", "hi"), "the shard channel's two subscribers, no pattern")
	s2.read(t, frame(2, testkit.Bulk("smessage"), testkit.Bulk("news"), testkit.Bulk("hi")))
	s3.read(t, frame(3, testkit.Bulk("smessage"), testkit.Bulk("news"), testkit.Bulk("hi")))
	require.Equal(t, testkit.Int(2), p.do("PUBLISH", "news", "plain"), "the channel's subscriber and the pattern's")
	s2.read(t, frame(2, testkit.Bulk("message"), testkit.Bulk("news"), testkit.Bulk("plain")))
	s2.read(t, frame(2, testkit.Bulk("pmessage"), testkit.Bulk("n*"), testkit.Bulk("news"), testkit.Bulk("plain")))
	require.Equal(t, testkit.Int(0), p.do("SPUBLISH", "nothing", "x"))

	require.Equal(t, "*2\r\n"+testkit.Bulk("news")+testkit.Bulk("sport"), p.do("PUBSUB", "SHARDCHANNELS"))
	require.Equal(t, "*1\r\n"+testkit.Bulk("sport"), p.do("PUBSUB", "SHARDCHANNELS", "s*"))
	require.Equal(t, "*1\r\n"+testkit.Bulk("news"), p.do("PUBSUB", "CHANNELS"))
	require.Equal(t, "*4\r\n"+testkit.Bulk("news")+testkit.Int(2)+testkit.Bulk("x")+testkit.Int(0), p.do("PUBSUB", "SHARDNUMSUB", "news", "x"))
	require.Equal(t, "*2\r\n"+testkit.Bulk("news")+testkit.Int(1), p.do("PUBSUB", "NUMSUB", "news"))
	info := p.do("INFO", "stats", "clients")
	require.Contains(t, info, "\r\npubsub_channels:1\r\npubsub_patterns:1\r\npubsubshard_channels:2\r\n")
	require.Contains(t, info, "\r\npubsub_clients:2\r\n")
	require.Contains(t, p.do("CLIENT", "LIST"), "id=1 addr=pipe laddr=pipe fd=-1 name= age=0 idle=0 flags=P db=0 sub=1 psub=1 ssub=2 ")

	// SUNSUBSCRIBE without names drops every shard channel, and leaves
	// the channels and patterns; a client with shard channels only is
	// still in subscribed mode under RESP2.
	s2.send(t, "SUNSUBSCRIBE")
	s2.read(t, sub(2, "sunsubscribe", "news", 1)+sub(2, "sunsubscribe", "sport", 0))
	s2.send(t, "UNSUBSCRIBE")
	s2.read(t, sub(2, "unsubscribe", "news", 1))
	s2.send(t, "PUNSUBSCRIBE")
	s2.read(t, sub(2, "punsubscribe", "n*", 0))
	s2.send(t, "SSUBSCRIBE a")
	s2.read(t, sub(2, "ssubscribe", "a", 1))
	s2.send(t, "GET k")
	s2.read(t, subscribedError("get"))
	s2.send(t, "SUNSUBSCRIBE a b")
	s2.read(t, sub(2, "sunsubscribe", "a", 0)+sub(2, "sunsubscribe", "b", 0))
	s2.send(t, "GET k")
	s2.read(t, "$-1\r\n")
	require.Equal(t, testkit.Int(1), p.do("SPUBLISH", "news", "s3"))
	s3.read(t, frame(3, testkit.Bulk("smessage"), testkit.Bulk("news"), testkit.Bulk("s3")))
	require.NoError(t, s3.conn.Conn.Close())
	<-s3.served
	require.Contains(t, p.do("INFO", "stats"), "\r\npubsubshard_channels:0\r\n")
	require.Equal(t, errReply(errWrongArgs("spublish")), p.do("SPUBLISH", "news"))
}
