package clusteradmin

import (
	"errors"
	"fmt"
	"io"
	"strconv"
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

// clusterNodes reads the topology in force at addr: its CLUSTER NODES.
func clusterNodes(s *session, addr string) ([]Node, error) {
	text, err := s.callString(addr, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return nodes, nil
}

// readCluster reads the cluster from the node at addr, and every node's
// version.
func readCluster(s *session, addr string, out io.Writer) (*clusterView, error) {
	nodes, err := clusterNodes(s, addr)
	if err != nil {
		return nil, err
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

func (o *NodeOptions) defaults() { defaultShared(&o.SentinelPrefix, &o.Timeout, &o.Wait, &o.Out) }

// openCluster is how add-node and del-node begin: o's defaults filled in,
// a session with o's credentials, and the cluster read from o.Existing.
// The caller closes the session.
func (o *NodeOptions) openCluster() (*session, *clusterView, error) {
	o.defaults()
	s := newSession(o.User, o.Password, o.Timeout)
	c, err := readCluster(s, o.Existing, o.Out)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, c, nil
}
