package availability_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
)

// Client-side caching (CLIENT TRACKING) as Redis serves it: each script
// below runs against a real redis-server and against redcell, and what the
// tracking connections see (replies, invalidation pushes, Pub/Sub messages,
// errors, in order) must be the same bytes, client IDs aside. A write is
// SET on Redis and an allowed CL.THROTTLE on redcell (neither has the
// other's); reads are EXISTS and TYPE, which answer the same on both.

// trackStep is one step of a tracking script, on connection c ("A", "B",
// ...; each opened when first named):
//
//   - do: the command, whose reply and any push before it are recorded;
//     "$X" in an argument is replaced by connection X's client ID.
//   - write: the key to write (SET or CL.THROTTLE), from c; nothing recorded.
//   - pipeline: several commands sent at once, where "write k" is a write;
//     everything up to the last reply is recorded.
//   - sync: PING, recording everything that arrives before its reply: the
//     pushes and messages sent to c meanwhile.
//   - close: c is closed.
type trackStep struct {
	c        string
	do       []string
	write    string
	pipeline [][]string
	sync     bool
	close    bool
}

// The steps, by kind: on(c, args...) sends a command, writes(c, key)
// writes, syncs(c) is a PING, pipelines(c, cmds...) a pipeline, closes(c)
// closes.
func on(c string, args ...string) trackStep          { return trackStep{c: c, do: args} }
func writes(c, key string) trackStep                 { return trackStep{c: c, write: key} }
func syncs(c string) trackStep                       { return trackStep{c: c, sync: true} }
func pipelines(c string, cmds ...[]string) trackStep { return trackStep{c: c, pipeline: cmds} }
func closes(c string) trackStep                      { return trackStep{c: c, close: true} }

// trackRun is one script's run against one server.
type trackRun struct {
	t      *testing.T
	e      harness.Endpoint
	redis  bool // the server is redis-server: writes are SET
	conns  map[string]*testkit.Conn
	ids    map[string]string
	out    strings.Builder
	closed map[string]bool
}

func (r *trackRun) conn(name string) *testkit.Conn {
	if c := r.conns[name]; c != nil {
		return c
	}
	c := r.e.Raw(r.t)
	id := c.Do("CLIENT", "ID")
	r.conns[name], r.ids[name] = c, strings.TrimSuffix(strings.TrimPrefix(id, ":"), "\r\n")
	return c
}

// writeCmd is the command that writes key on this server.
func (r *trackRun) writeCmd(key string) []string {
	if r.redis {
		return []string{"SET", key, "v"}
	}
	return []string{"CL.THROTTLE", key, "1000000", "1", "1"}
}

func (r *trackRun) args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "$") {
			if id, ok := r.ids[a[1:]]; ok {
				out[i] = id
			}
		}
	}
	return out
}

// readUntilReply records the frames c receives up to and including the
// next one that is not a push (or, for a RESP2 subscriber's PING, its
// pong). A write's reply, which differs between the servers, is recorded
// as <write> (masked).
func (r *trackRun) readUntilReply(name string, pong, masked bool) {
	c := r.conn(name)
	for {
		frame := c.Read()
		isPush := frame[0] == '>' || (pong && strings.HasPrefix(frame, "*3\r\n$7\r\nmessage\r\n"))
		if !isPush && masked {
			fmt.Fprintf(&r.out, "%s< <write>\n", name)
			return
		}
		fmt.Fprintf(&r.out, "%s< %q\n", name, frame)
		if !isPush {
			return
		}
	}
}

