package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// The load test with faults: the built binary under redis-benchmark at full
// speed and checked clients, while other clients connect and drop abruptly
// and SAVE runs over and over, across a SIGTERM restart (default flushing:
// a clean stop saves everything) and a SIGKILL restart in durable mode
// (--flush-interval 0: every acknowledged change is synced first). No reply
// may be wrong, and no acknowledged decision may be lost.
func TestLoadWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs for ~15s; skipped with -short")
	}
	bench := harness.NeedTool(t, "`apt-get install redis-tools` (Debian/Ubuntu) or `brew install redis`", "redis-benchmark")
	for _, c := range []struct {
		name  string
		flags []string
		fault syscall.Signal
	}{
		{"SIGTERM at the default flush interval", nil, syscall.SIGTERM},
		{"SIGKILL in durable mode", []string{"--flush-interval", "0"}, syscall.SIGKILL},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := harness.StartBinary(t, nil, append(harness.OnLoopback("--dir", dir), c.flags...)...)
			l := newLoad(t, p.Addr)
			l.start()
			l.startBench(bench)
			l.waitDecisions(t, 3000, 3*time.Second)
			require.Eventually(t, func() bool { return l.saves.Load() > 0 && l.dropped.Load() > 0 }, 30*time.Second, 10*time.Millisecond)

			exit := p.Stop(c.fault) // in the middle of it all
			if c.fault == syscall.SIGTERM {
				require.NoError(t, exit, "a clean exit; log:\n%s", p.Log())
				require.Contains(t, p.Log(), `msg="saved state"`)
			}
			p.Restart()
			require.Contains(t, p.Log(), "loaded state")
			l.startBench(bench)
			l.waitDecisions(t, l.decided.Load()+3000, 2*time.Second) // the checked clients found the server again
			l.stop(t)
			l.verifyAll(t)
			t.Logf("%d checked decisions (%d in doubt across the %v, all settled), %d dropped connections, %d SAVE/BGSAVE, redis-benchmark: %s",
				l.decided.Load(), l.doubted.Load(), c.fault, l.dropped.Load(), l.saves.Load(), l.benchSummary())
		})
	}
}

// Checked keys: burst 100000 at one action per 10000 seconds, so that over
// the test nothing refills and the k-th action on a key leaves exactly
// 100000-k.
const (
	loadBurst   = 99999
	loadLimit   = loadBurst + 1
	loadPeriod  = 10000
	loadKeys    = 16 // per checked client
	loadClients = 6
)

// keyModel is what the server must hold for one checked key: acked actions
// acknowledged, and doubt actions sent whose reply was lost with the
// connection (each may or may not have been applied).
type keyModel struct {
	acked, doubt int64
}

// load drives the server and keeps the models.
type load struct {
	t      *testing.T
	addr   string
	models [loadClients][loadKeys]keyModel

	stopping chan struct{}
	wg       sync.WaitGroup
	bench    []*exec.Cmd
	benchOut []*strings.Builder

	decided, doubted, dropped, saves atomic.Int64
	wrong                            chan error
}

func newLoad(t *testing.T, addr string) *load {
	return &load{t: t, addr: addr, wrong: make(chan error, 100)}
}

func loadKey(client, key int) string { return fmt.Sprintf("checked:%d:%d", client, key) }

// start runs the checked clients, the droppers and the saver until stop.
func (l *load) start() {
	l.stopping = make(chan struct{})
	for c := 0; c < loadClients; c++ {
		l.wg.Go(func() { l.checkedClient(c) })
	}
	for d := 0; d < 2; d++ {
		l.wg.Go(func() { l.dropper(d) })
	}
	l.wg.Go(l.saver)
}

