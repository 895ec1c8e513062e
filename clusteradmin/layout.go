package clusteradmin

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
)

// Member is a node to be placed in a new cluster: its ID and where it is
// reached. Host is the host's address as the topology lists it (an IP);
// nodes of one Host are on one machine, which a replica had better not
// share with its master.
type Member struct {
	ID   string
	Host string
	Port int
}

// Addr is m's host:port.
func (m Member) Addr() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.Port)) }

// Shard is one master of a new cluster with its replicas and its slots,
// From to To.
type Shard struct {
	Master   Member
	Replicas []Member
	From, To int
}

// Slots is how many slots s serves.
func (s Shard) Slots() int { return s.To - s.From + 1 }

// Layout places nodes as `redis-cli --cluster create ... --cluster-replicas
// replicas` does, and returns the shards in slot order:
//
//   - the nodes are interleaved by host (the first of each host in the
//     order hosts first appear, then the second of each, ...), and the
//     first len(nodes)/(replicas+1) of that order are the masters, so that
//     masters are on distinct hosts first;
//   - the 16384 slots are split over the masters in order with redis-cli's
//     arithmetic (SlotSplit), so the same number of masters gets the same
//     ranges;
//   - the other nodes, their order rotated by one, are given to the masters
//     in turn, replicas each, each master taking the first node on another
//     host than its own, or the first node when none is; nodes left over
//     (len(nodes) not a multiple of replicas+1) go one a master in turn;
//   - then replicas move between masters while a move lowers redis-cli's
//     anti-affinity score (Score, optimize).
//
// Where redis-cli differs: it wants three masters at least, for its
// cluster bus's majority (redcell's nodes do not vote: Sentinel decides),
// and Layout takes one; redis-cli's last step swaps at random and keeps a
// swap that does not make the score worse, so its final layout varies from
// run to run when replicas must share a host, where Layout keeps only swaps
// that improve it (swaps, then rotations of three, which reach a score of 0
// where swaps alone are stuck) and gives one answer. When the score is 0
// (every replica on a host other than its master's and its siblings') both
// agree.
func Layout(nodes []Member, replicas int) ([]Shard, error) {
	if replicas < 0 {
		return nil, fmt.Errorf("--replicas %d: must be 0 or more", replicas)
	}
	masters := len(nodes) / (replicas + 1)
	if masters == 0 {
		return nil, fmt.Errorf("%d nodes cannot make a master and %d replicas: give %d nodes at least", len(nodes), replicas, replicas+1)
	}
	order := interleaveByHost(nodes)
	rest := slices.Clone(order[masters:])
	if len(rest) > 0 {
		rest = append(rest[1:], rest[0])
	}
	master := make(map[string]int, len(nodes)) // a replica's master, an index into order
	used := make([]bool, len(rest))
	left := len(rest)
	pick := func(m int) {
		first := -1
		for j, n := range rest {
			if used[j] {
				continue
			}
			if n.Host != order[m].Host {
				first = j
				break
			}
			if first < 0 {
				first = j
			}
		}
		used[first] = true
		master[rest[first].ID] = m
		left--
	}
	for m := 0; m < masters; m++ {
		for k := 0; k < replicas && left > 0; k++ {
			pick(m)
		}
	}
	for left > 0 {
		for m := 0; m < masters && left > 0; m++ {
			pick(m)
		}
	}
	optimize(nodes, order, master)

	split := SlotSplit(masters)
	shards := make([]Shard, masters)
	for m := range shards {
		shards[m] = Shard{Master: order[m], From: split[m][0], To: split[m][1]}
	}
	for _, n := range nodes { // replicas in the order given
		if m, ok := master[n.ID]; ok {
			shards[m].Replicas = append(shards[m].Replicas, n)
		}
	}
	return shards, nil
}