func (r *trackRun) step(s trackStep) {
	switch {
	case s.close:
		_ = r.conn(s.c).Conn.Close()
		r.closed[s.c] = true
		// Wait until the server has let it go: its ID no longer lists.
		require.Eventually(r.t, func() bool {
			return !strings.Contains(r.conn("_probe").Do("CLIENT", "LIST"), "id="+r.ids[s.c]+" ")
		}, 10*time.Second, time.Millisecond)
	case s.write != "":
		r.conn(s.c).Do(r.writeCmd(s.write)...)
	case s.sync:
		c := r.conn(s.c)
		c.Write(testkit.Command("PING"))
		fmt.Fprintf(&r.out, "%s> PING\n", s.c)
		r.readUntilReply(s.c, true, false)
	case s.pipeline != nil:
		c := r.conn(s.c)
		var b strings.Builder
		for _, cmd := range s.pipeline {
			if cmd[0] == "write" {
				cmd = r.writeCmd(cmd[1])
			}
			b.WriteString(testkit.Command(r.args(cmd)...))
		}
		c.Write(b.String())
		fmt.Fprintf(&r.out, "%s> pipeline of %d\n", s.c, len(s.pipeline))
		for _, cmd := range s.pipeline {
			r.readUntilReply(s.c, false, cmd[0] == "write")
		}
	default:
		c := r.conn(s.c)
		args := r.args(s.do)
		c.Write(testkit.Command(args...))
		fmt.Fprintf(&r.out, "%s> %s\n", s.c, strings.Join(s.do, " "))
		// HELLO's reply names the server, its version and the client's ID.
		r.readUntilReply(s.c, false, strings.EqualFold(s.do[0], "hello"))
	}
}

// transcript returns what the script's connections saw, each client ID
// where one is told (GETREDIR, TRACKINGINFO's redirect, a broken
// redirection's push) replaced by its connection's name.
func (r *trackRun) transcript() string {
	out := r.out.String()
	for name, id := range r.ids {
		out = strings.ReplaceAll(out, `redirect\r\n:`+id+`\r\n`, `redirect\r\n:$`+name+`\r\n`)
		out = strings.ReplaceAll(out, `tracking-redir-broken\r\n:`+id+`\r\n`, `tracking-redir-broken\r\n:$`+name+`\r\n`)
		out = regexp.MustCompile(`(GETREDIR\n\w+< ":)`+id+`(\\r\\n")`).ReplaceAllString(out, "${1}$$"+name+"${2}")
	}
	return out
}

// runTracking runs script against a real redis-server and against redcell
// and requires the same transcript of both, which it returns.
func runTracking(t *testing.T, redisServer harness.Endpoint, script []trackStep) string {
	t.Helper()
	var transcripts [2]string
	for i, e := range []harness.Endpoint{redisServer, harness.StartServer(t).Endpoint} {
		r := &trackRun{t: t, e: e, redis: i == 0, conns: map[string]*testkit.Conn{}, ids: map[string]string{}, closed: map[string]bool{}}
		r.conn("W").Do("FLUSHALL")
		for _, s := range script {
			r.step(s)
		}
		transcripts[i] = r.transcript()
	}
	require.Equal(t, transcripts[0], transcripts[1], "redis-server's transcript, then redcell's")
	return transcripts[1]
}

// The default mode under RESP3: a key read is invalidated once when it
// changes, by a push; read again, again; the reader's own change is told
// after its reply; within a pipeline, after the reply of the command that
// made it; a flush invalidates everything with a null; OFF stops it all.
func TestTrackingDefaultModeAsRedis(t *testing.T) {
	got := runTracking(t, harness.StartRedisServer(t), []trackStep{
		on("A", "HELLO", "3"),
		on("A", "CLIENT", "TRACKING", "ON"),
		on("A", "EXISTS", "k"),
		on("A", "TYPE", "k2"),
		writes("W", "k"),
		syncs("A"),
		writes("W", "k"),
		syncs("A"), // not tracked any more: nothing
		on("A", "EXISTS", "k"),
		writes("A", "k"), // its own change, after the reply
		syncs("A"),
		on("A", "EXISTS", "k"),
		on("W", "DEL", "k", "k2", "absent"),
		syncs("A"),
		pipelines("A", []string{"EXISTS", "p"}, []string{"write", "p"}, []string{"PING"}),
		on("A", "EXISTS", "k"),
		on("A", "EXISTS", "k3"),
		writes("W", "k"),
		on("W", "FLUSHALL"),
		syncs("A"),
		writes("W", "k3"), // the flush emptied the table
		syncs("A"),
		on("A", "EXISTS", "k"),
		on("A", "CLIENT", "TRACKING", "OFF"),
		writes("W", "k"),
		syncs("A"),
		on("A", "CLIENT", "TRACKINGINFO"),
		on("A", "CLIENT", "GETREDIR"),
	})
	require.Contains(t, got, `A< ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"`)
	require.Contains(t, got, `A< ">2\r\n$10\r\ninvalidate\r\n_\r\n"`, "the flush")
}

