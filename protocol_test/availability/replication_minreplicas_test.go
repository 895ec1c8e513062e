package availability_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// --min-replicas-to-write and --min-replicas-max-lag, as a master meets a
// replica that stops acknowledging: once its last acknowledgement is older
// than the lag, decisions that would store are answered NOREPLICAS, peeks
// are answered, and when it acknowledges again the master decides again.

const noReplicasText = "NOREPLICAS Not enough good replicas to write."

// decisionLoad decides on a master from a few goroutines, each decision
// allowed (a burst no load spends), and records when each was answered
// and how: allowed, or refused NOREPLICAS.
type decisionLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	allowed  []time.Time // when each allowed decision was answered
	refused  []time.Time // when each NOREPLICAS came
	otherErr error
}

func startDecisionLoad(t *testing.T, rdb *redis.Client, workers int) *decisionLoad {
	c, cancel := context.WithCancel(context.Background())
	l := &decisionLoad{cancel: cancel}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; c.Err() == nil; i++ {
				key := "mr:" + strconv.Itoa(w) + ":" + strconv.Itoa(i%1000)
				err := rdb.Do(c, "CL.THROTTLE", key, 1000000, 1, 3600).Err()
				now := time.Now()
				l.mu.Lock()
				switch {
				case err == nil:
					l.allowed = append(l.allowed, now)
				case strings.HasPrefix(err.Error(), "NOREPLICAS "):
					l.refused = append(l.refused, now)
				case c.Err() == nil:
					l.otherErr = err
				}
				l.mu.Unlock()
				if err != nil {
					select { // refused: no spin on the shared cores
					case <-c.Done():
					case <-time.After(2 * time.Millisecond):
					}
				}
			}
		}()
	}
	t.Cleanup(l.stop)
	return l
}

func (l *decisionLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// since counts the decisions allowed and refused after from, and returns
// the last allowed and the first refused among them.
func (l *decisionLoad) since(from time.Time) (allowed, refused int, lastAllowed, firstRefused time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.allowed {
		if a.After(from) {
			allowed++
			lastAllowed = a
		}
	}
	for _, r := range l.refused {
		if r.After(from) {
			if refused == 0 {
				firstRefused = r
			}
			refused++
		}
	}
	return
}

func (l *decisionLoad) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.otherErr
}

// A replica stopped (SIGSTOP) stops acknowledging: the master refuses
// within the lag and the replica's acknowledgement interval (1 s) of the
// stop, and not before the lag less that interval; peeks go on; resumed
// (SIGCONT), it acknowledges, and the master decides again.
func TestMinReplicasWithAReplicaStopped(t *testing.T) {
	const lag = 2 * time.Second
	master := startRedcellNode(t, 0)
	require.NoError(t, master.rdb.ConfigSet(harness.Ctx(t), "min-replicas-to-write", "1").Err())
	require.NoError(t, master.rdb.ConfigSet(harness.Ctx(t), "min-replicas-max-lag", strconv.Itoa(int(lag/time.Second))).Err())
	require.EqualError(t, master.rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 10, 1, 60).Err(), noReplicasText, "no replica yet")

	replica := startRedcellNode(t, master.Port)
	pid := replica.Pid()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // our own child, by its pid: its cleanup stops it
	require.Eventually(t, func() bool { return master.rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 10, 1, 60).Err() == nil },
		30*time.Second, 20*time.Millisecond, "the replica acknowledges")
	info, err := master.info()
	require.NoError(t, err)
	require.Equal(t, "1", info["min_slaves_good_slaves"])

	load := startDecisionLoad(t, master.rdb, 2)
	require.Eventually(t, func() bool { n, _, _, _ := load.since(time.Time{}); return n > 100 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	stopped := time.Now()
	require.Eventually(t, func() bool { _, r, _, _ := load.since(stopped); return r > 0 }, 10*time.Second, 10*time.Millisecond,
		"the master refuses once the replica is silent for the lag")
	allowed, _, last, first := load.since(stopped)
	t.Logf("replica stopped: %d decisions allowed after the stop, the last %v after it; the first NOREPLICAS %v after it (lag %v)",
		allowed, last.Sub(stopped).Round(time.Millisecond), first.Sub(stopped).Round(time.Millisecond), lag)
	require.Greater(t, first.Sub(stopped), lag-time.Second-100*time.Millisecond, "not before the lag, less the 1 s between acknowledgements")
	require.Less(t, first.Sub(stopped), lag+time.Second, "within the lag and the master's count of its replicas every 100 ms")
	res, err := master.rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 10, 1, 60, 0).Int64Slice()
	require.NoError(t, err, "a peek is answered")
	require.Equal(t, int64(11), res[1])
	info, err = master.info()
	require.NoError(t, err)
	require.Equal(t, "0", info["min_slaves_good_slaves"])

	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	resumed := time.Now()
	require.Eventually(t, func() bool { n, _, _, _ := load.since(resumed); return n > 0 }, 10*time.Second, 10*time.Millisecond,
		"resumed, the replica acknowledges and the master decides again")
	load.stop()
	require.NoError(t, load.err())
}
