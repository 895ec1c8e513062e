package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// tracker is the connection to one node that keeps the refusal cache true
// (Redis 6's server-assisted client-side caching): its own connection,
// RESP3, with CLIENT TRACKING ON, on which the client reads the TAT of each
// key the server refused (fetch), which makes the server track the key for
// it, and receives the server's invalidate pushes for those keys. A key is
// cached only from this connection's replies, and dropped from the cache
// when the server says it changed, when the node flushes, and when the
// connection is lost (it could have missed an invalidation), so the cache
// never holds a TAT the server no longer has for longer than an
// invalidation takes to arrive.
//
// A reply and the invalidations that precede it are read in the order the
// server sent them (redcell, as Redis, sends an invalidation of a key read
// by a command after that command's reply), and an invalidation of a key
// that arrives while its read is in flight makes the read's answer unused.
type tracker struct {
	c    *Client
	name string // the node's address, for errors
	opt  *redis.Options

	mu sync.Mutex
	// conn and w are the connection while it is up; queue the requests
	// sent and not yet answered, in order; inflight the reads by key (one
	// at a time per key).
	conn     net.Conn
	w        *bufio.Writer
	queue    []*request
	inflight map[string]*request
	// failed is why tracking cannot work on this node (a server without
	// RESP3 or CLIENT TRACKING): nothing is cached for it, ever.
	failed error

	// up is set while the connection is up and tracking; heard is when it
	// last received anything (the client's clock).
	up    atomic.Bool
	heard atomic.Int64

	stop chan struct{}
	done chan struct{}
}

// request is one request on the tracking connection: a read of key's TAT
// (TIME then GET) or a PING (key "").
type request struct {
	key  string
	sent int64 // the client's clock when it was written
	// dirty is set when the key was invalidated (or the node flushed)
	// while the read was in flight: its answer is not cached.
	dirty bool
	// time is TIME's answer, once read (the first of a read's two).
	time    value
	replies int
	// done, when set, is closed once the request is answered (or its
	// connection lost): what arrived before its reply has been handled.
	done chan struct{}
}

// Timings of a tracking connection.
const (
	// trackerPing is how long the connection may stay silent before it is
	// sent a PING; trackerDead how long without hearing anything before it
	// is given up on, as lost, and its node's cache entries dropped.
	trackerPing = 500 * time.Millisecond
	trackerDead = 1500 * time.Millisecond
	// trackerRetry is the least wait between two attempts to connect, and
	// trackerRetryMax the most.
	trackerRetry    = 50 * time.Millisecond
	trackerRetryMax = 2 * time.Second
	// trackerWrite bounds a write to the connection.
	trackerWrite = time.Second
)

