package protocol_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// Pub/Sub as clients meet it: go-redis and redis-cli subscribing and
// receiving, raw RESP for the exact bytes, and what Redis Sentinel relies on
// (SUBSCRIBE to __sentinel__:hello, PUBLISH to it, CLIENT KILL TYPE pubsub
// inside MULTI/EXEC).

// pushOf is an array (RESP2) or push (RESP3) of bulk strings, then an
// integer if count is not negative: a subscription reply or a message.
func pushOf(resp int, count int, elems ...string) string {
	kind := "*"
	if resp == 3 {
		kind = ">"
	}
	n := len(elems)
	if count >= 0 {
		n++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d\r\n", kind, n)
	for _, e := range elems {
		b.WriteString(testkit.Bulk(e))
	}
	if count >= 0 {
		b.WriteString(testkit.Int(int64(count)))
	}
	return b.String()
}

// notInSubscribedMode is Redis's refusal of a command to a client
// subscribed under RESP2.
func notInSubscribedMode(name string) string {
	return testkit.Err("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// go-redis subscribes to channels and patterns and receives what is
// published, under RESP2 and RESP3; PUBLISH answers how many received it.
func TestGoRedisPubSub(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ts := harness.StartServer(t)
			rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
			pub := ts.GoRedis(t)

			sub := rdb.Subscribe(harness.Ctx(t), "__sentinel__:hello")
			t.Cleanup(func() { _ = sub.Close() })
			got, err := sub.Receive(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, &redis.Subscription{Kind: "subscribe", Channel: "__sentinel__:hello", Count: 1}, got)

			n, err := pub.Publish(harness.Ctx(t), "__sentinel__:hello", "127.0.0.1,26379,runid,0").Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
			msg, err := sub.ReceiveMessage(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, "__sentinel__:hello", msg.Channel)
			require.Equal(t, "127.0.0.1,26379,runid,0", msg.Payload)

			psub := rdb.PSubscribe(harness.Ctx(t), "__sentinel__:*")
			t.Cleanup(func() { _ = psub.Close() })
			got, err = psub.Receive(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, &redis.Subscription{Kind: "psubscribe", Channel: "__sentinel__:*", Count: 1}, got)
			n, err = pub.Publish(harness.Ctx(t), "__sentinel__:hello", "second").Result()
			require.NoError(t, err)
			require.Equal(t, int64(2), n, "the channel's subscriber and the pattern's")
			msg, err = sub.ReceiveMessage(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, "second", msg.Payload)
			msg, err = psub.ReceiveMessage(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, &redis.Message{Channel: "__sentinel__:hello", Pattern: "__sentinel__:*", Payload: "second"}, msg)

			// PING on the subscribed connection: an array "pong" "" under
			// RESP2, +PONG under RESP3; go-redis reads either as a Pong.
			require.NoError(t, sub.Ping(harness.Ctx(t)))
			got, err = sub.Receive(harness.Ctx(t))
			require.NoError(t, err)
			want := map[int]string{2: "", 3: "PONG"}[proto]
			require.Equal(t, &redis.Pong{Payload: want}, got)

			// Introspection, from another client.
			channels, err := pub.PubSubChannels(harness.Ctx(t), "*").Result()
			require.NoError(t, err)
			require.Equal(t, []string{"__sentinel__:hello"}, channels)
			numsub, err := pub.PubSubNumSub(harness.Ctx(t), "__sentinel__:hello", "other").Result()
			require.NoError(t, err)
			require.Equal(t, map[string]int64{"__sentinel__:hello": 1, "other": 0}, numsub)
			numpat, err := pub.PubSubNumPat(harness.Ctx(t)).Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), numpat)

			require.NoError(t, sub.Unsubscribe(harness.Ctx(t)))
			got, err = sub.Receive(harness.Ctx(t))
			require.NoError(t, err)
			require.Equal(t, &redis.Subscription{Kind: "unsubscribe", Channel: "__sentinel__:hello", Count: 0}, got)
			n, err = pub.Publish(harness.Ctx(t), "__sentinel__:hello", "third").Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), n, "the pattern's subscriber only")
		})
	}
}

