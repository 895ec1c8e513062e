package clusternode

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/resp"
)

// fakeSentinel answers SENTINEL MASTERS and REPLICAS from its table, and
// publishes +switch-master to its subscribers on demand. Down, it closes
// every connection at once.
type fakeSentinel struct {
	addr string

	mu       sync.Mutex
	masters  []fakeMaster
	down     bool
	subs     []net.Conn
	commands int // SENTINEL MASTERS answered
}

type fakeMaster struct {
	name  string
	port  int
	epoch int64
	flags string
	// replicas are the replicas' ports and flags.
	replicas map[int]string
}

func startFakeSentinel(t *testing.T, masters ...fakeMaster) *fakeSentinel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &fakeSentinel{addr: ln.Addr().String(), masters: masters}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

func (s *fakeSentinel) serve(conn net.Conn) {
	rd := resp.NewReader(conn, resp.Limits{})
	for {
		cmd, err := rd.Next(true)
		if err != nil {
			_ = conn.Close()
			return
		}
		if cmd == nil {
			if rd.Fill() != nil {
				_ = conn.Close()
				return
			}
			continue
		}
		s.mu.Lock()
		if s.down {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		var reply []byte
		switch args := fmt.Sprintf("%s %s", cmd[0], cmd[1]); args {
		case "SENTINEL MASTERS":
			s.commands++
			reply = fmt.Appendf(nil, "*%d\r\n", len(s.masters))
			for _, m := range s.masters {
				reply = appendEntry(reply, "name", m.name, "ip", "127.0.0.1", "port", strconv.Itoa(m.port),
					"flags", m.flags, "config-epoch", strconv.FormatInt(m.epoch, 10))
			}
		case "SENTINEL REPLICAS":
			reply = []byte("*0\r\n")
			for _, m := range s.masters {
				if m.name == string(cmd[2]) {
					reply = fmt.Appendf(nil, "*%d\r\n", len(m.replicas))
					for port, flags := range m.replicas {
						reply = appendEntry(reply, "ip", "127.0.0.1", "port", strconv.Itoa(port), "flags", flags)
					}
				}
			}
		case "SUBSCRIBE +switch-master":
			s.subs = append(s.subs, conn)
			reply = []byte("*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n")
		default:
			reply = []byte("-ERR unknown\r\n")
		}
		s.mu.Unlock()
		if _, err := conn.Write(reply); err != nil {
			return
		}
	}
}

func appendEntry(b []byte, kv ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(kv))
	for _, f := range kv {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(f), f)
	}
	return b
}

// set replaces the master named name in the table.
func (s *fakeSentinel) set(m fakeMaster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.masters {
		if s.masters[i].name == m.name {
			s.masters[i] = m
		}
	}
}

func (s *fakeSentinel) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// switchMaster publishes +switch-master to the subscribers.
func (s *fakeSentinel) switchMaster(payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := fmt.Appendf(nil, "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$%d\r\n%s\r\n", len(payload), payload)
	for _, c := range s.subs {
		_, _ = c.Write(msg)
	}
}

func (s *fakeSentinel) polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// The two shards of fourNodes as Sentinel reports them before any failover.
func shardOne(epoch int64) fakeMaster {
	return fakeMaster{name: "redcell-1", port: 7001, epoch: epoch, flags: "master", replicas: map[int]string{7003: "slave"}}
}

func shardTwo() fakeMaster {
	return fakeMaster{name: "redcell-2", port: 7009, flags: "master", replicas: map[int]string{7010: "slave"}}
}

// heldNode is node id of fourNodes restarted with the Sentinels ss: held.
func heldNode(t *testing.T, id string, ss ...*fakeSentinel) (*testNode, *SentinelWatch) {
	t.Helper()
	dir := t.TempDir()
	n := newTestNode(t, id)
	st, err := cluster.NewState(dir, false, "127.0.0.1", 0)
	require.NoError(t, err)
	require.NoError(t, st.SetNodeID(id))
	var addrs []string
	for _, s := range ss {
		addrs = append(addrs, s.addr)
	}
	require.NoError(t, st.SetSentinels(addrs))
	n.st = st
	fourNodes(t, n)
	st, err = cluster.NewState(dir, false, "127.0.0.1", 0) // restarted
	require.NoError(t, err)
	require.True(t, st.Held())
	n.st = st
	cfg := Config{State: st, Store: n.store, Now: func() time.Time { return t0 }, Replication: n.repl}
	n.m = NewMigrator(cfg)
	n.f = NewFollower(cfg, n.m)
	w := NewSentinelWatch(cfg, n.f)
	return n, w
}