// RESP2 with REDIRECT to a connection subscribed to __redis__:invalidate:
// the invalidations are Pub/Sub messages whose payload is an array of keys,
// and a flush's is a null bulk string; without a redirection a RESP2
// connection is sent nothing. A redirection whose target has gone is
// reported by a tracking-redir-broken push under RESP3, and by
// TRACKINGINFO.
func TestTrackingRedirectAsRedis(t *testing.T) {
	got := runTracking(t, harness.StartRedisServer(t), []trackStep{
		on("R", "SUBSCRIBE", "__redis__:invalidate"),
		on("B", "CLIENT", "TRACKING", "ON", "REDIRECT", "$R"),
		on("B", "CLIENT", "GETREDIR"),
		on("B", "EXISTS", "k"),
		on("B", "CLIENT", "TRACKINGINFO"),
		writes("W", "k"),
		syncs("R"),
		on("W", "FLUSHALL"),
		syncs("R"),
		on("N", "CLIENT", "TRACKING", "ON"), // RESP2, no redirection
		on("N", "EXISTS", "k"),
		writes("W", "k"),
		syncs("N"),
		on("E", "PING"),
		on("D", "HELLO", "3"),
		on("D", "CLIENT", "TRACKING", "ON", "REDIRECT", "$E"),
		on("D", "EXISTS", "x"),
		closes("E"),
		writes("W", "x"),
		syncs("D"),
		on("D", "CLIENT", "TRACKINGINFO"),
		on("D", "CLIENT", "TRACKING", "ON", "REDIRECT", "$R"), // a new redirection mends it
		on("D", "CLIENT", "TRACKINGINFO"),
	})
	require.Contains(t, got, `R< "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"`)
	require.Contains(t, got, `R< "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"`)
	require.Contains(t, got, `D< ">2\r\n$21\r\ntracking-redir-broken\r\n:$E\r\n"`)
}

// BCAST: every change of a key under a prefix is told, read or not, the
// prefixes listed in TRACKINGINFO in byte order; PREFIX adds to those held;
// no PREFIX is every key. OPTIN tracks only the reads after CLIENT CACHING
// YES, OPTOUT all but those after CLIENT CACHING NO, the answer lasting one
// command (a transaction's, inside MULTI). NOLOOP spares a client its own
// changes.
func TestTrackingModesAsRedis(t *testing.T) {
	got := runTracking(t, harness.StartRedisServer(t), []trackStep{
		on("A", "HELLO", "3"),
		on("A", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "u:", "PREFIX", "v:"),
		writes("W", "u:1"),
		writes("W", "x"),
		writes("W", "v:2"),
		syncs("A"),
		on("A", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "w:"),
		on("A", "CLIENT", "TRACKINGINFO"),
		writes("W", "w:1"),
		syncs("A"),
		on("B", "HELLO", "3"),
		on("B", "CLIENT", "TRACKING", "ON", "BCAST"),
		writes("W", "anything"),
		syncs("B"),
		on("B", "CLIENT", "TRACKINGINFO"),

		on("I", "HELLO", "3"),
		on("I", "CLIENT", "TRACKING", "ON", "OPTIN"),
		on("I", "EXISTS", "a"),
		on("I", "CLIENT", "CACHING", "YES"),
		on("I", "CLIENT", "TRACKINGINFO"),
		on("I", "EXISTS", "b"),
		on("I", "CLIENT", "TRACKINGINFO"),
		on("I", "EXISTS", "c"),
		on("I", "CLIENT", "CACHING", "YES"),
		on("I", "MULTI"),
		on("I", "EXISTS", "d"),
		on("I", "EXISTS", "e"),
		on("I", "EXEC"),
		writes("W", "a"), writes("W", "b"), writes("W", "c"), writes("W", "d"), writes("W", "e"),
		syncs("I"),

		on("O", "HELLO", "3"),
		on("O", "CLIENT", "TRACKING", "ON", "OPTOUT"),
		on("O", "CLIENT", "CACHING", "NO"),
		on("O", "EXISTS", "f"),
		on("O", "EXISTS", "g"),
		writes("W", "f"), writes("W", "g"),
		syncs("O"),

		on("L", "HELLO", "3"),
		on("L", "CLIENT", "TRACKING", "ON", "NOLOOP"),
		on("L", "EXISTS", "own"),
		writes("L", "own"),
		syncs("L"),
		on("L", "EXISTS", "other"),
		writes("W", "other"),
		syncs("L"),
		on("LB", "HELLO", "3"),
		on("LB", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "n:"),
		writes("LB", "n:own"),
		writes("W", "n:other"),
		syncs("LB"),
		on("LB", "CLIENT", "TRACKINGINFO"),
		on("L", "CLIENT", "TRACKINGINFO"),
	})
	require.Contains(t, got, `A< ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nu:1\r\n"`)
	require.NotContains(t, got, "$5\r\nn:own", "NOLOOP")
}