// A RESP3 subscriber may run any command on its subscribed connection, and
// gets a message published to itself after PUBLISH's reply.
func TestRESP3SubscriberRunsCommands(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, helloReply(3, clientID(t, c)), c.Do("HELLO", "3"))
	require.Equal(t, pushOf(3, 1, "subscribe", "ch"), c.Do("SUBSCRIBE", "ch"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, testkit.Int(1), c.Do("PUBLISH", "ch", "self"))
	require.Equal(t, pushOf(3, -1, "message", "ch", "self"), c.Read())
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"))
}

// Subscribed under RESP2, a client may run only the commands Redis allows
// there; any other gets Redis's exact error, and RESET ends the mode.
func TestSubscribedModeRefusesOtherCommands(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	c.Write(testkit.Command("PING") + testkit.Command("SUBSCRIBE", "a", "b") + testkit.Command("PING"))
	require.Equal(t, testkit.Simple("PONG"), c.Read(), "run on the event loop")
	require.Equal(t, pushOf(2, 1, "subscribe", "a"), c.Read(), "the connection has left it")
	require.Equal(t, pushOf(2, 2, "subscribe", "b"), c.Read())
	require.Equal(t, pushOf(2, -1, "pong", ""), c.Read())
	require.Equal(t, notInSubscribedMode("cl.throttle"), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, notInSubscribedMode("get"), c.Do("GET", "k"))
	require.Equal(t, notInSubscribedMode("client|list"), c.Do("CLIENT", "LIST"))
	require.Equal(t, notInSubscribedMode("publish"), c.Do("PUBLISH", "a", "m"))
	require.Equal(t, pushOf(2, -1, "pong", "hi"), c.Do("PING", "hi"))
	require.Equal(t, pushOf(2, 3, "psubscribe", "x*"), c.Do("PSUBSCRIBE", "x*"))
	require.Equal(t, pushOf(2, 2, "unsubscribe", "a"), c.Do("UNSUBSCRIBE", "a"))
	require.Equal(t, testkit.Simple("RESET"), c.Do("RESET"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	require.Equal(t, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n", c.Do("UNSUBSCRIBE"))
}

// lineReader reads a process's output line by line, failing the test if a
// line does not come within the deadline.
type lineReader struct {
	lines chan string
}

func newLineReader(rd *bufio.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 64)}
	go func() {
		defer close(lr.lines)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			lr.lines <- line
		}
	}()
	return lr
}

func (lr *lineReader) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-lr.lines:
		require.True(t, ok, "the output ended")
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
		return ""
	}
}

// redis-cli subscribe prints the confirmation, then each message published,
// as against Redis.
func TestRedisCLISubscribe(t *testing.T) {
	path := harness.RedisCLI(t)
	ts := harness.StartServer(t)
	cmd := exec.Command(path, "-h", "127.0.0.1", "-p", strconv.Itoa(ts.Port), "subscribe", "ch")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := newLineReader(bufio.NewReader(out))
	for _, want := range []string{"subscribe\n", "ch\n", "1\n"} {
		require.Equal(t, want, lines.next(t))
	}
	c := ts.Raw(t)
	require.Equal(t, testkit.Int(1), c.Do("PUBLISH", "ch", "hello world"))
	for _, want := range []string{"message\n", "ch\n", "hello world\n"} {
		require.Equal(t, want, lines.next(t))
	}
}

