package availability_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/rdb"
)

// Replication links that go wrong: a master whose stream or snapshot is
// corrupt or cut short, and replicas that send garbage or leave mid-sync.
// Neither side crashes; a replica drops the link and syncs again, a master
// drops the bad replica and serves the others.

// fakeMaster is a TCP server speaking a master's side of the handshake
// (PING, REPLCONF, PSYNC) to a redcell replica, leaving the test to answer
// PSYNC with whatever bytes it wants.
type fakeMaster struct {
	harness.Endpoint
	links chan *fakeLink
	errs  chan error
}

// fakeLink is one replica connection, its PSYNC read and not answered.
type fakeLink struct {
	conn  net.Conn
	psync []string // PSYNC replid offset
}

func startFakeMaster(t *testing.T) *fakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	fm := &fakeMaster{Endpoint: harness.LoopbackEndpoint(port), links: make(chan *fakeLink, 16), errs: make(chan error, 16)}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go fm.handshake(conn)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepted
		for {
			select {
			case l := <-fm.links:
				_ = l.conn.Close()
			case err := <-fm.errs:
				t.Errorf("the fake master: %v", err)
			default:
				return
			}
		}
	})
	return fm
}

func (fm *fakeMaster) handshake(conn net.Conn) {
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	rd := testkit.NewCommandReader(conn)
	for {
		args, err := rd.Next()
		if err != nil {
			_ = conn.Close()
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fm.errs <- err
			}
			return
		}
		switch strings.ToUpper(args[0]) {
		case "PING":
			_, err = io.WriteString(conn, "+PONG\r\n")
		case "REPLCONF":
			_, err = io.WriteString(conn, "+OK\r\n")
		case "PSYNC":
			_ = conn.SetDeadline(time.Time{})
			fm.links <- &fakeLink{conn: conn, psync: args}
			return
		default:
			err = fmt.Errorf("a replica's handshake sent %q", args)
		}
		if err != nil {
			_ = conn.Close()
			fm.errs <- err
			return
		}
	}
}

// next is the next replica connection to have sent PSYNC.
func (fm *fakeMaster) next(t *testing.T) *fakeLink {
	t.Helper()
	select {
	case l := <-fm.links:
		t.Cleanup(func() { _ = l.conn.Close() })
		return l
	case err := <-fm.errs:
		t.Fatalf("the fake master: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no replica connected to the fake master and sent PSYNC within 20s")
	}
	return nil
}

func (l *fakeLink) write(t *testing.T, p []byte) {
	t.Helper()
	require.NoError(t, l.conn.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := l.conn.Write(p)
	require.NoError(t, err)
}

// fakeReplID is the fake master's stream id.
const fakeReplID = "0123456789abcdef0123456789abcdef01234567"

// snapshot is an RDB of keys, each a TAT key at tat, as a master sends it.
func snapshot(t *testing.T, tat time.Time, keys ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := rdb.NewWriter(&b, []rdb.Aux{{Key: "redis-ver", Value: "7.2.0"}, {Key: "repl-id", Value: fakeReplID}}, len(keys), len(keys))
	require.NoError(t, err)
	for _, k := range keys {
		require.NoError(t, w.Write(rdb.Entry{Key: []byte(k), Value: []byte(strconv.FormatInt(tat.UnixNano(), 10)),
			ExpireAtMs: tat.UnixMilli()}))
	}
	require.NoError(t, w.Close())
	return b.Bytes()
}

// fullResync answers PSYNC with +FULLRESYNC at offset and the snapshot.
func (l *fakeLink) fullResync(t *testing.T, offset int64, snap []byte) {
	t.Helper()
	l.write(t, fmt.Appendf(nil, "+FULLRESYNC %s %d\r\n$%d\r\n%s", fakeReplID, offset, len(snap), snap))
}

// setTAT is the stream's command for key at tat.
func setTAT(key string, tat time.Time) string {
	return testkit.Command("SET", key, strconv.FormatInt(tat.UnixNano(), 10), "PXAT", strconv.FormatInt(tat.UnixMilli(), 10))
}

// A replica whose master's stream turns corrupt or is cut short logs it,
// drops the link, and reconnects asking to continue from the last command
// it applied; it serves its keys meanwhile, and the continued stream
// reaches it.
func TestReplicaDropsACorruptStreamAndReconnects(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	tat := harness.T0.Add(time.Hour)
	cases := []struct {
		name string
		bad  string
		// cut: the master closes the connection after bad.
		cut bool
	}{
		{name: "not a multibulk count", bad: "*x\r\n"},
		{name: "binary garbage", bad: "*\x00\xff\xfe\r\n\x01\x02"},
		{name: "a bulk header expected", bad: "*2\r\n:1\r\n"},
		{name: "inline garbage", bad: "\x00\x01garbage \xff\r\n"},
		{name: "an inline command", bad: "PING\r\n"},
		{name: "an empty multibulk", bad: "*0\r\n"},
		{name: "a huge bulk length", bad: "*3\r\n$3\r\nSET\r\n$99999999999\r\n"},
		{name: "a bulk length beyond proto-max-bulk-len", bad: "*3\r\n$3\r\nSET\r\n$536870913\r\n"},
		{name: "a bulk longer than announced", bad: "*2\r\n$3\r\nDELX\r\n"},
		{name: "a truncated command", bad: "*5\r\n$3\r\nSET\r\n$5\r\nlater\r\n$19\r\n17", cut: true},
		{name: "a truncated header", bad: "*5\r\n$3\r\nSET\r\n$", cut: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := harness.NewManualClock(harness.T0)
			fm := startFakeMaster(t)
			r := startReplServer(t, clock.Now)
			require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", fm.Port))
			l := fm.next(t)
			require.Equal(t, []string{"PSYNC", "?", "-1"}, l.psync)
			const start = 1000
			l.fullResync(t, start, snapshot(t, tat, "a", "b"))
			good := setTAT("c", tat)
			l.write(t, []byte(good))
			r.waitLinkUp(t)
			require.Eventually(t, func() bool { return r.Node.Status().Offset == start+int64(len(good)) },
				10*time.Second, 5*time.Millisecond)

			l.write(t, []byte(tc.bad))
			if tc.cut {
				_ = l.conn.Close()
			}
			again := fm.next(t)
			require.Equal(t, []string{"PSYNC", fakeReplID, strconv.Itoa(start + len(good) + 1)}, again.psync,
				"continuing after the last command applied")
			require.Contains(t, r.log.String(), "link to master lost")
			require.Equal(t, "PONG", r.do(t, "PING"))
			want := strconv.FormatInt(tat.UnixNano(), 10)
			require.Equal(t, []string{want, want, want, "(nil)"}, r.gets(t, []string{"a", "b", "c", "later"}))

			again.write(t, []byte("+CONTINUE\r\n"+setTAT("later", tat)))
			r.waitLinkUp(t)
			require.Eventually(t, func() bool { return r.gets(t, []string{"later"})[0] == want }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, int64(start+len(good)+len(setTAT("later", tat))), r.Node.Status().Offset)
		})
	}
}

