package protocol_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawConn is one TCP connection speaking RESP by hand, for tests that must
// see the exact bytes or control exactly what is sent. Its methods fail the
// test, so they are for the test's own goroutine.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	rd   *bufio.Reader
}

// newRawConn wraps conn, read through a buffer of size bytes and closed
// when the test ends.
func newRawConn(t testing.TB, conn net.Conn, size int) *rawConn {
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, rd: bufio.NewReaderSize(conn, size)}
}

// command encodes args as one RESP array of bulk strings.
func command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// write sends raw bytes.
func (c *rawConn) write(s string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(c.conn, s)
	require.NoError(c.t, err)
}

// do sends one command and returns its reply's raw bytes.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.write(command(args...))
	return c.read()
}

// read returns the raw bytes of the next reply.
func (c *rawConn) read() string {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	var b strings.Builder
	require.NoError(c.t, readReply(c.rd, &b), "reading a reply; got so far %q", b.String())
	return b.String()
}

// expectClosed asserts that the server closed the connection without
// sending anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	rest, err := io.ReadAll(c.rd)
	require.NoError(c.t, err, "the server should close the connection")
	require.Empty(c.t, string(rest), "bytes after the last expected reply")
}

// readAll reads until the server closes the connection.
func readAll(c *rawConn) (string, error) {
	b, err := io.ReadAll(c.rd)
	return string(b), err
}

// readReply copies one complete RESP2 or RESP3 reply from rd to out.
func readReply(rd *bufio.Reader, out *strings.Builder) error {
	line, err := rd.ReadString('\n')
	out.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		_, err = io.ReadFull(rd, buf)
		out.Write(buf)
		return err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readReply(rd, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// Expected replies, as bytes on the wire.

func ints(vs ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, ":%d\r\n", v)
	}
	return b.String()
}

func integer(n int64) string   { return fmt.Sprintf(":%d\r\n", n) }
func simple(s string) string   { return "+" + s + "\r\n" }
func errReply(s string) string { return "-" + s + "\r\n" }
func bulk(s string) string     { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

const (
	null2 = "$-1\r\n" // RESP2 null bulk string
	null3 = "_\r\n"   // RESP3 null
	ok    = "+OK\r\n"
)

func bulks(ss ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(ss))
	for _, s := range ss {
		b.WriteString(bulk(s))
	}
	return b.String()
}
