package clusteradmin

import (
	"bufio"
	"crypto/sha1"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// members returns a node for each "host:port", its ID the SHA-1 of the
// address.
func members(addrs ...string) []Member {
	var out []Member
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		p, _ := strconv.Atoi(port)
		out = append(out, Member{ID: fmt.Sprintf("%x", sha1.Sum([]byte(a))), Host: host, Port: p})
	}
	return out
}

// layoutString is a layout as "master<-replica,replica from-to" a shard,
// each node by its address.
func layoutString(shards []Shard) []string {
	var out []string
	for _, s := range shards {
		line := s.Master.Addr() + "<-"
		for i, r := range s.Replicas {
			if i > 0 {
				line += ","
			}
			line += r.Addr()
		}
		out = append(out, line+" "+strconv.Itoa(s.From)+"-"+strconv.Itoa(s.To))
	}
	return out
}

// The layouts redis-cli --cluster create makes of the same nodes: masters
// on distinct hosts first, each replica on a host other than its master's
// where the hosts allow.
func TestLayoutPlacesAsRedisCLI(t *testing.T) {
	for _, c := range []struct {
		name     string
		nodes    []string
		replicas int
		want     []string
	}{{
		// redis-cli's well-known six on one host: 7004 replicates 7000,
		// 7005 7001, 7003 7002.
		name:     "six nodes on one host",
		nodes:    []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"},
		replicas: 1,
		want:     []string{"127.0.0.1:7000<-127.0.0.1:7004 0-5460", "127.0.0.1:7001<-127.0.0.1:7005 5461-10922", "127.0.0.1:7002<-127.0.0.1:7003 10923-16383"},
	}, {
		name:     "three hosts of two, given host by host",
		nodes:    []string{"10.0.0.1:6379", "10.0.0.1:6380", "10.0.0.2:6379", "10.0.0.2:6380", "10.0.0.3:6379", "10.0.0.3:6380"},
		replicas: 1,
		want:     []string{"10.0.0.1:6379<-10.0.0.2:6380 0-5460", "10.0.0.2:6379<-10.0.0.3:6380 5461-10922", "10.0.0.3:6379<-10.0.0.1:6380 10923-16383"},
	}, {
		name:     "two hosts of three: masters alternate",
		nodes:    []string{"10.0.0.1:1", "10.0.0.1:2", "10.0.0.1:3", "10.0.0.2:1", "10.0.0.2:2", "10.0.0.2:3"},
		replicas: 1,
		want:     []string{"10.0.0.1:1<-10.0.0.2:3 0-5460", "10.0.0.2:1<-10.0.0.1:3 5461-10922", "10.0.0.1:2<-10.0.0.2:2 10923-16383"},
	}, {
		name:     "three hosts of three, two replicas each",
		nodes:    []string{"a:1", "a:2", "a:3", "b:1", "b:2", "b:3", "c:1", "c:2", "c:3"},
		replicas: 2,
		want:     []string{"a:1<-b:2,c:2 0-5460", "b:1<-a:3,c:3 5461-10922", "c:1<-a:2,b:3 10923-16383"},
	}, {
		// Two masters on a, and b's one spare node: one of a's masters
		// must take a replica of its own host, whatever the swaps.
		name:     "four on one host, two on another",
		nodes:    []string{"a:1", "a:2", "a:3", "a:4", "b:1", "b:2"},
		replicas: 1,
		want:     []string{"a:1<-b:2 0-5460", "b:1<-a:3 5461-10922", "a:2<-a:4 10923-16383"},
	}, {
		name:     "no replicas",
		nodes:    []string{"a:1", "a:2", "b:1", "b:2"},
		replicas: 0,
		want:     []string{"a:1<- 0-4095", "b:1<- 4096-8191", "a:2<- 8192-12287", "b:2<- 12288-16383"},
	}, {
		// Seven nodes, two replicas each: two masters, and the node left
		// over is a third replica of the first master. Of a:1's three, two
		// share host c, as the only nodes off host a are b:2, c:1 and c:2.
		name:     "a node left over",
		nodes:    []string{"a:1", "b:1", "c:1", "a:2", "b:2", "c:2", "a:3"},
		replicas: 2,
		want:     []string{"a:1<-c:1,b:2,c:2 0-8191", "b:1<-a:2,a:3 8192-16383"},
	}, {
		name:     "one master",
		nodes:    []string{"a:1", "b:1"},
		replicas: 1,
		want:     []string{"a:1<-b:1 0-16383"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			shards, err := Layout(members(c.nodes...), c.replicas)
			require.NoError(t, err)
			require.Equal(t, c.want, layoutString(shards))
		})
	}

	_, err := Layout(members("a:1", "a:2"), 2)
	require.EqualError(t, err, "2 nodes cannot make a master and 2 replicas: give 3 nodes at least")
	_, err = Layout(members("a:1"), -1)
	require.EqualError(t, err, "--replicas -1: must be 0 or more")
}

