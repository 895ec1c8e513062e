package clusteradmin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// CreateOptions are the settings of `redcell cluster create`.
type CreateOptions struct {
	// Nodes are every node's host:port, in the order given: Layout's
	// input. A host name is resolved once, to the address the topology
	// lists (Sentinel reports nodes by address).
	Nodes []string
	// Replicas is how many replicas each master gets.
	Replicas int
	// Sentinels are the Redis Sentinels (host:port) that decide each
	// shard's failover; none leaves failovers to the operator.
	Sentinels []string
	// Password is the nodes' AUTH password, also given to the Sentinels
	// (auth-pass) for each shard; "" for none.
	Password string
	// User is the nodes' ACL user the password is for, also given to the
	// Sentinels (auth-user); "" for the default user.
	User string
	// SentinelPassword is the Sentinels' own AUTH password; "" for none.
	SentinelPassword string
	// SentinelPrefix names each shard for Sentinel: <prefix>-<n>, n from 1
	// in slot order. The default value is DefaultSentinelPrefix.
	SentinelPrefix string
	// DownAfter is Sentinel's down-after-milliseconds for each shard: how
	// long a master does not answer before a Sentinel thinks it down. The
	// default value is DefaultDownAfter.
	DownAfter time.Duration
	// FailoverTimeout is Sentinel's failover-timeout for each shard. The
	// default value is DefaultFailoverTimeout.
	FailoverTimeout time.Duration
	// Timeout bounds each command sent. The default value is
	// DefaultTimeout.
	Timeout time.Duration
	// Wait bounds the wait for every node to serve the topology and every
	// Sentinel to see the shards' replicas and the other Sentinels. The
	// default value is DefaultWait.
	Wait time.Duration
	// Out receives what was done, and the shards' table.
	Out io.Writer
}

// Defaults of CreateOptions.
const (
	DefaultSentinelPrefix = "redcell"
	// DefaultDownAfter is 5 s where Redis's is 30 s: a dead master's slots
	// answer nothing but errors until the failover, and a rate limiter
	// that fails open or closed for half a minute is worse than a failover
	// a long pause may cause; redcell has no fork or AOF rewrite to pause
	// for. deploy/sentinel.conf has the same.
	DefaultDownAfter = 5 * time.Second
	// DefaultFailoverTimeout is 30 s where Redis's is 3 minutes: a failover
	// that stalls is tried again after twice this, and a redcell replica
	// syncs in seconds (deploy/sentinel.conf has the same).
	DefaultFailoverTimeout = 30 * time.Second
	DefaultWait            = time.Minute
)

// pollInterval is how often a wait asks again.
const pollInterval = 100 * time.Millisecond

