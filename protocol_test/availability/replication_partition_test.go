package availability_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// A master cut off from its replica and its Sentinels by the network, with
// its clients still reaching it: what it decides after the cut, its
// failover throws away. With --min-replicas-to-write 1 it stops deciding
// once its replica's last acknowledgement is older than
// --min-replicas-max-lag; the test counts the decisions it accepted after
// the cut, and checks that none came later than the lag allows.
//
// The network is three Linux network namespaces' worth of veth pairs, made
// with iproute2 (`ip netns`), which needs root: CI runs as root.
//
//	this process --veth-- [master ns] --veth (cut)-- [replica ns: replica, 3 Sentinels]
//	     \----------------------------veth---------------/
//
// The test's process reaches both namespaces over links of their own, so
// the cut separates the master from its replica and Sentinels alone.

// partitionNet is the test's namespaces and addresses.
type partitionNet struct {
	master, replica string // namespace names
	net             string // "10.N", the first two octets
	cut             string // the master's end of the master-replica link
}

// Addresses: the test reaches the master at .1.2 and the replica's
// namespace at .2.2; master and replica talk over .3.1 and .3.2.
func (n partitionNet) masterAddr() string  { return n.net + ".1.2:6379" }
func (n partitionNet) replicaSide() string { return n.net + ".2.2" }
func (n partitionNet) masterLink() string  { return n.net + ".3.1" }

// ip runs iproute2 with args, failing the test on an error.
func ip(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// needNetns makes the test's network, or ends the test as unavailable
// where namespaces cannot be made (not root, no iproute2, a container
// without CAP_NET_ADMIN); under CI that is a failure.
func needNetns(t *testing.T) partitionNet {
	t.Helper()
	harness.NeedTool(t, "`apt-get install iproute2`", "ip")
	id := strconv.Itoa(os.Getpid() % 100000)
	n := partitionNet{master: "rcm" + id, replica: "rcr" + id, net: "10." + strconv.Itoa(100+os.Getpid()%150), cut: "rmr" + id}
	if out, err := exec.Command("ip", "netns", "add", n.master).CombinedOutput(); err != nil {
		harness.Unavailable(t, fmt.Sprintf("ip netns is not permitted here (%s: %s)", err, strings.TrimSpace(string(out))),
			"iproute2, and run the tests as root (CI does), where network namespaces can be made")
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.master).Run() })
	ip(t, "netns", "add", n.replica)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.replica).Run() })
	// The test's links to each namespace; deleting a namespace deletes the
	// pair with it.
	for i, ns := range []string{n.master, n.replica} {
		host, peer := "rv"+strconv.Itoa(i)+id, "rv"+strconv.Itoa(i)+id+"p"
		sub := n.net + "." + strconv.Itoa(i+1)
		ip(t, "link", "add", host, "type", "veth", "peer", "name", peer)
		ip(t, "link", "set", peer, "netns", ns)
		ip(t, "addr", "add", sub+".1/24", "dev", host)
		ip(t, "link", "set", host, "up")
		ip(t, "-n", ns, "addr", "add", sub+".2/24", "dev", peer)
		ip(t, "-n", ns, "link", "set", peer, "up")
		ip(t, "-n", ns, "link", "set", "lo", "up")
	}
	// The master's link to the replica's namespace: the one the test cuts.
	other := "rrm" + id
	ip(t, "link", "add", n.cut, "type", "veth", "peer", "name", other)
	ip(t, "link", "set", n.cut, "netns", n.master)
	ip(t, "link", "set", other, "netns", n.replica)
	ip(t, "-n", n.master, "addr", "add", n.masterLink()+"/24", "dev", n.cut)
	ip(t, "-n", n.master, "link", "set", n.cut, "up")
	ip(t, "-n", n.replica, "addr", "add", n.net+".3.2/24", "dev", other)
	ip(t, "-n", n.replica, "link", "set", other, "up")
	return n
}

// startInNetns runs path with args in namespace ns until the test ends
// (SIGTERM, then SIGKILL after 10 s), and returns once addr answers PING.
// Its output is printed if the test fails.
func startInNetns(t *testing.T, ns, addr, path string, args ...string) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, path}, args...)...) // ip execs path: its pid is path's
	var out testkit.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // our own child, by its pid
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s in %s (%s), its output:\n%s", filepath.Base(path), ns, addr, out.String())
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-exited:
			return true
		default:
			return harness.AnswersPing(addr)
		}
	}, 30*time.Second, 20*time.Millisecond, "%s in %s answers at %s", path, ns, addr)
	select {
	case <-exited:
		t.Fatalf("%s in %s exited: %s", path, ns, out.String())
	default:
	}
}

