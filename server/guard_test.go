package server

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"redcell/storage"
)

// startGuarded serves a fresh store on 127.0.0.1:0 with limits.
func startGuarded(t *testing.T, limits Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(Config{Limits: limits}, storage.New(storage.Config{Shards: 1}))
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

// exchange writes raw bytes and reads everything until the server closes
// the connection or goes quiet.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	out, _ := io.ReadAll(bufio.NewReader(c))
	return string(out)
}

func TestGuardRefusesAnnouncedSizesBeyondTheLimits(t *testing.T) {
	addr := startGuarded(t, Limits{MaxBulkLen: 100, MaxArgs: 8, MaxInlineLen: 64})
	for _, c := range []struct{ name, raw, want string }{
		// redcon would panic on this length: i+size+2 overflows.
		{"bulk near MaxInt64", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		// ... and spin forever on this count.
		{"count near MaxInt64", "*9223372036854775807\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bulk over the limit", "*2\r\n$4\r\nPING\r\n$101\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"too many args", "*9\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"negative bulk", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"inline line too long", strings.Repeat("x", 65), "-ERR Protocol error: too big inline request\r\n"},
		// Good commands in the same write as the bad frame are answered first.
		{"answered before refusal", "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$999\r\n", "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, exchange(t, addr, c.raw))
		})
	}
	// The server is still serving.
	require.Equal(t, "+PONG\r\n", exchange(t, addr, "PING\r\nQUIT\r\n")[:7])
}

func TestGuardPassesCommandsAtTheLimits(t *testing.T) {
	addr := startGuarded(t, Limits{MaxBulkLen: 100, MaxArgs: 3, MaxInlineLen: 64})
	key := strings.Repeat("k", 100)
	raw := "*3\r\n$4\r\nECHO\r\n$100\r\n" + key + "\r\n$1\r\nx\r\n" // 3 args: ECHO's arity error, but framed fine
	raw += "*2\r\n$4\r\nECHO\r\n$100\r\n" + key + "\r\n"
	raw += "ECHO " + strings.Repeat("i", 58) + "\r\n" // 63 bytes + CR: within the 64-byte inline limit
	raw += "QUIT\r\n"
	want := "-ERR wrong number of arguments for 'echo' command\r\n" +
		"$100\r\n" + key + "\r\n" +
		"$58\r\n" + strings.Repeat("i", 58) + "\r\n+OK\r\n"
	require.Equal(t, want, exchange(t, addr, raw))
}

// Frames split across reads byte by byte are tracked the same way.
func TestGuardTracksFramesAcrossReads(t *testing.T) {
	g := &guardConn{limits: Limits{MaxBulkLen: 10, MaxArgs: 4, MaxInlineLen: 16}}
	stream := "*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\nPING\r\n*1\r\n$11\r\n"
	var refusal string
	for i := 0; i < len(stream); i++ {
		if _, bad := g.scan([]byte{stream[i]}); bad != "" {
			refusal = bad
			require.Equal(t, len(stream)-1, i, "refused at the newline ending $11")
			break
		}
	}
	require.Equal(t, errProtoBulk, refusal)
}

func FuzzGuardScan(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"), 3)
	f.Add([]byte("PING\r\n*1\r\n$99999999999999999999\r\n"), 1)
	f.Add([]byte("*-1\r\n*0\r\n$\r\n"), 2)
	f.Fuzz(func(t *testing.T, data []byte, chunk int) {
		if chunk <= 0 {
			chunk = 1
		}
		g := &guardConn{limits: Limits{}.withDefaults()}
		for len(data) > 0 {
			n := min(chunk, len(data))
			k, bad := g.scan(data[:n])
			if bad == "" && k != n {
				t.Fatalf("scan passed %d of %d bytes without refusing", k, n)
			}
			if bad != "" && (k < 0 || k > n) {
				t.Fatalf("refusal offset %d outside [0, %d]", k, n)
			}
			if bad != "" {
				return
			}
			data = data[n:]
		}
	})
}
