package protocol_test

import (
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bytes that are not valid RESP get a protocol error, as Redis words it, and
// that one connection is closed; everyone else carries on.
func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t)
	bystander := ts.raw(t)
	require.Equal(t, ints(0, 5, 4, -1, 1), bystander.do("CL.THROTTLE", "k", "4", "1", "1"))

	for _, tc := range []struct {
		name, input, want string
	}{
		{"bad multibulk length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"minus zero multibulk length", "*-0\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"multibulk length without CR", "*1\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bad bulk length", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"negative bulk length", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk longer than its length", "*1\r\n$4\r\nPINGPONG\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"not a bulk string", "*1\r\nPING\r\n", "-ERR Protocol error: expected '$', got 'P'\r\n"},
		{"nested array", "*1\r\n*1\r\n$4\r\nPING\r\n", "-ERR Protocol error: expected '$', got '*'\r\n"},
		{"unbalanced quotes", "ECHO \"unterminated\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"quote glued to text", "ECHO \"a\"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.raw(t)
			c.write(tc.input)
			require.NoError(t, c.conn.SetReadDeadline(deadline()))
			got, err := readAll(c)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, simple("PONG"), bystander.do("PING"), "other connections keep working")
		})
	}
	require.Equal(t, ints(0, 5, 3, -1, 2), bystander.do("CL.THROTTLE", "k", "4", "1", "1"), "and the keyspace is intact")
}

// Inline commands (what telnet and some health checks send) and junk that
// parses as one are answered like any command; the connection stays open.
func TestInlineCommandsAndJunk(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.write("PING\r\n")
	require.Equal(t, simple("PONG"), c.read())
	c.write("ping\n") // a bare LF ends an inline command too
	require.Equal(t, simple("PONG"), c.read())
	c.write("CL.THROTTLE k 4 1 1\r\n")
	require.Equal(t, ints(0, 5, 4, -1, 1), c.read())
	c.write("ECHO \"a b\\r\\n\"\r\n")
	require.Equal(t, bulk("a b\r\n"), c.read())
	c.write("\r\n\r\n\r\nPING\r\n") // empty lines are skipped
	require.Equal(t, simple("PONG"), c.read())
	c.write("*0\r\n*-1\r\n*-5\r\nPING\r\n") // empty multibulk commands too, as Redis skips them
	require.Equal(t, simple("PONG"), c.read())
	c.write("\xff\xfe\x01 junk\r\n")
	require.Equal(t, errReply("ERR unknown command '\xff\xfe\x01', with args beginning with: 'junk' "), c.read())
	c.write("GET / HTTP/1.1\r\n")
	require.Equal(t, errReply("ERR wrong number of arguments for 'get' command"), c.read())
	c.write(command(""))
	require.Equal(t, errReply("ERR unknown command '', with args beginning with: "), c.read())
	require.Equal(t, ints(0, 5, 3, -1, 2), c.do("CL.THROTTLE", "k", "4", "1", "1"), "the same connection still works")
}

// Seeded binary junk, some of it shaped like RESP: each connection gets an
// error or is closed, and the server keeps serving everyone else.
func TestBinaryJunk(t *testing.T) {
	ts := startServer(t)
	bystander := ts.raw(t)
	require.Equal(t, ints(0, 5, 4, -1, 1), bystander.do("CL.THROTTLE", "k", "4", "1", "1"))
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("*$\r\n0123456789-\"' PINGabc\x00\xff")
	for i := 0; i < 200; i++ {
		junk := make([]byte, 1+rng.IntN(512))
		for j := range junk {
			if i%2 == 0 {
				junk[j] = byte(rng.UintN(256))
			} else { // RESP-ish
				junk[j] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		c := ts.raw(t)
		_, err := c.conn.Write(junk)
		require.NoError(t, err)
		require.NoError(t, c.conn.(*net.TCPConn).CloseWrite())
		require.NoError(t, c.conn.SetReadDeadline(deadline()))
		got, _ := readAll(c) // a reset is fine: the server may close first
		if len(got) > 0 && got[0] != '-' && got[0] != '+' && got[0] != '$' && got[0] != '*' && got[0] != ':' {
			t.Errorf("junk %d %q: reply %q is not RESP", i, junk, got)
		}
		require.NoError(t, c.conn.Close())
	}
	require.Equal(t, simple("PONG"), bystander.do("PING"))
	require.Equal(t, ints(0, 5, 3, -1, 2), bystander.do("CL.THROTTLE", "k", "4", "1", "1"))
}

// A client that hangs up halfway through a command costs nothing.
func TestTruncatedCommand(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.write("*5\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$1\r\n4")
	require.NoError(t, c.conn.(*net.TCPConn).CloseWrite())
	require.NoError(t, c.conn.SetReadDeadline(deadline()))
	got, err := readAll(c)
	require.NoError(t, err)
	require.Empty(t, got, "nothing is run or answered")

	other := ts.raw(t)
	require.Equal(t, integer(0), other.do("DBSIZE"))
}

// Lengths that would overflow must be refused, not crash the process or pin
// a CPU. Both reach the server before AUTH, so either is a denial of service
// by anyone who can connect. Run against the built binary so that a crash
// shows as a failure here rather than killing the test process.
//
// redcon v1.6.4's reader trusts announced lengths ("$9223372036854775807"
// overflows its index arithmetic and panics; a huge multibulk count spins):
// redcell reads RESP with its own reader, package resp, which refuses them.
func TestHugeLengthsAreRefused(t *testing.T) {
	srv := startBinary(t, nil, onLoopback()...)
	for _, input := range []string{"*1\r\n$9223372036854775807\r\n", "*9223372036854775807\r\n", "*1\r\n$1099511627776\r\n"} {
		conn, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
		require.NoError(t, err)
		_, err = conn.Write([]byte(input))
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(deadline()))
		got, err := io.ReadAll(conn)
		require.NoError(t, err, "%q", input)
		require.Contains(t, string(got), "-ERR Protocol error: invalid", "%q", input)
		require.NoError(t, conn.Close())
		require.Equal(t, "PONG\n", cli(t, srv.Port, "", "PING"), "after %q the server still answers; log:\n%s", input, srv.Log())
	}
}