// startBench runs redis-benchmark at full speed on keys of its own until
// it loses the server or stop.
func (l *load) startBench(bench string) {
	_, port, _ := net.SplitHostPort(l.addr)
	cmd := exec.Command(bench, "-h", "127.0.0.1", "-p", port, "-c", "16", "-P", "16", "-n", "2000000", "-r", "100000", "-q",
		"CL.THROTTLE", "bench:__rand_int__", "100", "10", "1")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(l.t, cmd.Start())
	l.bench, l.benchOut = append(l.bench, cmd), append(l.benchOut, out)
	l.wg.Go(func() { _ = cmd.Wait() })
}

func (l *load) running() bool {
	select {
	case <-l.stopping:
		return false
	default:
		return true
	}
}

// stop stops every load generator and checks what they saw.
func (l *load) stop(t *testing.T) {
	close(l.stopping)
	for _, cmd := range l.bench {
		_ = cmd.Process.Kill() // our own child, by its pid; an error if it exited
	}
	l.wg.Wait()
	select {
	case err := <-l.wrong:
		t.Fatal(err)
	default:
	}
}

// waitDecisions waits until the checked clients have made n decisions
// and the load has run for at least d.
func (l *load) waitDecisions(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	until := time.Now().Add(d)
	require.Eventually(t, func() bool {
		select {
		case err := <-l.wrong:
			l.wrong <- err
			return true
		default:
		}
		return l.decided.Load() >= n && time.Now().After(until)
	}, 60*time.Second, 10*time.Millisecond, "%d checked decisions made, %d wanted", l.decided.Load(), n)
	select {
	case err := <-l.wrong:
		t.Fatal(err)
	default:
	}
}

func (l *load) fail(err error) {
	select {
	case l.wrong <- err:
	default:
	}
}

// checkedClient makes decisions on its keys, in pipelines of one to eight,
// and checks every reply against the model. A lost connection puts the
// commands sent on it in doubt; once the server answers again, each key in
// doubt is peeked at and must show every acknowledged action and no action
// that was never sent.
func (l *load) checkedClient(c int) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: l.addr, Protocol: 2 + c%2, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	defer rdb.Close()
	rng := rand.New(rand.NewPCG(uint64(c), 11))
	retry := time.NewTicker(10 * time.Millisecond)
	defer retry.Stop()
	for l.running() {
		if !l.settle(ctx, rdb, c) {
			<-retry.C // the server is restarting: try again shortly
			continue
		}
		depth := 1 + rng.IntN(8)
		keys := make([]int, depth)
		cmds := make([]*redis.Cmd, depth)
		pipe := rdb.Pipeline()
		for i := range keys {
			keys[i] = rng.IntN(loadKeys)
			cmds[i] = pipe.Do(ctx, "CL.THROTTLE", loadKey(c, keys[i]), loadBurst, 1, loadPeriod)
		}
		_, _ = pipe.Exec(ctx)
		for i, cmd := range cmds {
			m := &l.models[c][keys[i]]
			got, err := cmd.Int64Slice()
			if err != nil {
				if isConnError(err) {
					m.doubt++
					l.doubted.Add(1)
					continue
				}
				l.fail(fmt.Errorf("%s: %v", loadKey(c, keys[i]), err))
				return
			}
			if m.doubt > 0 {
				// An earlier command on this key is in doubt on this
				// connection too: settle before judging.
				m.doubt++
				continue
			}
			m.acked++
			want := []int64{0, loadLimit, loadLimit - m.acked, -1}
			reset := m.acked * loadPeriod
			if len(got) != 5 || fmt.Sprint(got[:4]) != fmt.Sprint(want) || got[4] > reset || got[4] < reset-120 {
				l.fail(fmt.Errorf("%s after %d actions: %v, want %v and reset_after %d", loadKey(c, keys[i]), m.acked, got, want, reset))
				return
			}
			l.decided.Add(1)
		}
	}
}