// Every refusal of CLIENT TRACKING and CLIENT CACHING, worded and ordered as
// Redis's, and the subcommands' arity.
func TestTrackingErrorsAsRedis(t *testing.T) {
	runTracking(t, harness.StartRedisServer(t), []trackStep{
		on("B", "PING"),
		on("A", "CLIENT", "TRACKING"),
		on("A", "CLIENT", "TRACKING", "maybe"),
		on("A", "CLIENT", "TRACKING", "on", "bogus"),
		on("A", "CLIENT", "TRACKING", "on", "REDIRECT"),
		on("A", "CLIENT", "TRACKING", "on", "REDIRECT", "x"),
		on("A", "CLIENT", "TRACKING", "on", "REDIRECT", "0"),
		on("A", "CLIENT", "TRACKING", "on", "REDIRECT", "999999"),
		on("A", "CLIENT", "TRACKING", "on", "REDIRECT", "$B", "REDIRECT", "$B"),
		on("A", "CLIENT", "TRACKING", "on", "PREFIX", "a"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "OPTIN"),
		on("A", "CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "ab"),
		on("A", "CLIENT", "TRACKING", "off", "REDIRECT", "999999"),
		on("A", "CLIENT", "TRACKING", "off", "BCAST", "PREFIX", "a"),
		on("A", "CLIENT", "CACHING", "yes"),
		on("A", "CLIENT", "CACHING"),
		on("A", "CLIENT", "GETREDIR", "x"),
		on("A", "CLIENT", "TRACKINGINFO", "x"),
		on("A", "CLIENT", "TRACKINGINFO"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a"),
		on("A", "CLIENT", "TRACKING", "on"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "abc"),
		on("A", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b"),
		on("A", "CLIENT", "CACHING", "yes"),
		on("A", "CLIENT", "TRACKINGINFO"),
		on("A", "CLIENT", "TRACKING", "off"),
		on("A", "CLIENT", "TRACKING", "on", "OPTIN"),
		on("A", "CLIENT", "TRACKING", "on", "OPTOUT"),
		on("A", "CLIENT", "CACHING", "no"),
		on("A", "CLIENT", "CACHING", "maybe"),
		on("A", "CLIENT", "TRACKING", "off"),
		on("A", "CLIENT", "TRACKING", "on", "OPTOUT"),
		on("A", "CLIENT", "CACHING", "yes"),
		on("A", "CLIENT", "TRACKING", "on", "OPTIN"),
		on("A", "RESET"),
		on("A", "CLIENT", "TRACKINGINFO"),
	})
}

// What redcell says of its tracking clients: CLIENT LIST's flags and redir,
// INFO's tracking_clients and the table's totals, as Redis names them.
func TestTrackingInClientListAndInfo(t *testing.T) {
	ts := harness.StartServer(t)
	r := ts.Raw(t)
	rid := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLIENT", "ID"), ":"), "\r\n")
	require.Equal(t, "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n", r.Do("SUBSCRIBE", "__redis__:invalidate"))
	a := ts.Raw(t)
	require.Equal(t, testkit.Simple("OK"), a.Do("CLIENT", "TRACKING", "ON", "REDIRECT", rid))
	require.Equal(t, testkit.Int(0), a.Do("EXISTS", "k1", "k2"))
	b := ts.Raw(t)
	b.Do("HELLO", "3")
	require.Equal(t, testkit.Simple("OK"), b.Do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "y"))
	b.Do("EXISTS", "k1")

	info := a.DoReply("CLIENT", "INFO").Text
	require.Contains(t, info, " flags=t ")
	require.Contains(t, info, " redir="+rid+" ")
	require.Contains(t, b.DoReply("CLIENT", "INFO").Text, " flags=tB ")
	require.Contains(t, r.DoReply("PING").String(), "pong")
	all := ts.Raw(t).DoReply("INFO").Text
	for _, line := range []string{"tracking_clients:2", "tracking_total_keys:2", "tracking_total_items:2", "tracking_total_prefixes:2"} {
		require.Contains(t, all, line+"\r\n")
	}
	require.NoError(t, r.Conn.Close())
	require.Eventually(t, func() bool { return !strings.Contains(ts.Raw(t).DoReply("CLIENT", "LIST").Text, "id="+rid+" ") },
		10*time.Second, time.Millisecond)
	ts.Raw(t).Do("CL.THROTTLE", "k1", "1", "1", "1")
	require.Eventually(t, func() bool { return strings.Contains(a.DoReply("CLIENT", "INFO").Text, " flags=tR ") },
		10*time.Second, time.Millisecond, "the redirection is broken once an invalidation finds its target gone")
}

// Invalidations reach a tracking client on loopback within 10 ms of the
// change, whether the change is a decision, a DEL or a FLUSHALL made by
// another client: measured over 200 changes, 99% of them (on two cores
// shared with the race detector and the other packages' tests, a lone
// scheduling hiccup is not the server's; the slowest is logged).
func TestInvalidationsArriveWithin10ms(t *testing.T) {
	ts := harness.StartServer(t)
	a := ts.Raw(t)
	a.Do("HELLO", "3")
	require.Equal(t, testkit.Simple("OK"), a.Do("CLIENT", "TRACKING", "ON"))
	w := ts.GoRedis(t)
	took := make([]time.Duration, 0, 200)
	for i := range 200 {
		if i%3 == 1 {
			require.NoError(t, w.Do(harness.Ctx(t), "CL.THROTTLE", "k", 1000, 1, 1).Err()) // for DEL to delete
		}
		a.Do("EXISTS", "k")
		start := time.Now()
		switch i % 3 {
		case 0:
			require.NoError(t, w.Do(harness.Ctx(t), "CL.THROTTLE", "k", 1000, 1, 1).Err())
		case 1:
			require.NoError(t, w.Del(harness.Ctx(t), "k").Err())
		default:
			require.NoError(t, w.FlushAll(harness.Ctx(t)).Err())
		}
		push := a.Read()
		took = append(took, time.Since(start))
		require.True(t, strings.HasPrefix(push, ">2\r\n$10\r\ninvalidate\r\n"), "%q", push)
	}
	slices.Sort(took)
	t.Logf("invalidations of 200 changes: median %v, p99 %v, slowest %v", took[100], took[197], took[199])
	require.Less(t, took[197], 10*time.Millisecond, "p99")
}

// rueidis's client-side caching, its default, now works against redcell:
// a read cached locally is served from its cache until the key changes, and
// read again from the server after.
func TestRueidisClientSideCaching(t *testing.T) {
	ts := harness.StartServer(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.Addr}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := ts.GoRedis(t)
	require.NoError(t, w.Do(harness.Ctx(t), "CL.THROTTLE", "k", 10, 1, 60).Err())

	get := func() (string, bool) {
		resp := c.DoCache(harness.Ctx(t), c.B().Get().Key("k").Cache(), time.Minute)
		v, err := resp.ToString()
		require.NoError(t, err)
		return v, resp.IsCacheHit()
	}
	first, hit := get()
	require.False(t, hit)
	again, hit := get()
	require.True(t, hit, "the second read is the cache's")
	require.Equal(t, first, again)

	require.NoError(t, w.Do(harness.Ctx(t), "CL.THROTTLE", "k", 10, 1, 60).Err())
	require.Eventually(t, func() bool {
		v, hit := get()
		return !hit && v != first
	}, 10*time.Second, time.Millisecond, "the change reaches rueidis's cache: the next read is the server's, and new")
	tat, err := strconv.ParseInt(first, 10, 64)
	require.NoError(t, err)
	require.Equal(t, harness.T0.Add(time.Minute).UnixNano(), tat, "the first read was the first decision's TAT")
}

// go-redis is a RESP3 client: CLIENT TRACKING on its connection is
// accepted, the pushes it then receives do not disturb its replies.
func TestTrackingWithGoRedis(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t, func(o *redis.Options) { o.PoolSize = 1 })
	require.NoError(t, rdb.Do(harness.Ctx(t), "CLIENT", "TRACKING", "ON").Err())
	require.NoError(t, rdb.Exists(harness.Ctx(t), "k").Err())
	require.NoError(t, rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 1).Err())
	got, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 1).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 3, -1, 2}, got)
}

