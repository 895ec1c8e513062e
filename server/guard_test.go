package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"redcell/storage"
)

// startGuarded serves a fresh store on 127.0.0.1:0 with cfg.
func startGuarded(t testing.TB, cfg Config) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(cfg, storage.New(storage.Config{Shards: 1}))
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String(), srv
}

// exchange writes raw bytes and reads everything until the server closes
// the connection or goes quiet.
func exchange(t testing.TB, addr, raw string) string {
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
	addr, _ := startGuarded(t, Config{Limits: Limits{MaxBulkLen: 100, MaxArgs: 8, MaxInlineLen: 64, MaxQueryLen: 300}})
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
			require.Equal(t, c.want, exchange(t, addr, c.raw))
		})
	}
	// The server is still serving.
	require.Equal(t, "+PONG\r\n", exchange(t, addr, "PING\r\nQUIT\r\n")[:7])
}

func TestGuardPassesCommandsAtTheLimits(t *testing.T) {
	addr, _ := startGuarded(t, Config{Limits: Limits{MaxBulkLen: 100, MaxArgs: 3, MaxInlineLen: 64}})
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
	require.Equal(t, want, exchange(t, addr, raw))
}

// Before a connection authenticates, Redis 7's smaller limits apply; AUTH
// lifts them for the very next command, even in the same write.
func TestGuardUnauthenticatedLimits(t *testing.T) {
	addr, _ := startGuarded(t, Config{RequirePass: "pw"})
	eleven := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	big := "*2\r\n$4\r\nECHO\r\n$16385\r\n" + strings.Repeat("b", 16385) + "\r\n"
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", exchange(t, addr, eleven))
	require.Equal(t, "-ERR Protocol error: unauthenticated bulk length\r\n", exchange(t, addr, big))
	require.Equal(t, "+OK\r\n-ERR unknown command 'x', with args beginning with: 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' 'x' \r\n"+
		"$16385\r\n"+strings.Repeat("b", 16385)+"\r\n+OK\r\n",
		exchange(t, addr, "AUTH pw\r\n"+eleven+big+"QUIT\r\n"))
	// A refusal among commands handed on one at a time (found by
	// FuzzServerConnBeforeAuth: it panicked, taking the server down).
	require.Equal(t, "-NOAUTH Authentication required.\r\n-ERR Protocol error: unauthenticated bulk length\r\n",
		exchange(t, addr, "PING\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n"))
	require.Equal(t, "+OK\r\n-ERR Protocol error: invalid multibulk length\r\n", exchange(t, addr, "AUTH pw\r\n*-0\r\n"))
	// Empty commands are read and ignored, before AUTH as after, as Redis does.
	require.Equal(t, "-NOAUTH Authentication required.\r\n+OK\r\n+OK\r\n",
		exchange(t, addr, "*0\r\n*-1\r\nPING\r\n*-7\r\nAUTH pw\r\n*0\r\nQUIT\r\n"))
	// Inline commands are not limited before AUTH beyond their line length.
	require.Equal(t, "-NOAUTH Authentication required.\r\n+OK\r\n", exchange(t, addr, "ECHO "+strings.Repeat("c", 20000)+"\r\nQUIT\r\n"))
}

// scriptConn is a net.Conn that reads input in chunks of a fixed size and
// keeps what is written to it.
type scriptConn struct {
	net.Conn // nil: methods not defined here are not used
	in       []byte
	chunk    int
	written  bytes.Buffer
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error)      { return c.written.Write(p) }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }
func (c *scriptConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}

var guardTestServer = New(Config{}, storage.New(storage.Config{Shards: 1}))

// guardRun feeds input through a guard, chunk bytes per socket read, read
// by redcon-like reads of p bytes. It returns every read's result, what the
// guard wrote back and the error that ended it.
func guardRun(input []byte, limits Limits, chunk, p int) (reads [][]byte, written string, err error) {
	return guardRunAs(nil, input, limits, chunk, p)
}

// guardRunAs is guardRun for the connection of c (nil: none, as if
// authenticated).
func guardRunAs(c *client, input []byte, limits Limits, chunk, p int) (reads [][]byte, written string, err error) {
	limits = limits.withDefaults()
	sc := &scriptConn{in: input, chunk: max(chunk, 1)}
	g := &guardConn{Conn: sc, limits: &limits, srv: guardTestServer, client: c}
	buf := make([]byte, max(p, 1))
	for {
		n, err := g.Read(buf)
		if n > 0 {
			reads = append(reads, bytes.Clone(buf[:n]))
		}
		if err != nil {
			return reads, sc.written.String(), err
		}
	}
}

// commandsOf parses what the guard handed on as conn does (nextCommand, over
// redcon's ReadNextCommand). The parser must never see malformed input: the
// guard refuses it first. A command cut off at the end is not a command.
func commandsOf(t testing.TB, delivered []byte) []string {
	t.Helper()
	var out []string
	for len(delivered) > 0 {
		args, rest, ok, err := nextCommand(delivered, nil)
		if err != nil {
			t.Fatalf("redcon's parser rejected what the guard handed on: %v\n%q", err, delivered)
		}
		if !ok {
			break
		}
		out = append(out, string(bytes.Join(args, []byte{0})))
		delivered = rest
	}
	return out
}