// A snapshot streamed as Redis's diskless sync sends it ("$EOF:<mark>", the
// RDB, the mark) loads, and the stream that follows the mark applies.
func TestReplicaLoadsAStreamedSnapshot(t *testing.T) {
	tat := harness.T0.Add(time.Hour)
	clock := harness.NewManualClock(harness.T0)
	fm := startFakeMaster(t)
	r := startReplServer(t, clock.Now)
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", fm.Port))
	l := fm.next(t)
	const mark = "fedcba9876543210fedcba9876543210fedcba98"
	after := setTAT("c", tat)
	l.write(t, fmt.Appendf(nil, "+FULLRESYNC %s 300\r\n\n$EOF:%s\r\n%s%s%s", fakeReplID, mark,
		snapshot(t, tat, "a", "b"), mark, after))
	r.waitLinkUp(t)
	require.Eventually(t, func() bool { return r.Node.Status().Offset == 300+int64(len(after)) }, 10*time.Second, 5*time.Millisecond)
	want := strconv.FormatInt(tat.UnixNano(), 10)
	require.Equal(t, []string{want, want, want}, r.gets(t, []string{"a", "b", "c"}))
	require.Contains(t, r.log.String(), "streamed=true")
}

// A snapshot cut short or corrupt: the replica, which had begun replacing
// its keys, asks for a full resynchronization next (PSYNC ? -1), not to
// continue a stream its store no longer holds, and serves the next
// snapshot's keys.
func TestReplicaResyncsInFullAfterABrokenSnapshot(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	tat := harness.T0.Add(time.Hour)
	cases := []struct {
		name string
		// send is what follows +FULLRESYNC, given a valid snapshot.
		send func(snap []byte) string
	}{
		{name: "truncated", send: func(snap []byte) string { return fmt.Sprintf("$%d\r\n%s", len(snap), snap[:len(snap)*2/3]) }},
		{name: "a bad checksum", send: func(snap []byte) string {
			bad := bytes.Clone(snap)
			bad[len(bad)-1] ^= 0xff
			return fmt.Sprintf("$%d\r\n%s", len(bad), bad)
		}},
		{name: "not an RDB", send: func(snap []byte) string {
			return fmt.Sprintf("$%d\r\n%s", len(snap), bytes.Repeat([]byte{0xfe}, len(snap)))
		}},
		{name: "a huge length", send: func([]byte) string { return "$99999999999999999999\r\n" }},
		{name: "a streamed snapshot cut short", send: func(snap []byte) string {
			return "$EOF:" + fakeReplID + "\r\n" + string(snap[:len(snap)/2])
		}},
		{name: "a streamed snapshot with a wrong end mark", send: func(snap []byte) string {
			return "$EOF:" + fakeReplID + "\r\n" + string(snap) + strings.Repeat("x", 40)
		}},
		{name: "a streamed snapshot's mark too short", send: func(snap []byte) string {
			return "$EOF:abc\r\n" + string(snap) + "abc"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := harness.NewManualClock(harness.T0)
			fm := startFakeMaster(t)
			r := startReplServer(t, clock.Now)
			require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", fm.Port))
			l := fm.next(t)
			// A first, good sync, then a break.
			l.fullResync(t, 100, snapshot(t, tat, keyNames("old:", 50)...))
			r.waitLinkUp(t)
			_ = l.conn.Close()

			l = fm.next(t)
			require.Equal(t, []string{"PSYNC", fakeReplID, "101"}, l.psync)
			snap := snapshot(t, tat, keyNames("new:", 500)...)
			l.write(t, fmt.Appendf(nil, "+FULLRESYNC %s 5000\r\n%s", fakeReplID, tc.send(snap)))
			_ = l.conn.Close()

			l = fm.next(t)
			require.Equal(t, []string{"PSYNC", "?", "-1"}, l.psync, "after a broken snapshot, a full resynchronization")
			require.Equal(t, "PONG", r.do(t, "PING"))
			l.fullResync(t, 9000, snap)
			r.waitLinkUp(t)
			want := strconv.FormatInt(tat.UnixNano(), 10)
			for i, v := range r.gets(t, keyNames("new:", 500)) {
				require.Equal(t, want, v, "new:%d", i)
			}
			require.Equal(t, int64(500), r.do(t, "DBSIZE"))
			require.Equal(t, int64(9000), r.Node.Status().Offset)
		})
	}
}