// A node restarted with Sentinels is held until a majority of them answers;
// then it takes the shards' masters from the highest epoch reported, and
// follows: here the old master of a shard that failed over while it was down
// serves nothing as master and becomes its successor's replica.
func TestSentinelWatchHoldsAnOldMasterUntilAMajorityAnswers(t *testing.T) {
	s1 := startFakeSentinel(t, shardOne(0), shardTwo())
	s2 := startFakeSentinel(t, shardOne(0), shardTwo())
	s3 := startFakeSentinel(t, shardOne(0), shardTwo())
	s1.set(fakeMaster{name: "redcell-1", port: 7003, epoch: 3, flags: "master", replicas: map[int]string{7001: "s_down,slave"}})
	s2.setDown(true)
	s3.setDown(true)
	a, w := heldNode(t, idA, s1, s2, s3)

	w.poll(context.Background())
	require.True(t, a.st.Held(), "one Sentinel of three answered")
	r, _ := a.st.Route(0, false, false, false)
	require.Equal(t, cluster.Moved, r, "Sentinel's word is taken at once: slot 0 is the promoted replica's")
	require.Empty(t, a.repl.calls, "held: nothing followed yet")

	s3.setDown(false)
	w.poll(context.Background())
	require.False(t, a.st.Held())
	top, me := a.st.Topology()
	require.Equal(t, idC, me.MasterID, "the old master is its successor's replica")
	require.Equal(t, idC, top.Owner(0).ID)
	require.Equal(t, []string{"127.0.0.1:7003"}, a.repl.calls)
	require.Equal(t, int64(3), a.st.Epoch(idA))
	require.True(t, a.st.Health(idA).Suspect)

	// s3 has not heard of the failover: its older report changes nothing.
	w.poll(context.Background())
	top, _ = a.st.Topology()
	require.Equal(t, idC, top.Owner(0).ID)
}

// A failover under way (failover_in_progress) is not taken until it ends,
// and a quorum's o_down shows as the node's health.
func TestSentinelWatchWaitsForAFailoverToEnd(t *testing.T) {
	s1 := startFakeSentinel(t, shardOne(0), shardTwo())
	f, w := heldNode(t, idF, s1)
	w.poll(context.Background())
	require.False(t, f.st.Held())

	s1.set(fakeMaster{name: "redcell-1", port: 7001, epoch: 5, flags: "master,s_down,o_down,failover_in_progress", replicas: map[int]string{7003: "slave"}})
	w.poll(context.Background())
	top, _ := f.st.Topology()
	require.Equal(t, idA, top.Owner(0).ID, "the failover is under way: its outcome is not known")
	require.Equal(t, cluster.Health{Suspect: true, Down: true}, f.st.Health(idA))

	s1.set(fakeMaster{name: "redcell-1", port: 7003, epoch: 5, flags: "master", replicas: map[int]string{7001: "s_down,slave,disconnected"}})
	w.poll(context.Background())
	top, _ = f.st.Topology()
	require.Equal(t, idC, top.Owner(0).ID)
	require.Empty(t, f.repl.calls, "F's own shard did not change")
}

// +switch-master on any Sentinel makes the watch ask them all at once, not
// at its next round.
func TestSentinelWatchAsksAtOnceOnSwitchMaster(t *testing.T) {
	s1 := startFakeSentinel(t, shardOne(0), shardTwo())
	f, w := heldNode(t, idF, s1)
	w.every = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return !f.st.Held() }, 5*time.Second, 5*time.Millisecond, "the first round")
	require.Eventually(t, func() bool {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		return len(s1.subs) == 1
	}, 5*time.Second, 5*time.Millisecond, "subscribed")
	polls := s1.polls()
	s1.set(fakeMaster{name: "redcell-1", port: 7003, epoch: 1, flags: "master"})
	s1.switchMaster("redcell-1 127.0.0.1 7001 127.0.0.1 7003")
	require.Eventually(t, func() bool {
		top, _ := f.st.Topology()
		return top.Owner(0).ID == idC
	}, 5*time.Second, 5*time.Millisecond)
	require.Greater(t, s1.polls(), polls)
}
