package server

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// startServer serves a fresh store on 127.0.0.1:0 with cfg.
func startServer(t testing.TB, cfg Config) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(cfg, storage.New(storage.Config{Shards: 1}))
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String(), srv
}

func TestRefusesAnnouncedSizesBeyondTheLimits(t *testing.T) {
	addr, _ := startServer(t, Config{Limits: Limits{MaxBulkLen: 100, MaxArgs: 8, MaxInlineLen: 64, MaxQueryLen: 300}})
	for _, c := range []struct{ name, raw, want string }{
		// redcon would panic on this length: i+size+2 overflows.
		{"bulk near MaxInt64", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		// ... and spin forever on this count.
		{"count near MaxInt64", "*9223372036854775807\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bulk over the limit", "*2\r\n$4\r\nPING\r\n$101\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"too many args", "*9\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"too many inline args", "a b c d e f g h i\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"negative bulk", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"inline line too long", strings.Repeat("x", 65), "-ERR Protocol error: too big inline request\r\n"},
		// Numbers as Redis's string2ll reads them.
		{"plus sign", "*+1\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"leading zero", "*1\r\n$04\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"minus zero", "*1\r\n$-0\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"empty length", "*1\r\n$\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"no CR", "*1\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"CR without LF", "*1\r\r", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"minus zero count", "*-0\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"not a bulk", "*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
		{"CR for a bulk", "*1\r\n\r\n", "-ERR Protocol error: expected '$', got ' '\r\n"},
		{"argument too long", "*1\r\n$4\r\nPINGx\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"argument without LF", "*1\r\n$4\r\nPING\rx", "-ERR Protocol error: invalid bulk length\r\n"},
		{"unbalanced quotes", "ECHO \"a\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		// Over the query buffer limit, Redis closes without a word.
		{"command over the query limit", "*4\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n$100\r\n", ""},
		// Good commands in the same write as the bad frame are answered first.
		{"answered before refusal", "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$999\r\n", "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, testkit.Converse(t, addr, c.raw))
		})
	}
	// The server is still serving.
	require.Equal(t, "+PONG\r\n", testkit.Converse(t, addr, "PING\r\nQUIT\r\n")[:7])
}

func TestPassesCommandsAtTheLimits(t *testing.T) {
	addr, _ := startServer(t, Config{Limits: Limits{MaxBulkLen: 100, MaxArgs: 3, MaxInlineLen: 64}})
	key := strings.Repeat("k", 100)
	raw := "*3\r\n$4\r\nECHO\r\n$100\r\n" + key + "\r\n$1\r\nx\r\n" // 3 args: ECHO's arity error, but framed fine
	raw += "*2\r\n$4\r\nECHO\r\n$100\r\n" + key + "\r\n"
	raw += "ECHO " + strings.Repeat("i", 58) + "\r\n" // 63 bytes + CR: within the 64-byte inline limit
	raw += "*1\r\n$0\r\n\r\n"                         // an empty command name
	raw += "QUIT\r\n"
	want := "-ERR wrong number of arguments for 'echo' command\r\n" +
		"$100\r\n" + key + "\r\n" +
		"$58\r\n" + strings.Repeat("i", 58) + "\r\n" +
		"-ERR unknown command '', with args beginning with: \r\n+OK\r\n"
	require.Equal(t, want, testkit.Converse(t, addr, raw))
}

// Before a connection authenticates, Redis 7's smaller limits apply; AUTH
// lifts them for the very next command, even in the same write.
func TestUnauthenticatedLimits(t *testing.T) {
	addr, _ := startServer(t, Config{RequirePass: "pw"})
	eleven := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	big := "*2\r\n$4\r\nECHO\r\n$16385\r\n" + strings.Repeat("b", 16385) + "\r\n"
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", testkit.Converse(t, addr, eleven))
	require.Equal(t, "-ERR Protocol error: unauthenticated bulk length\r\n", testkit.Converse(t, addr, big))
	require.Equal(t, "+OK\r\n-ERR unknown command 'x', with args beginning with: 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' \r\n"+
		"$16385\r\n"+strings.Repeat("b", 16385)+"\r\n+OK\r\n",
		testkit.Converse(t, addr, "AUTH pw\r\n"+eleven+big+"QUIT\r\n"))
	// A refusal among commands handed on one at a time (found by
	// FuzzServerConnBeforeAuth: it panicked, taking the server down).
	require.Equal(t, "-NOAUTH Authentication required.\r\n-ERR Protocol error: unauthenticated bulk length\r\n",
		testkit.Converse(t, addr, "PING\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n"))
	require.Equal(t, "+OK\r\n-ERR Protocol error: invalid multibulk length\r\n", testkit.Converse(t, addr, "AUTH pw\r\n*-0\r\n"))
	// Empty commands are read and ignored, before AUTH as after, as Redis does.
	require.Equal(t, "-NOAUTH Authentication required.\r\n+OK\r\n+OK\r\n",
		testkit.Converse(t, addr, "*0\r\n*-1\r\nPING\r\n*-7\r\nAUTH pw\r\n*0\r\nQUIT\r\n"))
	// Inline commands are not limited before AUTH beyond their line length.
	require.Equal(t, "-NOAUTH Authentication required.\r\n+OK\r\n", testkit.Converse(t, addr, "ECHO "+strings.Repeat("c", 20000)+"\r\nQUIT\r\n"))
}