func newTracker(c *Client, name string, opt *redis.Options) *tracker {
	t := &tracker{c: c, name: name, opt: opt, inflight: make(map[string]*request),
		stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// close stops the tracker and waits for it.
func (t *tracker) close() {
	close(t.stop)
	t.mu.Lock()
	if t.conn != nil {
		_ = t.conn.Close()
	}
	t.mu.Unlock()
	<-t.done
}

// run keeps the connection up until the tracker stops: it connects, reads
// until the connection is lost, drops what the cache holds for the node,
// and connects again, waiting longer after each failure.
func (t *tracker) run() {
	defer close(t.done)
	wait := trackerRetry
	for {
		conn, r, err := t.connect()
		if err == nil {
			wait = trackerRetry
			t.serve(conn, r)
		} else if errors.Is(err, errNoTracking) {
			t.mu.Lock()
			t.failed = err
			t.mu.Unlock()
			return
		}
		select {
		case <-t.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, trackerRetryMax)
	}
}

// errNoTracking is a node that cannot track: a server without RESP3 or
// without CLIENT TRACKING.
var errNoTracking = errors.New("client: the server does not serve CLIENT TRACKING")

// connect dials the node as its go-redis client would (its dialer: TLS,
// Sentinel's current master), and starts tracking on the connection:
// HELLO 3 with the client's credentials, then CLIENT TRACKING ON.
func (t *tracker) connect() (net.Conn, *bufio.Reader, error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.dialTimeout())
	defer cancel()
	conn, err := t.opt.Dialer(ctx, t.opt.Network, t.opt.Addr)
	if err != nil {
		return nil, nil, err
	}
	hello := []string{"HELLO", "3"}
	user, pass, err := t.credentials(ctx)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if pass != "" {
		if user == "" {
			user = "default"
		}
		hello = append(hello, "AUTH", user, pass)
	}
	hello = append(hello, "SETNAME", "redcell-client-tracking")
	b := appendCommand(nil, hello...)
	b = appendCommand(b, "CLIENT", "TRACKING", "ON")
	_ = conn.SetDeadline(time.Now().Add(t.dialTimeout()))
	r := bufio.NewReaderSize(conn, 16<<10)
	if _, err := conn.Write(b); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	for i, what := range []string{"HELLO 3", "CLIENT TRACKING ON"} {
		v, err := readValue(r)
		if err == nil {
			err = v.err()
		}
		if err != nil {
			_ = conn.Close()
			var se serverError
			if errors.As(err, &se) && (i == 1 || isNoProto(string(se))) {
				return nil, nil, errors.Join(errNoTracking, errors.New(what+": "+se.Error()))
			}
			return nil, nil, err
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, r, nil
}

// isNoProto reports whether HELLO's error says the server speaks no RESP3.
func isNoProto(msg string) bool {
	return strings.HasPrefix(msg, "NOPROTO") || strings.HasPrefix(msg, "ERR unknown command")
}

func (t *tracker) dialTimeout() time.Duration {
	if t.opt.DialTimeout > 0 {
		return t.opt.DialTimeout
	}
	return 5 * time.Second
}

// credentials are the go-redis client's, however it was given them.
func (t *tracker) credentials(ctx context.Context) (user, pass string, err error) {
	switch {
	case t.opt.CredentialsProviderContext != nil:
		return t.opt.CredentialsProviderContext(ctx)
	case t.opt.CredentialsProvider != nil:
		user, pass = t.opt.CredentialsProvider()
		return user, pass, nil
	}
	return t.opt.Username, t.opt.Password, nil
}

// serve reads the connection until it is lost or the tracker stops, then
// forgets everything cached from it.
func (t *tracker) serve(conn net.Conn, r *bufio.Reader) {
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		_ = conn.Close()
		return
	default:
	}
	t.conn, t.w = conn, bufio.NewWriterSize(conn, 4<<10)
	t.heard.Store(t.c.now())
	t.up.Store(true)
	t.mu.Unlock()
	t.c.stats.trackerConnects.Add(1)

	pinged := make(chan struct{})
	go t.keepAlive(conn, pinged)
	for {
		v, err := readValue(r)
		if err != nil {
			break
		}
		t.heard.Store(t.c.now())
		if v.kind == '>' {
			t.push(v)
			continue
		}
		t.reply(v)
	}
	close(pinged)

	t.mu.Lock()
	t.up.Store(false)
	_ = conn.Close()
	t.conn, t.w = nil, nil
	for _, rq := range t.queue {
		if rq.done != nil {
			close(rq.done)
		}
	}
	t.queue = nil
	clear(t.inflight)
	t.mu.Unlock()
	t.c.stats.invalidations.Add(int64(t.c.cache.dropOwned(t)))
}

// keepAlive pings a connection that has been silent for trackerPing, and
// closes one silent for trackerDead, until end is closed.
func (t *tracker) keepAlive(conn net.Conn, end chan struct{}) {
	tick := time.NewTicker(trackerPing / 2)
	defer tick.Stop()
	for {
		select {
		case <-end:
			return
		case <-tick.C:
		}
		silent := time.Duration(t.c.now() - t.heard.Load())
		switch {
		case silent >= trackerDead:
			_ = conn.Close() // serve's read fails, and it starts over
			return
		case silent >= trackerPing:
			t.send(&request{}, "PING")
		}
	}
}

// push handles a push: the invalidation of some keys, or of every key (a
// null: the node flushed).
func (t *tracker) push(v value) {
	if len(v.elems) != 2 || v.elems[0].str != "invalidate" {
		return
	}
	keys := v.elems[1]
	t.mu.Lock()
	if keys.null {
		for _, rq := range t.queue {
			rq.dirty = true
		}
	} else {
		for _, k := range keys.elems {
			if rq := t.inflight[k.str]; rq != nil {
				rq.dirty = true
			}
		}
	}
	t.mu.Unlock()
	if keys.null {
		t.c.stats.invalidations.Add(int64(t.c.cache.dropOwned(t)))
		return
	}
	for _, k := range keys.elems {
		if t.c.cache.drop(k.str) {
			t.c.stats.invalidations.Add(1)
		}
	}
}

// reply handles the reply to the oldest request: a read's TIME, then its
// GET, whose TAT is cached unless the key changed meanwhile.
func (t *tracker) reply(v value) {
	t.mu.Lock()
	if len(t.queue) == 0 {
		t.mu.Unlock()
		return // not ours: cannot happen on a healthy connection
	}
	rq := t.queue[0]
	rq.replies++
	if rq.key != "" && rq.replies == 1 {
		rq.time = v
		t.mu.Unlock()
		return
	}
	t.queue[0] = nil
	t.queue = t.queue[1:]
	if rq.key != "" {
		delete(t.inflight, rq.key)
	}
	t.mu.Unlock()
	if rq.key != "" && !rq.dirty {
		if tat, ok := localTAT(rq, v); ok {
			t.c.stats.evictions.Add(int64(t.c.cache.put(rq.key, tat, rq.sent, t)))
		}
	}
	if rq.done != nil {
		close(rq.done)
	}
}

// usable reports whether keys read on this node can be cached.
func (t *tracker) usable() bool { return t != nil && t.up.Load() }