// A subscriber that stops reading is disconnected once what waits for it
// passes the output buffer limit, as Redis's client-output-buffer-limit
// pubsub does; PUBLISH keeps answering at once meanwhile, and the other
// subscribers keep receiving.
func TestSlowSubscriberIsDisconnected(t *testing.T) {
	var log testkit.LockedBuffer
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{MaxOutput: 64 << 10}), func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	slow := ts.Raw(t)
	idSlow := clientID(t, slow)
	require.NoError(t, slow.Conn.(*net.TCPConn).SetReadBuffer(4096)) // so that the server's queue fills soon
	require.Equal(t, pushOf(2, 1, "subscribe", "ch"), slow.Do("SUBSCRIBE", "ch"))
	good := ts.GoRedis(t)
	sub := good.Subscribe(harness.Ctx(t), "ch")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(harness.Ctx(t))
	require.NoError(t, err)
	received := sub.Channel(redis.WithChannelSize(1 << 12))

	// Rounds of 16 messages, each waited for by the subscriber that reads
	// before the next: it never has more than 16 KiB waiting, the other
	// soon 64 KiB beyond what its socket holds.
	p := ts.Raw(t)
	payload := strings.Repeat("x", 1<<10)
	batch := strings.Repeat(testkit.Command("PUBLISH", "ch", payload), 16)
	require.Eventually(t, func() bool {
		p.Write(batch)
		for i := 0; i < 16; i++ {
			require.Contains(t, []string{testkit.Int(2), testkit.Int(1)}, p.Read(), "answered, whether the slow one is there yet or not")
		}
		for sent := 16; sent > 0; sent-- {
			select {
			case msg := <-received:
				require.Equal(t, len(payload), len(msg.Payload))
			case <-time.After(10 * time.Second):
				t.Fatal("the reading subscriber stopped receiving")
			}
		}
		return !strings.Contains(p.Do("CLIENT", "LIST", "TYPE", "pubsub"), "id="+strconv.FormatInt(idSlow, 10)+" ")
	}, 30*time.Second, time.Millisecond, "the slow subscriber was disconnected")
	require.Eventually(t, func() bool { return p.Do("PUBLISH", "ch", "m") == testkit.Int(1) }, 10*time.Second, time.Millisecond)
	msg := <-received
	require.Equal(t, "m", msg.Payload)
	require.Contains(t, log.String(), `msg="client closed for falling behind: what its feed holds unread passed the output buffer limit"`)
	require.Contains(t, log.String(), " id="+strconv.FormatInt(idSlow, 10)+" limit=65536")
}

// What Sentinel sends during a failover: CLIENT KILL TYPE pubsub and TYPE
// normal inside MULTI/EXEC; the subscribers and the normal clients are
// killed, the sender spared; CLIENT LIST TYPE pubsub lists the subscribers.
func TestClientKillTypePubsubInMulti(t *testing.T) {
	ts := harness.StartServer(t)
	s2, s3, n, k := ts.Raw(t), ts.Raw(t), ts.Raw(t), ts.Raw(t)
	id2, id3, idN := clientID(t, s2), clientID(t, s3), clientID(t, n)
	require.Equal(t, pushOf(2, 1, "subscribe", "__sentinel__:hello"), s2.Do("SUBSCRIBE", "__sentinel__:hello"))
	require.True(t, strings.HasPrefix(s3.Do("HELLO", "3"), "%7\r\n"))
	require.Equal(t, pushOf(3, 1, "psubscribe", "*"), s3.Do("PSUBSCRIBE", "*"))
	require.Equal(t, pushOf(3, 2, "subscribe", "x"), s3.Do("SUBSCRIBE", "x"))

	listed := bulkBody(t, k.Do("CLIENT", "LIST", "TYPE", "pubsub"))
	lines := strings.Split(strings.TrimSuffix(listed, "\n"), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "id="+strconv.FormatInt(id2, 10)+" ")
	require.Contains(t, lines[0], " flags=P db=0 sub=1 psub=0 ssub=0 ")
	require.Contains(t, lines[1], "id="+strconv.FormatInt(id3, 10)+" ")
	require.Contains(t, lines[1], " flags=P db=0 sub=1 psub=1 ssub=0 ")
	normal := bulkBody(t, k.Do("CLIENT", "LIST", "TYPE", "normal"))
	require.Contains(t, normal, "id="+strconv.FormatInt(idN, 10)+" ")
	require.NotContains(t, normal, "id="+strconv.FormatInt(id2, 10)+" ")

	require.Equal(t, testkit.OK, k.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), k.Do("CLIENT", "KILL", "TYPE", "pubsub"))
	require.Equal(t, testkit.Simple("QUEUED"), k.Do("CLIENT", "KILL", "TYPE", "normal"))
	require.Equal(t, "*2\r\n"+testkit.Int(2)+testkit.Int(1), k.Do("EXEC"))
	s2.ExpectClosed()
	s3.ExpectClosed()
	n.ExpectClosed()
	require.Equal(t, []string{strconv.FormatInt(clientID(t, k), 10)}, listedIDs(t, k))
	require.Equal(t, testkit.Int(0), k.Do("PUBLISH", "__sentinel__:hello", "m"))
}