// resp3Tracking opens a RESP3 connection to e that tracks in the default
// mode.
func resp3Tracking(t *testing.T, e harness.Endpoint) *testkit.Conn {
	t.Helper()
	c := e.Raw(t)
	c.Do("HELLO", "3")
	require.Equal(t, testkit.Simple("OK"), c.Do("CLIENT", "TRACKING", "ON"))
	return c
}

// requireInvalidated reads the next thing c is sent: the invalidation of
// key ("" for every key, a flush).
func requireInvalidated(t *testing.T, c *testkit.Conn, key string) {
	t.Helper()
	want := ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	if key != "" {
		want = ">2\r\n$10\r\ninvalidate\r\n" + testkit.Bulks(key)
	}
	require.Equal(t, want, c.Read())
}

// A key that expires is invalidated, whether a read finds it expired or the
// expiry cycle sweeps it.
func TestTrackingTellsOfExpiry(t *testing.T) {
	ts := harness.StartServer(t)
	a := resp3Tracking(t, ts.Endpoint)
	w := ts.Raw(t)
	w.Do("CL.THROTTLE", "lazy", "0", "1", "1")
	w.Do("CL.THROTTLE", "swept", "0", "1", "2")
	require.Equal(t, testkit.Int(2), a.Do("EXISTS", "lazy", "swept"))
	ts.Clock.Advance(time.Second)
	require.Equal(t, testkit.Int(0), w.Do("EXISTS", "lazy"))
	requireInvalidated(t, a, "lazy")
	ts.Clock.Advance(time.Second)
	require.Equal(t, 1, ts.Store.ExpireSome(gcra.InstantOf(ts.Clock.Now()), 100))
	requireInvalidated(t, a, "swept")
}

