package replication

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/rdb"
	"github.com/redcell/redcell/resp"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

// The replica's side of the wire on arbitrary bytes: the stream's apply
// path and the codec. A master is trusted to send what appendChange
// writes, but a corrupt link must cost the replica its link, never its
// process, and a sub-replica must get byte for byte what the master sent.

var fuzzNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// streamConn is a master's connection that sends src and swallows the
// replica's ACKs.
type streamConn struct {
	src *bytes.Reader
}

func (c *streamConn) Read(p []byte) (int, error)       { return c.src.Read(p) }
func (c *streamConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// windowState is a real window's state: limit 10 in 60 s at precision,
// after q taken at fuzzNow.
func windowState(precision, q int64) []byte {
	spec, err := window.NewSpec(10, 60, q, precision, window.DefaultLogMax)
	if err != nil {
		panic(err)
	}
	_, state, _, _ := window.Decide(spec, nil, gcra.InstantOf(fuzzNow), nil)
	return state
}

func streamSeeds() [][]byte {
	tat := gcra.InstantOf(fuzzNow.Add(time.Hour))
	var b []byte
	b = appendChange(b, storage.Change{Key: "a", TAT: tat})
	b = appendChange(b, storage.Change{Key: "w", TAT: tat, Kind: storage.KindWindow, Value: string(windowState(0, 3))})
	b = appendChange(b, storage.Change{Key: "c", TAT: tat, Kind: storage.KindWindow, Value: string(windowState(6, 2))})
	b = appendChange(b, storage.Change{Key: "a"})
	b = append(b, pingCommand+getAckCommand+"*1\r\n$8\r\nFLUSHALL\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"...)
	b = appendChange(b, storage.Change{Key: "z", TAT: tat})
	return [][]byte{
		b,
		b[:len(b)/2],
		append(slices.Clone(b), "*x\r\n"...),
		append(slices.Clone(b), "PING\r\n*0\r\n\r\n"...),
		[]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9\r\n\x00redcell1\r\n"),
		[]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999\r\n"),
		[]byte("*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n-1\r\n$4\r\nPXAT\r\n$1\r\n1\r\n"),
	}
}

// The stream's apply path, as a replica runs it on bytes from its master:
// it never panics, returns an error at the stream's end (or its first
// corrupt byte), forwards to its own replicas exactly the bytes it applied,
// a prefix of what came, and leaves a store whose every key answers a peek.
func FuzzApplyStream(f *testing.F) {
	for _, s := range streamSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		store := storage.New(storage.Config{Shards: 2})
		n := New(Config{Store: store, BacklogSize: 1 << 16, Now: func() time.Time { return fuzzNow }})
		n.backlog.append(nil)
		u := &upstream{n: n, host: "127.0.0.1", port: 1, stopCh: make(chan struct{}), done: make(chan struct{})}
		conn := &streamConn{src: bytes.NewReader(stream)}
		err := u.apply(conn, bufio.NewReaderSize(conn, 64<<10))
		if err == nil {
			t.Fatal("apply returned without an error")
		}
		first, end := n.backlog.offsets()
		if end > int64(len(stream)) {
			t.Fatalf("forwarded %d bytes of a stream of %d", end, len(stream))
		}
		fwd := make([]byte, end-first)
		k, _, ok, _ := n.backlog.read(n.backlog.hold(first, nil), fwd)
		if !ok || int64(k) != end-first {
			t.Fatalf("the backlog holds [%d, %d) and read %d, %v", first, end, k, ok)
		}
		if !bytes.Equal(fwd, stream[first:end]) {
			t.Fatalf("forwarded %q for %q", fwd, stream[first:end])
		}
		if errors.Is(err, io.EOF) {
			// The stream ended: what is left is one incomplete command,
			// never a whole one unapplied.
			rd := resp.NewReader(bytes.NewReader(stream[end:]), resp.Limits{})
			if rd.Fill() == nil {
				if args, err := rd.Next(true); args != nil || err != nil {
					t.Fatalf("at the end, %q left unapplied (%q, %v)", stream[end:], args, err)
				}
			}
		}
		now := gcra.InstantOf(fuzzNow)
		for i := range store.Shards() {
			for _, ch := range store.CopyShard(i, now, nil) {
				key := []byte(ch.Key)
				switch ch.Kind {
				case storage.KindTAT:
					r, err := gcra.NewRate(100, 1, 60, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, _, err := store.Preview(key, r, now); err != nil {
						t.Fatalf("a peek of %q: %v", key, err)
					}
				case storage.KindWindow:
					precision, win, ok := window.Shape([]byte(ch.Value))
					if !ok {
						precision, win = 0, time.Minute
					}
					spec, err := window.NewSpec(10, int64(win/time.Second), 0, precision, window.DefaultLogMax)
					if err != nil {
						continue // a shape no CL.WINDOW can ask for
					}
					if _, _, err := store.Window(key, spec, now, true); err != nil {
						t.Fatalf("a window peek of %q: %v", key, err)
					}
				default:
					t.Fatalf("%q holds kind %d", key, ch.Kind)
				}
			}
		}
	})
}

