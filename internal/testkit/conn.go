package testkit

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Timeout bounds each read and write of a Conn, and how long Converse waits
// for the server to close: long enough for a loaded machine running the
// race detector, short enough that a hung test fails rather than stalls.
const Timeout = 10 * time.Second

// Conn is one connection speaking RESP by hand, for tests that must see the
// exact bytes or control exactly what is sent. Its methods fail the test,
// so they are for the test's own goroutine; the connection is closed when
// the test ends.
type Conn struct {
	// Conn is the connection, for its addresses, deadlines and Close.
	Conn net.Conn
	// Reader is what the server sends, buffered: read replies with Read,
	// or bytes that are not replies (a replica's snapshot) from it.
	Reader *bufio.Reader

	t testing.TB
}

// Dial connects to addr and returns the connection as a Conn.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	return NewConn(t, conn, 64<<10)
}

// NewConn wraps conn, read through a buffer of size bytes (a test holding
// thousands of connections keeps them small).
func NewConn(t testing.TB, conn net.Conn, size int) *Conn {
	t.Cleanup(func() { _ = conn.Close() })
	return &Conn{Conn: conn, Reader: bufio.NewReaderSize(conn, size), t: t}
}

// Write sends s as it is.
func (c *Conn) Write(s string) {
	c.t.Helper()
	require.NoError(c.t, c.Conn.SetWriteDeadline(time.Now().Add(Timeout)))
	_, err := io.WriteString(c.Conn, s)
	require.NoError(c.t, err)
}

// Do sends args as one multibulk command and returns its reply's bytes.
func (c *Conn) Do(args ...string) string {
	c.t.Helper()
	c.Write(Command(args...))
	return c.Read()
}

// DoReply is Do with the reply parsed (Parse).
func (c *Conn) DoReply(args ...string) Reply {
	c.t.Helper()
	raw := c.Do(args...)
	v, err := Parse(raw)
	require.NoError(c.t, err, "%q", raw)
	return v
}

// DoInline sends line as an inline command, as telnet and health checks
// do, and returns its reply's bytes.
func (c *Conn) DoInline(line string) string {
	c.t.Helper()
	c.Write(line + "\r\n")
	return c.Read()
}

// Read returns the bytes of the next reply (ReadReply).
func (c *Conn) Read() string {
	c.t.Helper()
	require.NoError(c.t, c.Conn.SetReadDeadline(time.Now().Add(Timeout)))
	raw, err := ReadReply(c.Reader)
	require.NoError(c.t, err, "reading a reply; got so far %q", raw)
	return raw
}

// ReadAll reads until the server closes the connection, or the read fails
// (a reset, say, when the server closed with input unread), and returns
// what came.
func (c *Conn) ReadAll() (string, error) {
	c.t.Helper()
	require.NoError(c.t, c.Conn.SetReadDeadline(time.Now().Add(Timeout)))
	b, err := io.ReadAll(c.Reader)
	return string(b), err
}

// ExpectClosed asserts that the server closes the connection without
// sending anything more.
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	rest, err := c.ReadAll()
	require.NoError(c.t, err, "the server should close the connection")
	require.Empty(c.t, rest, "bytes after the last expected reply")
}

// Converse sends script, any bytes, whole on a fresh connection to addr and
// returns everything the server sends until it closes the connection. A
// server that does not close it within Timeout fails the test; a reset
// (the server closed with input unread) ends what was sent.
func Converse(t testing.TB, addr, script string) string {
	t.Helper()
	c := Dial(t, addr)
	defer c.Conn.Close()
	c.Write(script)
	out, err := c.ReadAll()
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server did not close the connection within %v of %q; got %q", Timeout, script, out)
	}
	return out
}