func TestPartitionedMasterStopsDecidingWithinMinReplicasMaxLag(t *testing.T) {
	const lag = 2 * time.Second
	sentinelPath := needSentinel(t)
	n := needNetns(t)
	bin := testkit.Binary(t).Path()
	dir := t.TempDir()

	startInNetns(t, n.master, n.masterAddr(), bin, "--bind", "0.0.0.0", "--port", "6379", "--protected-mode", "no", "--in-memory",
		"--min-replicas-to-write", "1", "--min-replicas-max-lag", strconv.Itoa(int(lag/time.Second)))
	startInNetns(t, n.replica, n.replicaSide()+":6380", bin, "--bind", "0.0.0.0", "--port", "6380", "--protected-mode", "no",
		"--in-memory", "--replicaof", n.masterLink()+" 6379")
	var sentinels []*redis.SentinelClient
	for i := range 3 {
		port := 26379 + i
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(port)+".conf")
		require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
			"port " + strconv.Itoa(port), "bind 0.0.0.0", "protected-mode no", "dir " + dir,
			"sentinel resolve-hostnames no",
			"sentinel monitor " + sentinelMaster + " " + n.masterLink() + " 6379 2",
			"sentinel down-after-milliseconds " + sentinelMaster + " 1000",
			"sentinel failover-timeout " + sentinelMaster + " 5000",
		}, "\n")+"\n"), 0o644))
		addr := n.replicaSide() + ":" + strconv.Itoa(port)
		startInNetns(t, n.replica, addr, sentinelPath, conf, "--sentinel")
		s := redis.NewSentinelClient(&redis.Options{Addr: addr, Protocol: 2})
		t.Cleanup(func() { _ = s.Close() })
		sentinels = append(sentinels, s)
	}

	rdb := redis.NewClient(&redis.Options{Addr: n.masterAddr(), Protocol: 2, MaxRetries: -1}) // no retry of NOREPLICAS
	t.Cleanup(func() { _ = rdb.Close() })
	require.Eventually(t, func() bool { return rdb.Do(harness.Ctx(t), "CL.THROTTLE", "warm", 10, 1, 60).Err() == nil },
		30*time.Second, 20*time.Millisecond, "the replica acknowledges: the master decides")
	var last lastErr
	require.Eventually(t, func() bool {
		m, err := sentinels[0].Master(context.Background(), sentinelMaster).Result()
		if !last.set(err) {
			return false
		}
		if m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" && m["flags"] == "master" {
			return true
		}
		last.set(fmt.Errorf("SENTINEL MASTER: %v", m))
		return false
	}, 30*time.Second, 50*time.Millisecond, "the Sentinels see the master, its replica and each other: %v", &last)

	load := startDecisionLoad(t, rdb, 4)
	loaded := time.Now()
	require.Eventually(t, func() bool { n, _, _, _ := load.since(time.Time{}); return n >= 5000 }, 30*time.Second, 10*time.Millisecond,
		"the load decides")
	ip(t, "-n", n.master, "link", "set", n.cut, "down")
	cut := time.Now()
	before, _, _, _ := load.since(time.Time{})
	rate := float64(before) / cut.Sub(loaded).Seconds()
	require.Eventually(t, func() bool { _, r, _, _ := load.since(cut); return r > 0 }, 15*time.Second, 10*time.Millisecond,
		"the isolated master refuses")
	require.Eventually(t, func() bool {
		addr, err := sentinels[0].GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		return last.set(err) && len(addr) == 2 && addr[0] == n.net+".3.2"
	}, sentinelDeadline, 50*time.Millisecond, "the Sentinels promote the replica: %v", &last)
	load.stop()
	require.NoError(t, load.err())

	accepted, refused, lastAccepted, firstRefused := load.since(cut)
	t.Logf("partition: %.0f decisions a second before the cut; the isolated master accepted %d decisions after it, the last %v after it, "+
		"and refused from %v after it (%d refusals); --min-replicas-max-lag %v",
		rate, accepted, lastAccepted.Sub(cut).Round(time.Millisecond), firstRefused.Sub(cut).Round(time.Millisecond), refused, lag)
	require.Positive(t, accepted, "the master decides until the lag has passed")
	// The replica acknowledges every second, and the master counts its good
	// replicas every 100 ms: its last acknowledgement, up to 1 s before the
	// cut, is older than the lag at most lag + 100 ms after it.
	require.Less(t, lastAccepted.Sub(cut), lag+500*time.Millisecond, "no decision accepted later than the lag allows")
	require.Greater(t, firstRefused.Sub(cut), lag-time.Second-100*time.Millisecond, "no refusal before the lag, less the 1 s between acknowledgements")
	res, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "warm", 10, 1, 60, 0).Int64Slice()
	require.NoError(t, err, "the isolated master answers peeks")
	require.Equal(t, int64(11), res[1])
}
