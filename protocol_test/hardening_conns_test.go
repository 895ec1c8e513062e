package protocol_test

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// The built binary holds as many connections at once as the open-files
// limit allows (up to 10000, Redis's default maxclients), without raising
// it, and serves every one of them: a decision on each connection's own
// key, then a second round on every connection while all are open.
func TestThousandsOfConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	// This process holds one end of each connection, the server the other;
	// both keep some files for themselves.
	n := min(10000, openFilesLimit(t)-256)
	require.Greater(t, n, 500, "the open-files limit leaves room for a few hundred connections at least")
	p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory", "--maxclients", strconv.Itoa(n+1))...)
	admin := p.Raw(t)
	before := usedMemoryRSS(t, admin)

	conns := make([]*testkit.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	start := time.Now()
	for w := 0; w < 8; w++ { // dial in parallel; each connection is then driven from here
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				conn, err := net.DialTimeout("tcp", p.Addr, 10*time.Second)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				conns[i] = testkit.NewConn(t, conn, 512)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	dialed := time.Since(start)

	// Every connection sends first, then every reply is read: all n are
	// open and waiting on the server at once.
	for i, c := range conns {
		c.Write(testkit.Command("CL.THROTTLE", "conn:"+strconv.Itoa(i), "4", "1", "3600"))
	}
	for i, c := range conns {
		require.Equal(t, testkit.Ints(0, 5, 4, -1, 3600), c.Read(), "connection %d", i)
	}
	require.Contains(t, admin.Do("INFO", "clients"), "\r\nconnected_clients:"+strconv.Itoa(n+1)+"\r\n")
	during := usedMemoryRSS(t, admin)
	for i, c := range conns {
		c.Write(testkit.Command("ECHO", strconv.Itoa(i)))
	}
	for i, c := range conns {
		require.Equal(t, testkit.Bulk(strconv.Itoa(i)), c.Read(), "connection %d", i)
	}
	require.Equal(t, testkit.Int(int64(n)), admin.Do("DBSIZE"))
	t.Logf("%d connections held at once (open-files limit %d), dialed in %v; server RSS %d MB before, %d MB with them (%d KB each)",
		n, openFilesLimit(t), dialed.Round(time.Millisecond), before>>20, during>>20, (during-before)/int64(n)>>10)

	for _, c := range conns {
		_ = c.Conn.Close()
	}
	require.Eventually(t, func() bool {
		return regexp.MustCompile(`\r\nconnected_clients:1\r\n`).MatchString(admin.Do("INFO", "clients"))
	}, 30*time.Second, 20*time.Millisecond, "every connection is let go")
}

// usedMemoryRSS is INFO memory's used_memory_rss.
func usedMemoryRSS(t *testing.T, c *testkit.Conn) int64 {
	t.Helper()
	m := regexp.MustCompile(`\r\nused_memory_rss:(\d+)\r\n`).FindStringSubmatch(c.Do("INFO", "memory"))
	require.NotNil(t, m)
	v, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return v
}

// openFilesLimit is the process's soft limit on open files (Go raises it to
// the hard limit at start).
func openFilesLimit(t testing.TB) int {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur > 1<<20 {
		return 1 << 20
	}
	return int(lim.Cur)
}
