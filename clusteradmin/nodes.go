package clusteradmin

import (
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

// NodeOptions are the settings of add-node and del-node.
type NodeOptions struct {
	// Existing is host:port of a node of the cluster, which the topology is
	// read from.
	Existing string
	// New is add-node's node, host:port; ID is del-node's node.
	New, ID string
	// ReplicaOf is the master add-node's node replicates: an ID, or "" for
	// the master with the fewest replicas. Master adds it as a master
	// without slots instead (reshard gives it some).
	ReplicaOf string
	Master    bool
	// User, Password, SentinelPassword, SentinelPrefix, Timeout and Wait are as
	// CreateOptions's (SentinelPrefix names a master added).
	User, Password, SentinelPassword, SentinelPrefix string
	Timeout, Wait                                    time.Duration
	Out                                              io.Writer
}

func (o *NodeOptions) defaults() {
	if o.SentinelPrefix == "" {
		o.SentinelPrefix = DefaultSentinelPrefix
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

// clusterView is a cluster as a change of its nodes reads it: the topology in
// force (CLUSTER NODES of the node given, which shows the masters Sentinel
// promoted), its Sentinels, and the highest version any node that answers
// has.
type clusterView struct {
	nodes     []Node
	sentinels []string
	version   int64
	// down are the nodes that did not answer: replicas (a master that does
	// not answer is refused), which the push misses.
	down map[string]bool
}

// readCluster reads the cluster from the node at addr, and every node's
// version.
func readCluster(s *session, addr string, out io.Writer) (*clusterView, error) {
	text, err := s.callString(addr, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s has no topology: make a cluster first (redcell cluster create)", addr)
	}
	v, err := s.call(addr, addr, "CLUSTERX", "SENTINELS")
	if err != nil {
		return nil, err
	}
	c := &clusterView{nodes: nodes, version: -1, down: map[string]bool{}}
	list, _ := v.([]any)
	for _, e := range list {
		if a, ok := e.(string); ok {
			c.sentinels = append(c.sentinels, a)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		v, err := s.callInt(n.Addr, n.String(), "CLUSTERX", "VERSION")
		switch {
		case err == nil:
			c.version = max(c.version, v)
		case n.IsReplica() && !isReply(err):
			fmt.Fprintf(out, "%s does not answer (%v): a replica, it misses this change\n", n, errors.Unwrap(err))
			c.down[n.ID] = true
		default:
			return nil, err
		}
	}
	return c, nil
}

// push sends text at version to every node of c that answers, and then to
// extra.
func (c *clusterView) push(s *session, text string, version int64, extra ...string) error {
	v := strconv.FormatInt(version, 10)
	for _, n := range c.nodes {
		if c.down[n.ID] {
			continue
		}
		if _, err := s.call(n.Addr, n.String(), "CLUSTERX", "SETNODES", text, v); err != nil {
			return err
		}
	}
	for _, addr := range extra {
		if _, err := s.call(addr, addr, "CLUSTERX", "SETNODES", text, v); err != nil {
			return err
		}
	}
	return nil
}

// masterOf returns the master whose shard n is of (n itself for a master).
func (c *clusterView) masterOf(n *Node) *Node {
	if !n.IsReplica() {
		return n
	}
	for i := range c.nodes {
		if c.nodes[i].ID == n.MasterID {
			return &c.nodes[i]
		}
	}
	return nil
}

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
	o.defaults()
	s := newSession(o.User, o.Password, o.Timeout)
	defer s.close()
	c, err := readCluster(s, o.Existing, o.Out)
	if err != nil {
		return err
	}
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

// printTopology prints the shards as the node at addr serves them.
func printTopology(s *session, addr string, out io.Writer) error {
	text, err := s.callString(addr, addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	fmt.Fprintln(out)
	printNodes(out, nodes)
	return nil
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

// servedVersion reports what keeps the node at addr from serving the
// topology at version: another version, or no answer.
func servedVersion(s *session, addr string, version int64) error {
	v, err := s.callInt(addr, addr, "CLUSTERX", "VERSION")
	if err != nil {
		return err
	}
	if v != version {
		return fmt.Errorf("%s has version %d, not %d", addr, v, version)
	}
	return nil
}

// waitFor calls check until it returns nil, or returns its last error
// once deadline passed.
func waitFor(deadline time.Time, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollInterval)
	}
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

// DelNode removes the node o.ID from the cluster o.Existing is a node of,
// as `redis-cli --cluster del-node` does: a replica, or a master that
// serves no slot and has no replica (reshard its slots away first). The
// topology without it is pushed to every other node at one more than the
// highest version any has; the node itself, if it answers, forgets the
// Sentinels, is given a topology of itself alone (it stops replicating and
// serves nothing) and drops its keys, as CLUSTER RESET makes a replica an
// empty master, so that it may join a cluster again. The Sentinels forget
// it: SENTINEL RESET of its shard (they find the shard's replicas again),
// or SENTINEL REMOVE of a master's name.
func DelNode(o NodeOptions) error {
	o.defaults()
	s := newSession(o.User, o.Password, o.Timeout)
	defer s.close()
	c, err := readCluster(s, o.Existing, o.Out)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(c.nodes, func(n Node) bool { return n.ID == o.ID })
	if i < 0 {
		return fmt.Errorf("%s: no node of the cluster has that ID (CLUSTER NODES of %s)", o.ID, o.Existing)
	}
	gone := c.nodes[i]
	if !gone.IsReplica() {
		if len(gone.Slots) > 0 {
			return fmt.Errorf("%s serves %d slots: move them to other masters first (redcell cluster reshard --from %s ...)", gone.String(), len(gone.Slots), gone.Addr)
		}
		for _, n := range c.nodes {
			if n.MasterID == gone.ID {
				return fmt.Errorf("%s has replicas (%s first): delete them first, or give them another master", gone.String(), n.String())
			}
		}
	}
	shardMaster := c.masterOf(&gone)
	rest := &clusterView{nodes: slices.Delete(slices.Clone(c.nodes), i, i+1), down: c.down}
	version := c.version + 1
	if err := rest.push(s, setNodesText(rest.nodes), version); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s removed: topology version %d pushed to every other node\n", gone.String(), version)

	if c.down[gone.ID] {
		fmt.Fprintf(o.Out, "%s does not answer: once it is back, it still holds the old topology; give it a fresh --dir before it joins a cluster again\n", gone.String())
	} else {
		host, port, _ := net.SplitHostPort(gone.Addr)
		alone := fmt.Sprintf("%s %s %s master -\n", gone.ID, host, port)
		_, err := s.call(gone.Addr, gone.String(), "CLUSTERX", "SETSENTINELS")
		if err == nil {
			_, err = s.call(gone.Addr, gone.String(), "CLUSTERX", "SETNODES", alone, strconv.FormatInt(version, 10))
		}
		if err == nil {
			err = waitFor(time.Now().Add(o.Wait), func() error {
				_, err := s.call(gone.Addr, gone.String(), "FLUSHALL")
				return err
			})
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s is alone in a topology of its own now, with no Sentinels and no keys\n", gone.String())
	}

	if len(c.sentinels) > 0 {
		ss := newSession("", o.SentinelPassword, o.Timeout)
		defer ss.close()
		for _, sn := range c.sentinels {
			name, err := shardName(ss, sn, shardMaster.Addr)
			if err != nil {
				return err
			}
			switch {
			case name == "":
				continue
			case gone.IsReplica():
				_, err = ss.call(sn, "Sentinel "+sn, "SENTINEL", "RESET", name)
			default:
				_, err = ss.call(sn, "Sentinel "+sn, "SENTINEL", "REMOVE", name)
			}
			if err != nil {
				return err
			}
			if gone.IsReplica() {
				fmt.Fprintf(o.Out, "Sentinel %s forgot it (SENTINEL RESET %s: it finds %s's replicas and the other Sentinels again)\n", sn, name, name)
			} else {
				fmt.Fprintf(o.Out, "Sentinel %s monitors %s no more\n", sn, name)
			}
		}
	}
	for _, n := range rest.nodes {
		if !rest.down[n.ID] {
			return printTopology(s, n.Addr, o.Out)
		}
	}
	return nil
}

// printNodes prints a topology's shards as create's table does: each
// master with its replicas and its slots.
func printNodes(out io.Writer, nodes []Node) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MASTER\tREPLICAS\tSLOTS")
	for _, m := range nodes {
		if m.IsReplica() {
			continue
		}
		var reps []string
		for _, r := range nodes {
			if r.MasterID == m.ID {
				reps = append(reps, r.Addr)
			}
		}
		if len(reps) == 0 {
			reps = []string{"-"}
		}
		slots := rangesText(m.Slots)
		if slots == "" {
			slots = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\n", m.Addr, strings.Join(reps, ","), slots, plural(int64(len(m.Slots)), "slot"))
	}
	_ = tw.Flush()
}