// A change through the stream and through a snapshot: appendChange's
// command, re-encoded by a replica, is the same bytes, and statecodec.Decode and
// Apply give the change back, as the snapshot's entry does.
func FuzzChangeRoundTrip(f *testing.F) {
	tat := int64(gcra.InstantOf(fuzzNow.Add(time.Hour)))
	f.Add([]byte("user:1"), tat, false, []byte(nil))
	f.Add([]byte("w"), tat, true, windowState(0, 3))
	f.Add([]byte("c"), tat, true, windowState(6, 2))
	f.Add([]byte(""), int64(1), true, []byte{})
	f.Add([]byte("gone"), int64(0), false, []byte(nil))
	f.Add([]byte("\x00redcell1"), int64(1<<62), false, []byte("x"))
	f.Fuzz(func(t *testing.T, key []byte, tat int64, boxed bool, value []byte) {
		if tat < 0 {
			tat = -(tat + 1)
		}
		ch := storage.Change{Key: string(key), TAT: gcra.Instant(tat)}
		if boxed && tat != 0 {
			ch.Kind, ch.Value = storage.KindWindow, string(value)
		}
		cmd := appendChange(nil, ch)
		rd := resp.NewReader(bytes.NewReader(cmd), resp.Limits{})
		var args [][]byte
		for args == nil {
			if err := rd.Fill(); err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
			var err error
			if args, err = rd.Next(true); err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
		}
		if pending, _ := rd.Pending(); pending != 0 {
			t.Fatalf("%q: %d bytes after the command", cmd, pending)
		}
		if rd.Used()[0] != '*' || commandLen(args) != len(cmd) || !bytes.Equal(rd.Used(), cmd) {
			t.Fatalf("a replica's check takes %q as %d bytes, sent as %q", args, commandLen(args), cmd)
		}
		if tat == 0 {
			if len(args) != 2 || string(args[0]) != "DEL" || string(args[1]) != ch.Key {
				t.Fatalf("a deletion sent as %q", args)
			}
			return
		}
		if len(args) != 5 || string(args[0]) != "SET" || string(args[1]) != ch.Key || string(args[3]) != "PXAT" ||
			string(args[4]) != strconv.FormatInt(expireAtMs(ch.TAT), 10) {
			t.Fatalf("%+v sent as %q", ch, args)
		}
		if !bytes.Equal(args[2], statecodec.Encode(ch)) {
			t.Fatalf("the stream's value %q, the snapshot's %q", args[2], statecodec.Encode(ch))
		}
		checkDecoded(t, ch, args[2])

		// The snapshot's entry.
		var snap bytes.Buffer
		if err := writeSnapshot(&snap, 1, func(int) []storage.Change { return []storage.Change{ch} }, 1, "0123456789abcdef0123456789abcdef01234567", 7, fuzzNow); err != nil {
			t.Fatal(err)
		}
		r, err := rdb.NewReader(&snap, rdb.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Key) != ch.Key || e.ExpireAtMs != expireAtMs(ch.TAT) {
			t.Fatalf("%+v in a snapshot as %q expiring at %d", ch, e.Key, e.ExpireAtMs)
		}
		checkDecoded(t, ch, e.Value)
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the one key: %v", err)
		}

		// Applied, the store holds the change.
		store := storage.New(storage.Config{Shards: 1})
		u := &upstream{n: New(Config{Store: store, Now: func() time.Time { return fuzzNow }})}
		u.applyCommand(args)
		got := store.CopyShard(0, 0, nil)
		if len(got) != 1 || got[0] != ch {
			t.Fatalf("applied %+v, the store holds %+v", ch, got)
		}
	})
}

func checkDecoded(t *testing.T, ch storage.Change, value []byte) {
	t.Helper()
	kind, exp, state, err := statecodec.Decode(value)
	if err != nil || kind != ch.Kind || exp != ch.TAT || string(state) != ch.Value {
		t.Fatalf("%+v decoded as kind %d, %d, %q, %v", ch, kind, exp, state, err)
	}
}