// fakeReplica shakes hands with m as a replica that reads only a snapshot
// sent with its length (no capa eof, as before Redis 2.8.18) up to PSYNC ?
// -1, and reads the +FULLRESYNC line and the snapshot's length.
func fakeReplica(t *testing.T, m *replServer) (c *testkit.Conn, size int) {
	t.Helper()
	c = m.Raw(t)
	require.Equal(t, "+PONG\r\n", c.Do("PING"))
	require.Equal(t, testkit.OK, c.Do("REPLCONF", "listening-port", "7777"))
	require.Equal(t, testkit.OK, c.Do("REPLCONF", "capa", "psync2"))
	c.Write(testkit.Command("PSYNC", "?", "-1"))
	require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := c.Reader.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^\+FULLRESYNC [0-9a-f]{40} \d+\r\n$`, line)
	line, err = c.Reader.ReadString('\n')
	require.NoError(t, err)
	size, err = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "$"), "\r\n"))
	require.NoError(t, err, "%q", line)
	return c, size
}

// A replica that said capa eof (every Redis since 2.8.18, and redcell) gets
// its snapshot streamed as the master writes it: "$EOF:<40-byte mark>", the
// RDB, the mark, then the stream, as Redis's diskless sync sends it.
func TestMasterStreamsTheSnapshotToAReplicaThatReadsEOF(t *testing.T) {
	clock := harness.NewManualClock(harness.T0)
	m := startReplServer(t, clock.Now)
	keys := keyNames("user:", 20000)
	m.throttleAll(t, keys, func(int) int { return 1 })
	c := m.Raw(t)
	require.Equal(t, testkit.OK, c.Do("REPLCONF", "listening-port", "7777"))
	require.Equal(t, testkit.OK, c.Do("REPLCONF", "capa", "eof", "capa", "psync2"))
	c.Write(testkit.Command("PSYNC", "?", "-1"))
	require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := c.Reader.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^\+FULLRESYNC [0-9a-f]{40} \d+\r\n$`, line)
	line, err = c.Reader.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^\$EOF:[0-9a-f]{40}\r\n$`, line)
	mark := line[len("$EOF:") : len(line)-2]

	rd, err := rdb.NewReader(c.Reader, rdb.ReaderOptions{})
	require.NoError(t, err)
	n := 0
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "user:", string(e.Key[:5]))
		n++
	}
	require.Equal(t, len(keys), n)
	got := make([]byte, len(mark))
	_, err = io.ReadFull(c.Reader, got)
	require.NoError(t, err)
	require.Equal(t, mark, string(got), "the RDB ends with its mark")
	require.Regexp(t, `bytes=\d+ offset=\d+ streamed=true`, m.log.String())

	// The stream follows the mark.
	m.do(t, "CL.THROTTLE", "after", 10, 1, 60)
	stream := testkit.NewCommandReader(c.Reader)
	for {
		args, err := stream.Next()
		require.NoError(t, err)
		if args[0] == "SET" {
			require.Equal(t, "after", args[1])
			break
		}
	}
}

// A replica that sends garbage after PSYNC, or leaves in the middle of the
// snapshot: the master drops it and goes on serving, and its other
// replica's link is untouched.
func TestMasterDropsABadReplicaAndServesTheOthers(t *testing.T) {
	t.Parallel() // it mostly waits (real timeouts, a replica syncing): beside the others
	cases := []struct {
		name string
		// act misbehaves on the fake replica's connection, whose snapshot
		// is size bytes; closed reports that the master closes it.
		act    func(t *testing.T, c *testkit.Conn, size int)
		closed bool
	}{
		{name: "garbage during the snapshot", closed: true, act: func(t *testing.T, c *testkit.Conn, _ int) {
			c.Write("*x\r\n\x00\xff")
		}},
		{name: "garbage while streaming", closed: true, act: func(t *testing.T, c *testkit.Conn, size int) {
			_, err := io.CopyN(io.Discard, c.Reader, int64(size))
			require.NoError(t, err)
			c.Write("*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$-5\r\n") // a negative bulk length
		}},
		{name: "gone mid-snapshot", act: func(t *testing.T, c *testkit.Conn, size int) {
			_, err := io.CopyN(io.Discard, c.Reader, int64(size/3))
			require.NoError(t, err)
			require.NoError(t, c.Conn.Close())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := harness.NewManualClock(harness.T0)
			m, r := startReplServer(t, clock.Now), startReplServer(t, clock.Now)
			keys := keyNames("user:", 20000)
			m.throttleAll(t, keys, func(int) int { return 1 })
			r.replicaOf(t, m)
			caughtUp(t, m, r)

			c, size := fakeReplica(t, m)
			require.Greater(t, size, 500<<10)
			require.Equal(t, "2", m.info(t, "connected_slaves"))
			tc.act(t, c, size)
			if tc.closed {
				require.NoError(t, c.Conn.SetReadDeadline(time.Now().Add(10*time.Second)))
				_, err := io.Copy(io.Discard, c.Reader)
				require.NoError(t, err, "the master closes the connection")
			}
			require.Eventually(t, func() bool { return m.info(t, "connected_slaves") == "1" }, 10*time.Second, 5*time.Millisecond)
			require.Regexp(t, `^ip=127\.0\.0\.1,port=`+strconv.Itoa(r.Port)+`,state=online,`, m.info(t, "slave0"))

			m.throttleAll(t, keys[:1000], func(int) int { return 2 })
			caughtUp(t, m, r)
			requireConverged(t, m, keys, r)
			st := m.Node.Status()
			require.Equal(t, int64(2), st.SyncFull, "the replica's and the fake's")
			require.Zero(t, st.SyncPartialOK, "the replica never reconnected")
			require.NotContains(t, r.log.String(), "link to master lost")
		})
	}
}

// While a replica loads a snapshot that is slow to come, it answers INFO
// and ROLE (as Sentinel asks every few seconds) with the sync in progress,
// and PING; then it serves the snapshot once it is whole.
func TestReplicaAnswersWhileItLoadsASlowSnapshot(t *testing.T) {
	tat := harness.T0.Add(time.Hour)
	clock := harness.NewManualClock(harness.T0)
	fm := startFakeMaster(t)
	r := startReplServer(t, clock.Now)
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", fm.Port))
	l := fm.next(t)
	snap := snapshot(t, tat, keyNames("k", 1000)...)
	l.write(t, fmt.Appendf(nil, "+FULLRESYNC %s 77\r\n$%d\r\n%s", fakeReplID, len(snap), snap[:len(snap)/2]))
	require.Eventually(t, func() bool { return r.Node.Status().SyncInProgress }, 10*time.Second, 5*time.Millisecond)

	answered := make(chan error, 1)
	go func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := r.rdb.Info(c, "replication").Result()
		if err == nil {
			_, err = r.rdb.Do(c, "ROLE").Result()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("INFO or ROLE did not answer while the snapshot loads")
	}
	require.Equal(t, "1", r.info(t, "master_sync_in_progress"))
	require.Equal(t, "down", r.info(t, "master_link_status"))
	require.Equal(t, []any{"slave", "127.0.0.1", int64(fm.Port), "sync", int64(-1)}, r.do(t, "ROLE"),
		"as Redis, no offset until the link is up")

	l.write(t, snap[len(snap)/2:])
	r.waitLinkUp(t)
	require.Equal(t, int64(1000), r.do(t, "DBSIZE"))
	require.Equal(t, "77", r.info(t, "master_repl_offset"))
	require.Equal(t, []any{"slave", "127.0.0.1", int64(fm.Port), "connected", int64(77)}, r.do(t, "ROLE"))
}
