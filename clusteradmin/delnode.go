package clusteradmin

// del-node: a node without slots leaves the topology, pushed to the others.

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

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
	s, c, err := o.openCluster()
	if err != nil {
		return err
	}
	defer s.close()
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