// Every layout of up to seven nodes on up to three hosts, with one or two
// replicas: every node placed once, each master with replicas replicas at
// least (the nodes left over spread one a master in turn, so that no two
// masters' counts differ by more than one), and no layout of the same
// masters has a lower anti-affinity score: a replica shares its master's
// host only where the hosts allow nothing else.
func TestLayoutAntiAffinityIsTheBestTheHostsAllow(t *testing.T) {
	hosts := []string{"a", "b", "c"}
	checked := 0
	for n := 2; n <= 7; n++ {
		for replicas := 1; replicas <= 2; replicas++ {
			if n < replicas+1 {
				continue
			}
			patterns := 1
			for range n {
				patterns *= len(hosts)
			}
			for p := range patterns {
				var addrs []string
				for i, q := 0, p; i < n; i, q = i+1, q/len(hosts) {
					addrs = append(addrs, hosts[q%len(hosts)]+":"+strconv.Itoa(i+1))
				}
				nodes := members(addrs...)
				shards, err := Layout(nodes, replicas)
				if err != nil || len(shards) != n/(replicas+1) {
					t.Fatalf("%v: %d shards, %v", addrs, len(shards), err)
				}
				seen := map[string]bool{}
				var order []Member
				master := map[string]int{}
				for m, s := range shards {
					order = append(order, s.Master)
					if k, most := len(s.Replicas), len(shards[0].Replicas); k < replicas || k > most || k < most-1 {
						t.Fatalf("%v: shard %d has %d replicas: %v", addrs, m, k, layoutString(shards))
					}
					for _, x := range append([]Member{s.Master}, s.Replicas...) {
						if seen[x.ID] {
							t.Fatalf("%v: %s placed twice", addrs, x.Addr())
						}
						seen[x.ID] = true
					}
					for _, r := range s.Replicas {
						master[r.ID] = m
					}
				}
				if len(seen) != n {
					t.Fatalf("%v: %d nodes placed", addrs, len(seen))
				}
				if got, best := Score(nodes, order, master), bestScore(nodes, order, master); got != best {
					t.Fatalf("%v: score %d, where %d is possible: %v", addrs, got, best, layoutString(shards))
				}
				checked++
			}
		}
	}
	require.Greater(t, checked, 5000)
}

// bestScore is the lowest score of any assignment of the same replicas to
// the same masters, as many to each: every permutation of the replicas
// over the masters' places.
func bestScore(nodes, order []Member, master map[string]int) int {
	var reps []string
	var places []int
	for _, n := range nodes {
		if m, ok := master[n.ID]; ok {
			reps = append(reps, n.ID)
			places = append(places, m)
		}
	}
	best := Score(nodes, order, master)
	try := map[string]int{}
	var permute func(k int, used []bool)
	permute = func(k int, used []bool) {
		if k == len(reps) {
			best = min(best, Score(nodes, order, try))
			return
		}
		for i, m := range places {
			if used[i] || (i > 0 && places[i-1] == m && !used[i-1]) {
				continue
			}
			used[i] = true
			try[reps[k]] = m
			permute(k+1, used)
			used[i] = false
		}
	}
	permute(0, make([]bool, len(places)))
	return best
}

// SlotSplit gives the ranges redis-cli gives, for 1 to 64 masters
// (testdata/redis-cli-slots.txt), and Layout uses them.
func TestSlotSplitIsRedisCLIs(t *testing.T) {
	f, err := os.Open("testdata/redis-cli-slots.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	counts := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Fields(sc.Text())
		masters, err := strconv.Atoi(fields[0])
		require.NoError(t, err)
		var got []string
		for _, r := range SlotSplit(masters) {
			got = append(got, strconv.Itoa(r[0])+"-"+strconv.Itoa(r[1]))
		}
		require.Equal(t, fields[1:], got, "%d masters", masters)

		var addrs []string
		for i := range masters {
			addrs = append(addrs, "h:"+strconv.Itoa(i+1))
		}
		shards, err := Layout(members(addrs...), 0)
		require.NoError(t, err)
		for i, s := range shards {
			require.Equal(t, fields[1+i], strconv.Itoa(s.From)+"-"+strconv.Itoa(s.To), "%d masters: shard %d", masters, i)
		}
		counts++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 64, counts)
}