// INFO counts the channels and patterns with a subscriber and the
// subscribed clients, in Redis's fields.
func TestPubsubInfo(t *testing.T) {
	ts := harness.StartServer(t)
	a, b, c := ts.Raw(t), ts.Raw(t), ts.Raw(t)
	require.Equal(t, pushOf(2, 1, "subscribe", "x"), a.Do("SUBSCRIBE", "x"))
	b.Write(testkit.Command("SUBSCRIBE", "x", "y") + testkit.Command("PSUBSCRIBE", "z*"))
	require.Equal(t, pushOf(2, 1, "subscribe", "x"), b.Read())
	require.Equal(t, pushOf(2, 2, "subscribe", "y"), b.Read())
	require.Equal(t, pushOf(2, 3, "psubscribe", "z*"), b.Read())
	stats := bulkBody(t, c.Do("INFO", "stats"))
	require.Contains(t, stats, "\r\npubsub_channels:2\r\npubsub_patterns:1\r\n")
	require.Contains(t, bulkBody(t, c.Do("INFO", "clients")), "\r\npubsub_clients:2\r\n")
	require.NoError(t, a.Conn.Close())
	require.Eventually(t, func() bool {
		return strings.Contains(bulkBody(t, c.Do("INFO", "clients")), "\r\npubsub_clients:1\r\n")
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, pushOf(2, 2, "punsubscribe", "z*"), b.Do("PUNSUBSCRIBE"))
	require.Contains(t, bulkBody(t, c.Do("INFO", "stats")), "\r\npubsub_channels:2\r\npubsub_patterns:0\r\n")
}

// MONITOR and SUBSCRIBE on one connection: lines and messages come in the
// order they happened, through one writer.
func TestMonitorAndSubscribeOnOneConnection(t *testing.T) {
	ts := harness.StartServer(t)
	m := ts.Raw(t)
	require.Equal(t, testkit.OK, m.Do("MONITOR"))
	require.Equal(t, pushOf(2, 1, "subscribe", "ch"), m.Do("SUBSCRIBE", "ch"))
	require.Equal(t, line(harness.T0, addrOf(m), quote("SUBSCRIBE", "ch")), m.Read())
	p := ts.Raw(t)
	require.Equal(t, testkit.Int(1), p.Do("PUBLISH", "ch", "hi"))
	require.Equal(t, pushOf(2, -1, "message", "ch", "hi"), m.Read())
	require.Equal(t, line(harness.T0, addrOf(p), quote("PUBLISH", "ch", "hi")), m.Read())
	require.Contains(t, p.Do("CLIENT", "LIST", "TYPE", "pubsub"), " flags=OP ")
	require.Equal(t, testkit.OK, m.Do("QUIT"))
	m.ExpectClosed()
}

// SUBSCRIBE queued inside MULTI, on a connection an event loop serves: the
// connection leaves the loop before it is queued, EXEC subscribes, and
// messages follow EXEC's reply.
func TestSubscribeInsideMulti(t *testing.T) {
	ts := harness.StartServer(t)
	c, p := ts.Raw(t), ts.Raw(t)
	require.Equal(t, testkit.OK, c.Do("MULTI"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("PING"))
	require.Equal(t, testkit.Simple("QUEUED"), c.Do("SUBSCRIBE", "ch"))
	require.Equal(t, "*2\r\n"+testkit.Simple("PONG")+pushOf(2, 1, "subscribe", "ch"), c.Do("EXEC"))
	require.Equal(t, testkit.Int(1), p.Do("PUBLISH", "ch", "after"))
	require.Equal(t, pushOf(2, -1, "message", "ch", "after"), c.Read())
	require.Equal(t, notInSubscribedMode("exec"), c.Do("EXEC"))
}