// settle peeks at every key of client c that is in doubt. It reports
// whether all are settled; false while the server does not answer.
func (l *load) settle(ctx context.Context, rdb *redis.Client, c int) bool {
	for k := range l.models[c] {
		m := &l.models[c][k]
		if m.doubt == 0 {
			continue
		}
		got, err := rdb.Do(ctx, "CL.THROTTLE", loadKey(c, k), loadBurst, 1, loadPeriod, 0).Int64Slice()
		if err != nil {
			if !isConnError(err) {
				l.fail(fmt.Errorf("peek at %s: %v", loadKey(c, k), err))
			}
			return false
		}
		applied := loadLimit - got[2]
		if applied < m.acked || applied > m.acked+m.doubt {
			l.fail(fmt.Errorf("%s holds %d actions: %d were acknowledged and %d more in doubt (lost acknowledged state, or actions never sent)",
				loadKey(c, k), applied, m.acked, m.doubt))
			return false
		}
		m.acked, m.doubt = applied, 0
	}
	return true
}

// verifyAll settles every key and checks each holds exactly what the model
// says.
func (l *load) verifyAll(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1})
	defer rdb.Close()
	for c := range l.models {
		require.True(t, l.settle(ctx, rdb, c))
		for k := range l.models[c] {
			got, err := rdb.Do(ctx, "CL.THROTTLE", loadKey(c, k), loadBurst, 1, loadPeriod, 0).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, loadLimit-l.models[c][k].acked, got[2], "%s", loadKey(c, k))
		}
	}
	select {
	case err := <-l.wrong:
		t.Fatal(err)
	default:
	}
}

// isConnError reports whether err is the connection failing (the server
// stopping), not a reply.
func isConnError(err error) bool {
	var op *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &op) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed) ||
		strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), "i/o timeout")
}

// dropper connects and hangs up abruptly, again and again: mid-command,
// with a reset, right after a command, without a word.
func (l *load) dropper(d int) {
	for i := d; l.running(); i++ {
		conn, err := net.DialTimeout("tcp", l.addr, time.Second)
		if err != nil {
			continue
		}
		l.dropped.Add(1)
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		key := "dropped:" + strconv.Itoa(i%100)
		switch i % 4 {
		case 0: // half a command
			_, _ = io.WriteString(conn, "*5\r\n$11\r\nCL.THROTTLE\r\n$"+strconv.Itoa(len(key))+"\r\n"+key+"\r\n$1\r\n4")
		case 1: // a whole pipeline, then a reset before reading
			_, _ = io.WriteString(conn, strings.Repeat(testkit.Command("CL.THROTTLE", key, "4", "1", "1"), 20))
			_ = conn.(*net.TCPConn).SetLinger(0)
		case 2: // a command, its reply half read
			_, _ = io.WriteString(conn, testkit.Command("INFO"))
			_, _ = conn.Read(make([]byte, 10))
		case 3: // nothing at all
		}
		_ = conn.Close()
	}
}

// saver runs SAVE and BGSAVE over and over.
func (l *load) saver() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; l.running(); i++ {
		<-tick.C
		var err error
		if i%2 == 0 {
			err = rdb.Save(ctx).Err()
		} else {
			err = rdb.BgSave(ctx).Err()
			if err != nil && strings.Contains(err.Error(), "in progress") {
				err = nil
			}
		}
		switch {
		case err == nil:
			l.saves.Add(1)
		case !isConnError(err):
			l.fail(fmt.Errorf("SAVE/BGSAVE: %v", err))
			return
		}
	}
}

// benchSummary is each redis-benchmark run's last reported overall rate.
func (l *load) benchSummary() string {
	var runs []string
	for _, out := range l.benchOut {
		text := out.String()
		rate := "no rate reported"
		if i := strings.LastIndex(text, "rps="); i >= 0 {
			if _, rest, ok := strings.Cut(text[i:], "(overall: "); ok {
				if j := strings.IndexByte(rest, ')'); j >= 0 {
					rate = rest[:j] + " requests/s"
				}
			}
		}
		runs = append(runs, rate)
	}
	return strings.Join(runs, " before, ") + " after"
}
