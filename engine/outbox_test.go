package engine

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recordingWriter keeps what an outbox writes, for reading once it has ended.
type recordingWriter struct {
	mu  sync.Mutex
	got []byte
	err error // returned by every write, once set
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.got = append(w.got, p...)
	return len(p), nil
}

func (w *recordingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.got)
}

// newOutbox starts an outbox writing to w with a backlog of limit, for a
// connection without a network, which Kill only marks.
func newOutbox(w io.Writer, limit int) (*Outbox, *Conn) {
	c := &Conn{done: make(chan struct{}), fd: -1}
	o := &Outbox{c: c, w: w, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o, c
}

func waitOutbox(t *testing.T, f *Outbox) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the outbox's writer did not end")
	}
}

// What is pushed is written in the order it was pushed, whoever pushed it;
// stop lets the writer write what is queued before it ends, and nothing is
// taken after.
func TestOutboxWritesInOrder(t *testing.T) {
	var w recordingWriter
	f, c := newOutbox(&w, 1<<20)
	require.True(t, f.pushReplies([]byte("+OK\r\n")))
	require.True(t, f.Push([]byte("one ")))
	require.True(t, f.Push(nil))
	require.True(t, f.pushReplies([]byte(":1\r\n")))
	require.True(t, f.Push([]byte("two")))
	f.Stop()
	waitOutbox(t, f)
	require.Equal(t, "+OK\r\none :1\r\ntwo", w.String())
	require.False(t, f.Push([]byte("late")), "a stopped outbox takes nothing")
	require.False(t, c.Killed(), "stopping is not a disconnection")
}

// A write that fails (the connection is gone) disconnects the client and
// ends the writer; the outbox takes nothing after.
func TestOutboxWriteFailure(t *testing.T) {
	w := recordingWriter{err: errors.New("connection reset")}
	f, c := newOutbox(&w, 1<<20)
	require.True(t, f.Push([]byte("lost")))
	waitOutbox(t, f)
	require.True(t, c.Killed())
	require.False(t, f.Push([]byte("more")))
}

// The backlog counts what waits unwritten, not what was written: a client
// that keeps up may be sent any amount.
func TestOutboxBacklogCountsWhatWaits(t *testing.T) {
	var w recordingWriter
	f, c := newOutbox(&w, 100)
	chunk := make([]byte, 60)
	for i := range 50 {
		require.True(t, f.Push(chunk), "push %d", i)
		require.Eventually(t, func() bool { return len(w.String()) == 60*(i+1) }, 10*time.Second, time.Millisecond)
	}
	require.False(t, c.Killed())
	f.Stop()
	waitOutbox(t, f)
}

// An outbox's backlog is the output limit, or the default one without it.
func TestOutboxBacklog(t *testing.T) {
	require.Equal(t, 64<<10, Limits{MaxOutput: 64 << 10}.OutboxBacklog())
	require.Equal(t, DefaultMaxOutput, Limits{MaxOutput: -1}.OutboxBacklog())
}

// While held, what others push waits for the connection's next replies and
// follows them: a reply still unsent when the hold began (MONITOR's +OK)
// reaches the client first.
func TestOutboxHold(t *testing.T) {
	var w recordingWriter
	f, _ := newOutbox(&w, 1<<20)
	require.True(t, f.pushReplies([]byte("earlier\r\n")))
	f.Hold()
	require.True(t, f.Push([]byte("line 1\r\n")))
	require.True(t, f.Push([]byte("line 2\r\n")))
	require.Eventually(t, func() bool { return w.String() == "earlier\r\n" }, 10*time.Second, time.Millisecond)
	require.True(t, f.pushReplies([]byte("+OK\r\n")))
	require.True(t, f.Push([]byte("line 3\r\n")), "the hold ended with the replies")
	f.Stop()
	waitOutbox(t, f)
	require.Equal(t, "earlier\r\n+OK\r\nline 1\r\nline 2\r\nline 3\r\n", w.String())
}

// What waits aside counts against the backlog too.
func TestOutboxHoldCountsAgainstTheBacklog(t *testing.T) {
	var w recordingWriter
	f, c := newOutbox(&w, 100)
	f.Hold()
	require.True(t, f.Push(make([]byte, 60)))
	require.False(t, f.Push(make([]byte, 60)))
	require.True(t, c.Killed())
	waitOutbox(t, f)
	require.Empty(t, w.String())
}

// StartOutbox gives the new outbox to published before the replies queued
// so far are pushed to it: whoever must push to the client once it has
// read those replies (a tracking client's invalidations, promised by its
// CLIENT TRACKING reply) finds the outbox by then. Published after, a push
// made between the client reading its reply and the publishing was lost.
// Held as it is published (as the server does), a push made meanwhile
// follows those replies.
func TestStartOutboxPublishesBeforeTheRepliesSoFarGoOut(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := newConn(New(Config{}, &echo{}), server)
	c.s = &echoSession{}
	c.out = append(c.out, "+OK\r\n"...)
	var queuedWhenPublished []byte
	o := c.StartOutbox(1<<20, nil, func(o *Outbox) {
		o.mu.Lock()
		queuedWhenPublished = append([]byte(nil), o.queue...)
		o.mu.Unlock()
		require.Equal(t, "+OK\r\n", string(c.out), "the reply still waits")
		o.Hold()
		require.True(t, o.Push([]byte(">2\r\npushed\r\n")), "a push as soon as published")
	})
	require.NotNil(t, o)
	require.Empty(t, queuedWhenPublished)
	buf := make([]byte, 64)
	var got []byte
	for len(got) < len("+OK\r\n>2\r\npushed\r\n") {
		n, err := client.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, "+OK\r\n>2\r\npushed\r\n", string(got),
		"what is pushed once published goes out after the replies so far")
	o.Stop()
	waitOutbox(t, o)
}
