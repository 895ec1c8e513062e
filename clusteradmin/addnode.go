package clusteradmin

// add-node: a node joins as a replica (of the master with the fewest, or
// the one named) or as a master without slots, registered with the
// Sentinels.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AddNode adds o.New to the cluster o.Existing is a node of, as
// `redis-cli --cluster add-node` does: as a replica of o.ReplicaOf (or of
// the master with the fewest replicas), or with o.Master as a master
// without slots. The new node must be as create wants it (cluster mode,
// empty); it is told the cluster's Sentinels (CLUSTERX SETSENTINELS), and
// the topology with it is pushed to every node at one more than the
// highest version any has (a reshard leaves it at one a slot moved). A
// master added is registered with the Sentinels as the next
// <prefix>-<n>. AddNode waits until the node serves the topology and, a
// replica, is linked to its master and seen by every Sentinel.
func AddNode(o NodeOptions) error {
	s, c, err := o.openCluster()
	if err != nil {
		return err
	}
	defer s.close()
	svs, err := surveyNodes(s, []string{o.New})
	if err != nil {
		return err
	}
	sv := svs[0]
	for _, n := range c.nodes {
		if n.ID == sv.member.ID || n.Addr == sv.member.Addr() {
			return fmt.Errorf("%s is a node of the cluster already, as %s", o.New, n.String())
		}
	}
	if !empty(sv) {
		if sv.keys > 0 {
			return fmt.Errorf("%s is not empty: it holds %s; a node joining a cluster must hold none (FLUSHALL, or a fresh --dir)", o.New, plural(sv.keys, "key"))
		}
		return fmt.Errorf("%s is not empty: it holds a topology of %d nodes at version %d (CLUSTER NODES); "+
			"a node joining a cluster must be part of none: start it with a fresh --dir", o.New, len(sv.nodes), sv.version)
	}
	m := sv.member
	line := fmt.Sprintf("%s %s %d master -\n", m.ID, m.Host, m.Port)
	var master *Node
	if !o.Master {
		if master, err = c.pickMaster(o.ReplicaOf); err != nil {
			return err
		}
		line = fmt.Sprintf("%s %s %d slave %s\n", m.ID, m.Host, m.Port, master.ID)
	}
	version := max(c.version, sv.version) + 1
	if len(c.sentinels) > 0 {
		if _, err := s.call(o.New, o.New, append([]string{"CLUSTERX", "SETSENTINELS"}, c.sentinels...)...); err != nil {
			return err
		}
	}
	if err := c.push(s, setNodesText(c.nodes)+line, version, o.New); err != nil {
		return err
	}
	if master != nil {
		fmt.Fprintf(o.Out, "%s (%s) added as a replica of %s: topology version %d pushed to every node\n", m.Addr(), m.ID, master, version)
	} else {
		fmt.Fprintf(o.Out, "%s (%s) added as a master without slots: topology version %d pushed to every node\n", m.Addr(), m.ID, version)
	}

	deadline := time.Now().Add(o.Wait)
	err = waitFor(deadline, func() error {
		if err := servedVersion(s, o.New, version); err != nil {
			return err
		}
		if master == nil {
			return nil
		}
		info, err := s.callString(o.New, o.New, "INFO", "replication")
		if err != nil {
			return err
		}
		if st := infoField(info, "master_link_status"); st != "up" {
			return fmt.Errorf("%s's link to its master is %s", o.New, st)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(c.sentinels) > 0 {
		ss := newSession("", o.SentinelPassword, o.Timeout)
		defer ss.close()
		if master != nil {
			err = waitFor(deadline, func() error { return sentinelsSeeReplica(ss, c.sentinels, master.Addr, m.Addr()) })
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "every Sentinel sees it as a replica of %s\n", master.Addr)
		} else if err := registerMaster(ss, c, m, o); err != nil {
			return err
		}
	}
	return printTopology(s, o.New, o.Out)
}

// pickMaster returns the master id, or the master with the fewest
// replicas (the first such in the topology), as redis-cli picks one.
func (c *clusterView) pickMaster(id string) (*Node, error) {
	count := map[string]int{}
	for _, n := range c.nodes {
		if n.IsReplica() {
			count[n.MasterID]++
		}
	}
	var best *Node
	for i := range c.nodes {
		n := &c.nodes[i]
		if n.IsReplica() {
			continue
		}
		if id != "" && n.ID == id {
			return n, nil
		}
		if id == "" && (best == nil || count[n.ID] < count[best.ID]) {
			best = n
		}
	}
	if id != "" {
		return nil, fmt.Errorf("--replica-of %s: no master of the cluster has that ID (CLUSTER NODES)", id)
	}
	return best, nil
}

// shardName returns the name a Sentinel monitors the master at addr by, ""
// when it monitors none there.
func shardName(s *session, sentinel, addr string) (string, error) {
	masters, err := sentinelCall(s, sentinel, "MASTERS")
	if err != nil {
		return "", err
	}
	for _, m := range masters {
		if m.addr() == addr {
			return m["name"], nil
		}
	}
	return "", nil
}

// sentinelsSeeReplica reports a Sentinel that does not see replica up
// among the replicas of the master at addr.
func sentinelsSeeReplica(s *session, sentinels []string, master, replica string) error {
	for _, sn := range sentinels {
		name, err := shardName(s, sn, master)
		if err != nil {
			return err
		}
		if name == "" {
			return fmt.Errorf("Sentinel %s monitors no master at %s", sn, master)
		}
		reps, err := sentinelCall(s, sn, "REPLICAS", name)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(reps, func(r sentinelEntry) bool {
			return r.addr() == replica && !r.flagged("s_down", "o_down", "disconnected")
		}) {
			return fmt.Errorf("Sentinel %s does not see %s up among %s's replicas", sn, replica, name)
		}
	}
	return nil
}

// registerMaster has every Sentinel monitor m, a master added, as the
// next <prefix>-<n>, with the settings of the cluster's other shards.
func registerMaster(s *session, c *clusterView, m Member, o NodeOptions) error {
	quorum := strconv.Itoa(len(c.sentinels)/2 + 1)
	next, settings := 0, map[string]string{}
	for _, sn := range c.sentinels {
		masters, err := sentinelCall(s, sn, "MASTERS")
		if err != nil {
			return err
		}
		for _, e := range masters {
			if n, ok := strings.CutPrefix(e["name"], o.SentinelPrefix+"-"); ok {
				k, _ := strconv.Atoi(n)
				next = max(next, k)
			}
			if slices.ContainsFunc(c.nodes, func(n Node) bool { return n.Addr == e.addr() }) {
				settings["down-after-milliseconds"] = e["down-after-milliseconds"]
				settings["failover-timeout"] = e["failover-timeout"]
			}
		}
	}
	name := o.SentinelPrefix + "-" + strconv.Itoa(next+1)
	set := []string{"SET", name}
	for _, k := range []string{"down-after-milliseconds", "failover-timeout"} {
		if v := settings[k]; v != "" {
			set = append(set, k, v)
		}
	}
	if o.Password != "" {
		set = append(set, "auth-pass", o.Password)
		if o.User != "" {
			set = append(set, "auth-user", o.User)
		}
	}
	for _, sn := range c.sentinels {
		if _, err := s.call(sn, "Sentinel "+sn, "SENTINEL", "MONITOR", name, m.Host, strconv.Itoa(m.Port), quorum); err != nil {
			return err
		}
		if len(set) > 2 {
			if _, err := s.call(sn, "Sentinel "+sn, append([]string{"SENTINEL"}, set...)...); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(o.Out, "every Sentinel monitors it as %s (quorum %s)\n", name, quorum)
	return nil
}