// Whatever the sizes of the socket's reads and redcon's buffer, the guard
// hands on the same commands and the same refusal.
func TestGuardIgnoresHowInputIsSplit(t *testing.T) {
	inputs := []string{
		"*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\nPING\r\n*1\r\n$4\r\nPING\r\n",
		"PING\r\nECHO \"a b\\x41\\n\" 'c\\'d'\r\n\r\n\n*1\r\n$4\r\nPING\r\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$11\r\n",
		"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\nEC\"HO\r\n",
		"PING\r\n" + strings.Repeat("y", 70000),
		"*1\r\n$40000\r\n" + strings.Repeat("z", 40000) + "\r\nPING\r\n",
		"*2\r\n$4\r\nPING\r\n$-3\r\nPING\r\n",
	}
	for i, in := range inputs {
		var want []string
		var wantWritten string
		for j, sizes := range [][2]int{{1 << 20, 1 << 20}, {1, 1 << 20}, {1 << 20, 1}, {3, 7}, {4096, 4096}, {17, 5000}} {
			reads, written, err := guardRun([]byte(in), Limits{}, sizes[0], sizes[1])
			require.Error(t, err)
			got := commandsOf(t, bytes.Join(reads, nil))
			if j == 0 {
				want, wantWritten = got, written
				continue
			}
			require.Equal(t, want, got, "input %d, reads of %d into %d", i, sizes[0], sizes[1])
			require.Equal(t, wantWritten, written, "input %d, reads of %d into %d", i, sizes[0], sizes[1])
		}
	}
}

// redcon is handed whole commands, so its buffer drains after every batch;
// only a command longer than readChunk, or than redcon's free space, comes
// in parts, and then in parts of at least readChunk or of all the space.
func TestGuardHandsOnWholeCommands(t *testing.T) {
	cmd := "*3\r\n$3\r\nDEL\r\n$5\r\nkey:1\r\n$5\r\nkey:2\r\n" // 37 bytes
	stream := strings.Repeat(cmd, 1000)
	for _, chunk := range []int{1, 5, 36, 38, 1000, 4096} {
		reads, _, _ := guardRun([]byte(stream), Limits{}, chunk, 8192)
		for i, r := range reads {
			require.Zero(t, len(r)%len(cmd), "chunk %d: read %d of %d bytes splits a command", chunk, i, len(r))
		}
	}
	long := "*2\r\n$4\r\nECHO\r\n$100000\r\n" + strings.Repeat("l", 100000) + "\r\n"
	reads, _, _ := guardRun([]byte(long), Limits{}, 10, 1<<20)
	require.Equal(t, long, string(bytes.Join(reads, nil)))
	for i, r := range reads[:len(reads)-1] {
		require.GreaterOrEqual(t, len(r), readChunk, "read %d", i)
	}
}

// Inline commands are split as Redis's sdssplitargs splits them.
func TestSplitInline(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{"   \t ", []string{}},
		{"PING", []string{"PING"}},
		{"  SET  k\tv  ", []string{"SET", "k", "v"}},
		{`ECHO "a b"`, []string{"ECHO", "a b"}},
		{`ECHO "\x41\x4a\n\r\t\b\a\"\\\q"`, []string{"ECHO", "AJ\n\r\t\b\a\"\\q"}},
		{`ECHO "\x4"`, []string{"ECHO", "x4"}},
		{`ECHO 'it\'s' '\n'`, []string{"ECHO", "it's", `\n`}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO a"b c"`, []string{"ECHO", "ab c"}}, // a quote opens mid-argument in Redis
		{"ECHO a\x00b c", []string{"ECHO", "a"}},  // NUL ends the line, as in C
		{"\xff\xfe\x01 junk", []string{"\xff\xfe\x01", "junk"}},
		{"ECHO a\vb", []string{"ECHO", "a\vb"}}, // \v separates only where blanks are skipped
		{`ECHO "a"b`, nil},
		{`ECHO 'a'b`, nil},
		{`ECHO "a`, nil},
		{`ECHO 'a`, nil},
		{"ECHO \"a\x00\"", nil},
		{`ECHO "a\`, nil},
	} {
		got, ok := splitInline([]byte(c.line))
		if c.want == nil {
			require.False(t, ok, "%q", c.line)
			continue
		}
		require.True(t, ok, "%q", c.line)
		gotStrings := []string{}
		for _, a := range got {
			gotStrings = append(gotStrings, string(a))
		}
		require.Equal(t, c.want, gotStrings, "%q", c.line)
	}
}

// redcon's own inline parser allocated a copy of the rest of the line for
// each argument (1.1 GB for this line); the guard's split is linear.
func TestManyInlineArgumentsAreCheap(t *testing.T) {
	line := []byte(strings.Repeat("a ", 32767) + "\r\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _ = guardRun(line, Limits{}, readChunk, 4096)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated for one 64 KiB line (redcon: 1.1 GB)")
	reads, _, _ := guardRun(line, Limits{}, readChunk, 1<<20)
	cmds := commandsOf(t, bytes.Join(reads, nil))
	require.Len(t, cmds, 1)
	require.Equal(t, strings.Repeat("a\x00", 32766)+"a", cmds[0])
}