// A replica's clients are told of what its master's stream changes (a
// decision, DEL, FLUSHALL: the stream carries the deletion of each key the
// master held, so the replica tells of each) and of a full sync, which
// replaces every key (a flush).
func TestTrackingOnAReplica(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m, r := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
	r.replicaOf(t, m)
	a := resp3Tracking(t, r.Endpoint)

	m.do(t, "CL.THROTTLE", "k", 9, 1, 60)
	caughtUp(t, m, r)
	require.Equal(t, testkit.Int(1), a.Do("EXISTS", "k"))
	m.do(t, "CL.THROTTLE", "k", 9, 1, 60)
	requireInvalidated(t, a, "k")
	require.Equal(t, testkit.Int(1), a.Do("EXISTS", "k"))
	m.do(t, "DEL", "k")
	requireInvalidated(t, a, "k")
	m.do(t, "CL.THROTTLE", "k", 9, 1, 60)
	caughtUp(t, m, r)
	require.Equal(t, testkit.Int(1), a.Do("EXISTS", "k"))
	m.do(t, "FLUSHALL")
	requireInvalidated(t, a, "k")

	other := startReplServer(t, clock.Now)
	other.do(t, "CL.THROTTLE", "o", 9, 1, 60)
	r.replicaOf(t, other) // a full sync from a master with another history
	requireInvalidated(t, a, "")
	require.Equal(t, testkit.Int(1), a.Do("EXISTS", "o"))
}

// A node whose slot moves away drops its keys, and tells its tracking
// clients of each.
func TestTrackingTellsOfASlotMovedAway(t *testing.T) {
	nodes := startReshardCluster(t, 3)
	a, b := nodes[0], nodes[1]
	slot := 0
	key := keysOf([]int{slot}, 1)[slot][0]
	require.NoError(t, a.rdb.Do(harness.Ctx(t), "CL.THROTTLE", key, 9, 1, 60).Err())
	c := resp3Tracking(t, a.Endpoint)
	require.Equal(t, testkit.Int(1), c.Do("EXISTS", key))
	migrateByHand(t, a, b, nodes, []int{slot}, 1, func() {})
	requireInvalidated(t, c, key)
}
