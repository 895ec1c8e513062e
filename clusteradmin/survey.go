package clusteradmin

// Before create (and add-node) change anything: what each node answers
// (survey), and whether it may join (checkNodes: empty, or holding this
// very layout).

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// survey is what a node answered before anything changes.
type survey struct {
	addr    string // as given
	member  Member
	version int64  // CLUSTERX VERSION, -1 before any push
	nodes   []Node // CLUSTER NODES, when it has a topology
	keys    int64
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