func (o *CreateOptions) defaults() {
	if o.SentinelPrefix == "" {
		o.SentinelPrefix = DefaultSentinelPrefix
	}
	if o.DownAfter <= 0 {
		o.DownAfter = DefaultDownAfter
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = DefaultFailoverTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// survey is what a node answered before anything changes.
type survey struct {
	addr    string // as given
	member  Member
	version int64  // CLUSTERX VERSION, -1 before any push
	nodes   []Node // CLUSTER NODES, when it has a topology
	keys    int64
}

// Create makes a cluster of o.Nodes as `redis-cli --cluster create` does
// (Layout): each node keeps its own ID (CLUSTER MYID); the topology is
// pushed to every node (CLUSTERX SETNODES) at one more than the highest
// version any has; then, with Sentinels, each node is told them (CLUSTERX
// SETSENTINELS) and each Sentinel monitors each shard's master under the
// shard's name (SENTINEL MONITOR, SENTINEL SET). It waits until every node
// serves the topology (cluster_state:ok) and every Sentinel sees each
// shard's replicas and the other Sentinels, and prints the shards.
//
// Nothing changes unless every node and Sentinel passes the checks: a node
// must be in cluster mode, and either empty (no topology of other nodes, no
// key) or holding this very layout (a run again: its shards the same nodes
// with the same slots, whichever of each shard's nodes is master now); a
// Sentinel must not monitor one of the shards' names, or one of the nodes,
// under another shard's name or address. Run again with the same nodes in
// the same order, it changes nothing that is in place.
func Create(o CreateOptions) error {
	o.defaults()
	if len(o.Nodes) == 0 {
		return errors.New("no nodes given")
	}
	nodes := newSession(o.User, o.Password, o.Timeout)
	defer nodes.close()
	sentinels := newSession("", o.SentinelPassword, o.Timeout)
	defer sentinels.close()

	surveys, err := surveyNodes(nodes, o.Nodes)
	if err != nil {
		return err
	}
	members := make([]Member, len(surveys))
	for i, s := range surveys {
		members[i] = s.member
	}
	shards, err := Layout(members, o.Replicas)
	if err != nil {
		return err
	}
	version, push, err := checkNodes(surveys, shards)
	if err != nil {
		return err
	}
	names := make([]string, len(shards))
	for i := range shards {
		names[i] = o.SentinelPrefix + "-" + strconv.Itoa(i+1)
	}
	monitored, err := surveySentinels(sentinels, o.Sentinels, shards, names)
	if err != nil {
		return err
	}

	out := o.Out
	fmt.Fprintf(out, "%d nodes: %d masters, %d replicas\n", len(members), len(shards), len(members)-len(shards))
	if w := affinityWarning(members, shards); w != "" {
		fmt.Fprintln(out, w)
	}
	text := topologyText(shards)
	if push {
		for _, s := range surveys {
			if _, err := nodes.call(s.addr, s.addr, "CLUSTERX", "SETNODES", text, strconv.FormatInt(version, 10)); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "topology pushed to every node at version %d\n", version)
	} else {
		fmt.Fprintf(out, "every node has this topology already, at version %d: nothing pushed\n", version)
	}
	if len(o.Sentinels) > 0 {
		args := append([]string{"CLUSTERX", "SETSENTINELS"}, o.Sentinels...)
		for _, s := range surveys {
			if _, err := nodes.call(s.addr, s.addr, args...); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "every node follows the Sentinels %s\n", strings.Join(o.Sentinels, ", "))
	}

	deadline := time.Now().Add(o.Wait)
	if err := waitServed(nodes, surveys, version, deadline); err != nil {
		return err
	}
	fmt.Fprintf(out, "every node serves it: cluster_state:ok, version %d\n", version)
	// The masters now: the layout's, or, run again after a failover, the
	// replica Sentinel promoted.
	current, err := currentMasters(nodes, surveys[0].addr, shards)
	if err != nil {
		return err
	}

	if len(o.Sentinels) > 0 {
		quorum := len(o.Sentinels)/2 + 1
		for _, addr := range o.Sentinels {
			var added []string
			for i, name := range names {
				if _, ok := monitored[addr][name]; !ok {
					m := current[i]
					if _, err := sentinels.call(addr, "Sentinel "+addr, "SENTINEL", "MONITOR", name, m.Host, strconv.Itoa(m.Port), strconv.Itoa(quorum)); err != nil {
						return err
					}
					added = append(added, name)
				}
				set := []string{"SENTINEL", "SET", name, "quorum", strconv.Itoa(quorum),
					"down-after-milliseconds", strconv.FormatInt(o.DownAfter.Milliseconds(), 10),
					"failover-timeout", strconv.FormatInt(o.FailoverTimeout.Milliseconds(), 10)}
				if o.Password != "" {
					set = append(set, "auth-pass", o.Password)
				}
				if o.User != "" {
					set = append(set, "auth-user", o.User)
				}
				if _, err := sentinels.call(addr, "Sentinel "+addr, set...); err != nil {
					return err
				}
			}
			if len(added) == 0 {
				fmt.Fprintf(out, "Sentinel %s monitors every shard already\n", addr)
			} else {
				fmt.Fprintf(out, "Sentinel %s monitors %s now\n", addr, strings.Join(added, ", "))
			}
		}
		if err := waitSentinels(sentinels, o.Sentinels, names, shards, current, deadline); err != nil {
			return err
		}
		fmt.Fprintf(out, "every Sentinel sees each shard's replicas and the %d other Sentinels: quorum %d, down-after %v, failover-timeout %v\n",
			len(o.Sentinels)-1, quorum, o.DownAfter, o.FailoverTimeout)
	}

	fmt.Fprintln(out)
	printShards(out, shards, current, names, len(o.Sentinels) > 0)
	return nil
}

// surveyNodes asks each node whether it is in cluster mode, its ID, its
// topology and its keys.
func surveyNodes(s *session, addrs []string) ([]survey, error) {
	var out []survey
	seenAddr, seenID := map[string]string{}, map[string]string{}
	for _, addr := range addrs {
		host, port, err := resolve(addr)
		if err != nil {
			return nil, err
		}
		sv := survey{addr: addr, member: Member{Host: host, Port: port}}
		if prev, dup := seenAddr[sv.member.Addr()]; dup {
			return nil, fmt.Errorf("%s and %s are the same node, %s", prev, addr, sv.member.Addr())
		}
		seenAddr[sv.member.Addr()] = addr
		info, err := s.callString(addr, addr, "INFO", "cluster")
		if err != nil {
			return nil, err
		}
		if infoField(info, "cluster_enabled") != "1" {
			return nil, fmt.Errorf("%s is not in cluster mode: start it with --cluster-enabled yes", addr)
		}
		if sv.member.ID, err = s.callString(addr, addr, "CLUSTER", "MYID"); err != nil {
			return nil, err
		}
		if prev, dup := seenID[sv.member.ID]; dup {
			return nil, fmt.Errorf("%s and %s have the same ID, %s: give one of them another (CLUSTERX SETNODEID) or a fresh --dir", prev, addr, sv.member.ID)
		}
		seenID[sv.member.ID] = addr
		if sv.version, err = s.callInt(addr, addr, "CLUSTERX", "VERSION"); err != nil {
			return nil, err
		}
		if sv.version >= 0 {
			text, err := s.callString(addr, addr, "CLUSTER", "NODES")
			if err != nil {
				return nil, err
			}
			if sv.nodes, err = parseNodes(text); err != nil {
				return nil, fmt.Errorf("%s: %w", addr, err)
			}
		}
		if sv.keys, err = s.callInt(addr, addr, "DBSIZE"); err != nil {
			return nil, err
		}
		out = append(out, sv)
	}
	return out, nil
}

// resolve returns addr's host as an address (a name resolved, IPv4
// first) and its port.
func resolve(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: want host:port", addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("%q: want host:port, the port 1 to 65535", addr)
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String(), port, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return "", 0, fmt.Errorf("%s: resolving %s: %v", addr, host, err)
	}
	slices.SortStableFunc(ips, func(a, b net.IP) int {
		if (a.To4() != nil) == (b.To4() != nil) {
			return 0
		}
		if a.To4() != nil {
			return -1
		}
		return 1
	})
	return ips[0].String(), port, nil
}

// infoField returns field's value in an INFO reply, "" when absent.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// checkNodes refuses a node that is neither empty nor holding this layout,
// and returns the version to push at (one more than the highest any node
// has, 1 at least) and whether to push: not when every node holds this
// layout at one version already.
func checkNodes(surveys []survey, shards []Shard) (version int64, push bool, err error) {
	highest, same := int64(-1), true
	for _, s := range surveys {
		highest = max(highest, s.version)
		if s.version != surveys[0].version {
			same = false
		}
		switch {
		case sameLayout(s.nodes, shards):
			continue
		case !empty(s):
			if len(s.nodes) > 1 || len(s.nodes) == 1 && s.nodes[0].ID != s.member.ID {
				return 0, false, fmt.Errorf("%s is not empty: it holds a topology of %d nodes at version %d that is not this layout (CLUSTER NODES); "+
					"a node of a new cluster must be part of none: start it with a fresh --dir", s.addr, len(s.nodes), s.version)
			}
			return 0, false, fmt.Errorf("%s is not empty: it holds %s; a node of a new cluster must hold none (FLUSHALL, or a fresh --dir)", s.addr, plural(s.keys, "key"))
		}
		same = false
	}
	if same {
		return highest, false, nil
	}
	return max(highest+1, 1), true, nil
}

// empty reports whether a node may join a new cluster: it holds no key,
// and no topology but maybe its own alone.
func empty(s survey) bool {
	if s.keys > 0 {
		return false
	}
	return len(s.nodes) == 0 || len(s.nodes) == 1 && s.nodes[0].ID == s.member.ID
}

// sameLayout reports whether nodes, a CLUSTER NODES reply, is the layout of
// shards: the same nodes at the same addresses, each shard the same nodes
// serving the same slots, whichever of them is master.
func sameLayout(nodes []Node, shards []Shard) bool {
	want := map[string]string{} // each node's shard key and slots
	addrs := map[string]string{}
	for _, s := range shards {
		ids := []string{s.Master.ID}
		addrs[s.Master.ID] = s.Master.Addr()
		for _, r := range s.Replicas {
			ids = append(ids, r.ID)
			addrs[r.ID] = r.Addr()
		}
		slices.Sort(ids)
		want[strings.Join(ids, ",")] = strconv.Itoa(s.From) + "-" + strconv.Itoa(s.To)
	}
	if len(nodes) != len(addrs) {
		return false
	}
	members := map[string][]string{}
	for _, n := range nodes {
		if addrs[n.ID] != n.Addr {
			return false
		}
		m := n.ID
		if n.IsReplica() {
			m = n.MasterID
		}
		members[m] = append(members[m], n.ID)
	}
	got := map[string]string{}
	for _, n := range nodes {
		if n.IsReplica() {
			continue
		}
		ids := members[n.ID]
		slices.Sort(ids)
		got[strings.Join(ids, ",")] = rangesText(n.Slots)
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// rangesText is slots (ascending) as ranges, "0-99 200".
func rangesText(slots []int) string {
	var parts []string
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(slots[i]))
		} else {
			parts = append(parts, strconv.Itoa(slots[i])+"-"+strconv.Itoa(slots[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// topologyText is the layout in CLUSTERX SETNODES's format: each master
// with its slots, then its replicas.
func topologyText(shards []Shard) string {
	var b strings.Builder
	for _, s := range shards {
		fmt.Fprintf(&b, "%s %s %d master - %d-%d\n", s.Master.ID, s.Master.Host, s.Master.Port, s.From, s.To)
		for _, r := range s.Replicas {
			fmt.Fprintf(&b, "%s %s %d slave %s\n", r.ID, r.Host, r.Port, s.Master.ID)
		}
	}
	return b.String()
}

// affinityWarning says, as redis-cli does, when the hosts leave a replica
// on its master's host, or two replicas of a master on one host.
func affinityWarning(members []Member, shards []Shard) string {
	order := make([]Member, len(shards))
	master := map[string]int{}
	for i, s := range shards {
		order[i] = s.Master
		for _, r := range s.Replicas {
			master[r.ID] = i
		}
	}
	switch score := Score(members, order, master); {
	case score >= 10000:
		return "warning: some replicas are on their master's host (there are not hosts enough)"
	case score > 0:
		return "warning: some replicas of one master share a host (there are not hosts enough)"
	}
	return ""
}

// waitServed waits until every node serves the topology at version.
func waitServed(s *session, surveys []survey, version int64, deadline time.Time) error {
	var last error
	for {
		last = nil
		for _, sv := range surveys {
			if err := served(s, sv.addr, version); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the nodes do not all serve the topology yet: %w", last)
		}
		time.Sleep(pollInterval)
	}
}

func served(s *session, addr string, version int64) error {
	v, err := s.callInt(addr, addr, "CLUSTERX", "VERSION")
	if err != nil {
		return err
	}
	if v != version {
		return fmt.Errorf("%s has version %d, not %d", addr, v, version)
	}
	info, err := s.callString(addr, addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if st := infoField(info, "cluster_state"); st != "ok" {
		return fmt.Errorf("%s answers cluster_state:%s", addr, st)
	}
	return nil
}

// currentMasters returns each shard's master as the topology in force at
// addr names it: the layout's, or the replica Sentinel promoted since.
func currentMasters(s *session, addr string, shards []Shard) ([]Member, error) {
	text, err := s.callString(addr, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	isMaster := map[string]bool{}
	for _, n := range nodes {
		isMaster[n.ID] = !n.IsReplica()
	}
	out := make([]Member, len(shards))
	for i, sh := range shards {
		out[i] = sh.Master
		for _, m := range append([]Member{sh.Master}, sh.Replicas...) {
			if isMaster[m.ID] {
				out[i] = m
			}
		}
	}
	return out, nil
}

// printShards prints the shards as a table: the shard's name (Sentinel's,
// or its number), its master now, its replicas, its slots.
func printShards(out io.Writer, shards []Shard, current []Member, names []string, named bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tMASTER\tREPLICAS\tSLOTS")
	for i, s := range shards {
		name := strconv.Itoa(i + 1)
		if named {
			name = names[i]
		}
		var reps []string
		for _, m := range append([]Member{s.Master}, s.Replicas...) {
			if m.ID != current[i].ID {
				reps = append(reps, m.Addr())
			}
		}
		if len(reps) == 0 {
			reps = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d-%d (%d slots)\n", name, current[i].Addr(), strings.Join(reps, ","), s.From, s.To, s.Slots())
	}
	_ = tw.Flush()
}

// plural is "1 key", "2 keys".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}