// interleaveByHost is redis-cli's order of nodes: the first node of each
// host (hosts in the order they first appear), then the second of each,
// and so on.
func interleaveByHost(nodes []Member) []Member {
	var hosts []string
	byHost := map[string][]Member{}
	for _, n := range nodes {
		if _, ok := byHost[n.Host]; !ok {
			hosts = append(hosts, n.Host)
		}
		byHost[n.Host] = append(byHost[n.Host], n)
	}
	out := make([]Member, 0, len(nodes))
	for len(out) < len(nodes) {
		for _, h := range hosts {
			if q := byHost[h]; len(q) > 0 {
				out = append(out, q[0])
				byHost[h] = q[1:]
			}
		}
	}
	return out
}

// Score is redis-cli's anti-affinity score of a layout, 0 when perfect:
// on each host, a master with k of its replicas costs 10000*k, and k > 1
// replicas of one master without it cost k. master maps each replica's ID
// to its master's index in order.
func Score(nodes, order []Member, master map[string]int) int {
	type group struct {
		host, key string
	}
	count := map[group]int{}
	hasMaster := map[group]bool{}
	for _, n := range nodes {
		g := group{n.Host, n.ID}
		if m, ok := master[n.ID]; ok {
			g.key = order[m].ID
		} else {
			hasMaster[g] = true
		}
		count[g]++
	}
	score := 0
	for g, k := range count {
		switch {
		case k < 2:
		case hasMaster[g]:
			score += 10000 * (k - 1)
		default:
			score += k
		}
	}
	return score
}

// optimize moves replicas between masters while a move lowers the score:
// first a swap of two replicas' masters, and when none does, a rotation of
// three (which some layouts need: each swap alone makes them worse), each
// tried in the order the nodes were given. Each move lowers the score, so
// it ends.
func optimize(nodes, order []Member, master map[string]int) {
	var reps []string
	for _, n := range nodes {
		if _, ok := master[n.ID]; ok {
			reps = append(reps, n.ID)
		}
	}
	score := Score(nodes, order, master)
	better := func(ids ...string) bool {
		// Rotate the masters of ids by one; keep it if the score drops.
		rotate := func() {
			first := master[ids[0]]
			for i := 0; i < len(ids)-1; i++ {
				master[ids[i]] = master[ids[i+1]]
			}
			master[ids[len(ids)-1]] = first
		}
		rotate()
		if s := Score(nodes, order, master); s < score {
			score = s
			return true
		}
		for range len(ids) - 1 {
			rotate()
		}
		return false
	}
	improve := func() bool {
		for _, a := range reps {
			for _, b := range reps {
				if master[a] != master[b] && better(a, b) {
					return true
				}
			}
		}
		if len(reps) > maxRotated {
			return false
		}
		for _, a := range reps {
			for _, b := range reps {
				for _, c := range reps {
					ma, mb, mc := master[a], master[b], master[c]
					if ma != mb && mb != mc && ma != mc && better(a, b, c) {
						return true
					}
				}
			}
		}
		return false
	}
	for score > 0 && improve() {
	}
}

// maxRotated bounds the replicas optimize tries rotations of three among:
// their cost grows as the cube of the count.
const maxRotated = 24

// SlotSplit returns the slots of each of masters masters, [from, to] in
// order, as redis-cli --cluster create splits them: master i ends at
// round(i*16384/masters + 16384/masters - 1) in single precision, the last
// at 16383. For 3 masters: 0-5460, 5461-10922, 10923-16383.
func SlotSplit(masters int) [][2]int {
	out := make([][2]int, masters)
	per := float32(slotCount) / float32(masters)
	var cursor float32
	first := 0
	for i := range out {
		// redis-cli computes in float and rounds half away from zero
		// (lround); each float32 conversion rounds as C's float does.
		last := int(math.Round(float64(float32(float32(cursor+per) - 1))))
		if last > slotCount || i == masters-1 {
			last = slotCount - 1
		}
		last = max(last, first)
		out[i] = [2]int{first, last}
		first = last + 1
		cursor = float32(cursor + per)
	}
	return out
}
