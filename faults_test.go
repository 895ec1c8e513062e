package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// smallDisk mounts a tmpfs of size bytes for the test and returns its path.
// Mounting needs root: without it the test is skipped, except under CI, which
// runs as root and must run every test.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("mount -t tmpfs failed (%v: %s): the small-disk tests need root", err, strings.TrimSpace(string(out)))
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this is a failure)")
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ { // the child may take a moment to release its files
			if exec.Command("umount", dir).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("umount %s failed", dir)
	})
	return dir
}

// fillDisk writes a file in dir until the disk is full, as another process
// would, and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			return path
		}
	}
}

func info(t *testing.T, rdb *redis.Client, section string) string {
	t.Helper()
	s, err := rdb.Info(context.Background(), section).Result()
	require.NoError(t, err)
	return s
}

func infoField(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:(.*)\r$`).FindStringSubmatch(info(t, rdb, section))
	require.NotNil(t, m, "INFO %s has no %s", section, field)
	return m[1]
}

// metric reads one unlabelled metric's value from a /metrics page.
func metric(t *testing.T, url, name string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	require.NotNil(t, m, "no %s in:\n%s", name, body)
	return string(m[1])
}

// A disk filled by another process while the server runs: the server keeps
// deciding, flushes fail and say so (INFO, the log once, not once a try),
// SAVE answers an error at once instead of hanging, and once the space is
// back a flush writes everything; SIGTERM then saves and exits 0, and a
// restart has every key.
func TestFullDiskNeverStopsDecisionsAndFlushesResume(t *testing.T) {
	disk := smallDisk(t, 24<<20)
	dir := filepath.Join(disk, "data")
	c := startChild(t, "--dir", dir, "--flush-interval", "50ms", "--disk-reserve", "2mb", "--metrics-addr", "127.0.0.1:0")
	rdb := c.client(t)
	ctx := context.Background()
	metricsURL := c.MetricsURL
	require.NotEmpty(t, metricsURL, "the metrics address in the log:\n%s", c.Log())
	keys := makeKeys(t, rdb, 2000)
	require.Equal(t, "0", metric(t, metricsURL, "redcell_flush_failures_total"))
	require.Eventually(t, func() bool { return infoField(t, rdb, "persistence", "rdb_changes_since_last_save") == "0" }, 10*time.Second, 10*time.Millisecond)

	filler := fillDisk(t, disk)
	more := make([]string, 0, 2000)
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("during:%d", i)
		r, err := throttle(ctx, rdb, k, 9, 1, 3600)
		require.NoError(t, err, "decisions go on with a full disk")
		require.Equal(t, []int64{0, 10, 9, -1, 3600}, r)
		more = append(more, k)
	}
	require.Eventually(t, func() bool {
		return infoField(t, rdb, "persistence", "rdb_last_bgsave_status") == "err"
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "full", infoField(t, rdb, "persistence", "redcell_disk_state"))
	require.NotEqual(t, "0", metric(t, metricsURL, "redcell_flush_failures_total"))
	require.Equal(t, "1", metric(t, metricsURL, "redcell_flush_failing"))
	require.Equal(t, "2000", infoField(t, rdb, "persistence", "rdb_changes_since_last_save"))
	start := time.Now()
	err := rdb.Save(ctx).Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "ERR disk full")
	require.Less(t, time.Since(start), 5*time.Second, "SAVE answers, it does not hang")
	time.Sleep(500 * time.Millisecond) // ten more failed flushes, to count log lines over
	require.Equal(t, 1, strings.Count(c.Log(), "flush failed"), "one line for many failed flushes:\n%s", c.Log())
	require.Less(t, strings.Count(c.Log(), "\n"), 20, "the log does not flood:\n%s", c.Log())

	require.NoError(t, os.Remove(filler))
	require.Eventually(t, func() bool {
		return infoField(t, rdb, "persistence", "rdb_last_bgsave_status") == "ok" &&
			infoField(t, rdb, "persistence", "rdb_changes_since_last_save") == "0"
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, "ok", infoField(t, rdb, "persistence", "redcell_disk_state"))
	require.Equal(t, "0", metric(t, metricsURL, "redcell_flush_failing"))
	require.Contains(t, c.Log(), "flush succeeded again")
	before := tats(t, rdb, append(keys, more...))

	c.Signal(syscall.SIGTERM)
	require.Equal(t, 0, c.ExitCode())
	c = startChild(t, "--dir", dir, "--disk-reserve", "2mb")
	require.Equal(t, before, tats(t, c.client(t), append(keys, more...)))
}

// SIGTERM on a full disk with changes pending: the final save fails, is
// reported, and the process exits within the bound instead of hanging.
func TestSIGTERMOnAFullDiskExitsAndSaysTheSaveFailed(t *testing.T) {
	disk := smallDisk(t, 16<<20)
	dir := filepath.Join(disk, "data")
	c := startChild(t, "--dir", dir, "--flush-interval", "1h", "--disk-reserve", "1mb")
	rdb := c.client(t)
	makeKeys(t, rdb, 500)
	fillDisk(t, disk)
	c.Signal(syscall.SIGTERM)
	require.Equal(t, 1, c.ExitCode())
	require.Contains(t, c.Log(), "the final save failed")
	require.Contains(t, c.Log(), "disk full")
}

// Durable mode on a full disk: a decision that would store a change answers
// MISCONF (nothing unpersisted is acknowledged), peeks and limited decisions
// are answered, and once space returns changes are accepted again.
func TestDurableModeRefusesChangesWhileTheDiskIsFull(t *testing.T) {
	disk := smallDisk(t, 16<<20)
	dir := filepath.Join(disk, "data")
	c := startChild(t, "--dir", dir, "--flush-interval", "0", "--disk-reserve", "1mb")
	rdb := c.client(t)
	ctx := context.Background()
	r, err := throttle(ctx, rdb, "k", 0, 1, 3600)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 0, -1, 3600}, r)

	filler := fillDisk(t, disk)
	// The first change after the disk filled cannot be synced: its reply is
	// dropped and the connection closed (unacknowledged), as before; from
	// then on the server knows, and answers MISCONF.
	_, _ = throttle(ctx, rdb, "first", 0, 1, 3600)
	require.Eventually(t, func() bool {
		_, err := throttle(ctx, rdb, "new", 0, 1, 3600)
		return err != nil && strings.HasPrefix(err.Error(), "MISCONF ")
	}, 10*time.Second, 20*time.Millisecond)
	r, err = throttle(ctx, rdb, "k", 0, 1, 3600)
	require.NoError(t, err, "a limited decision changes nothing: answered")
	require.Equal(t, int64(1), r[0])
	r, err = throttle(ctx, rdb, "k", 0, 1, 3600, 0)
	require.NoError(t, err, "a peek is answered")
	require.Equal(t, int64(0), r[0])
	require.ErrorContains(t, rdb.Del(ctx, "k").Err(), "MISCONF")

	require.NoError(t, os.Remove(filler))
	require.Eventually(t, func() bool {
		r, err := throttle(ctx, rdb, "new", 0, 1, 3600)
		return err == nil && r[0] == 0
	}, 20*time.Second, 50*time.Millisecond)
}

// A start on a disk with no room fails at once, exit status 1, saying how
// much is free and how much it needs; it neither hangs nor listens.
func TestStartOnAFullDiskFailsFast(t *testing.T) {
	disk := smallDisk(t, 2<<20)
	start := time.Now()
	out, status := testkit.Self().Run(t, nil, "--port", "0", "--dir", filepath.Join(disk, "data"))
	require.Equal(t, 1, status)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, out, "disk full")
	require.Contains(t, out, "redcell needs 32.00M free to start")
	require.NotContains(t, out, "ready to accept connections")
}

// A second server on the same --dir says another process holds it.
func TestSecondServerOnTheSameDirSaysWhoHoldsIt(t *testing.T) {
	dir := t.TempDir()
	startChild(t, "--dir", dir)
	out, status := testkit.Self().Run(t, nil, "--port", "0", "--dir", dir)
	require.Equal(t, 1, status)
	require.Contains(t, out, "another process holds the lock on "+filepath.Join(dir, "LOCK")+"; is another redcell running with --dir "+dir+"?")
}

// SIGHUP does not stop the server (Redis ignores it too).
func TestSIGHUPIsIgnored(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb := c.client(t)
	keys := makeKeys(t, rdb, 10)
	c.Signal(syscall.SIGHUP)
	require.NoError(t, rdb.Ping(context.Background()).Err())
	require.Equal(t, "PONG", rdb.Ping(context.Background()).Val())
	before := tats(t, rdb, keys)
	require.NoError(t, c.Stop(syscall.SIGTERM))
	c = startChild(t, "--dir", dir)
	require.Equal(t, before, tats(t, c.client(t), keys))
}

// With stderr a pipe whose reader has gone (a log shipper restarting), the
// lines logged at shutdown fail with EPIPE instead of killing the process
// with SIGPIPE: it saves and exits 0.
func TestBrokenLogPipeDoesNotStopTheFinalSave(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := testkit.Self().Command(nil, "--port", "0", "--flush-interval", "1h", "--dir", dir)
	cmd.Stderr = w
	require.NoError(t, cmd.Start())
	require.NoError(t, w.Close())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(r)
	addr := ""
	for addr == "" && sc.Scan() {
		if port, ok := testkit.ReadyPort(sc.Text()); ok {
			addr = "127.0.0.1:" + strconv.Itoa(port)
		}
	}
	require.NotEmpty(t, addr)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	keys := makeKeys(t, rdb, 50)
	before := tats(t, rdb, keys)
	require.NoError(t, r.Close()) // the reader dies
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "exit status 0, not 141 (SIGPIPE)")
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	c := startChild(t, "--dir", dir)
	require.Equal(t, before, tats(t, c.client(t), keys), "the final save ran")
}

// fillDiskLeaving fills dir's disk until only about free bytes are left.
func fillDiskLeaving(t *testing.T, dir string, free int64) string {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	avail := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(dir, "filler")
	require.NoError(t, os.WriteFile(path, make([]byte, max(avail-free, 0)), 0o644))
	return path
}

// With a few MiB free, a load that writes more than fits: Pebble used to
// panic in its log write (exit 2), or call Fatalf in durable mode (exit 1).
// Now the flushes that do not fit fail, the server keeps answering, and once
// space is back every acknowledged key is saved.
func TestLoadPastAFewFreeMiBNeverCrashes(t *testing.T) {
	for _, mode := range []struct{ name, interval string }{{"everysec", "100ms"}, {"durable", "0"}} {
		t.Run(mode.name, func(t *testing.T) {
			disk := smallDisk(t, 40<<20)
			dir := filepath.Join(disk, "data")
			c := startChild(t, "--dir", dir, "--flush-interval", mode.interval, "--disk-reserve", "2mb")
			rdb := c.client(t)
			ctx := context.Background()
			filler := fillDiskLeaving(t, disk, 3<<20)
			acked := map[string]bool{}
			for batch := 0; batch < 40; batch++ {
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, 0, 2500)
				for i := 0; i < 2500; i++ {
					cmds = append(cmds, pipe.Do(ctx, "CL.THROTTLE", fmt.Sprintf("load:%d:%d:%s", batch, i, strings.Repeat("x", 40)), 9, 1, 3600))
				}
				_, _ = pipe.Exec(ctx)
				for _, cmd := range cmds {
					if r, err := cmd.Int64Slice(); err == nil && r[0] == 0 {
						acked[cmd.Args()[1].(string)] = true
					}
				}
			}
			require.NoError(t, rdb.Ping(ctx).Err(), "the server is still up")
			require.NotContains(t, c.Log(), "panic")
			if c.Exited() {
				t.Fatalf("the server exited:\n%s", c.Log())
			}
			require.NoError(t, os.Remove(filler))
			require.Eventually(t, func() bool {
				return rdb.Save(ctx).Err() == nil
			}, 20*time.Second, 50*time.Millisecond)
			keys := make([]string, 0, len(acked))
			for k := range acked {
				keys = append(keys, k)
			}
			before := tats(t, rdb, keys)
			require.Len(t, before, len(keys))
			require.NoError(t, c.Stop(syscall.SIGTERM))
			c = startChild(t, "--dir", dir, "--disk-reserve", "2mb")
			require.Equal(t, before, tats(t, c.client(t), keys), "%d acknowledged keys after the restart", len(keys))
			t.Logf("%s: %d of 100000 decisions acknowledged and kept", mode.name, len(keys))
		})
	}
}
