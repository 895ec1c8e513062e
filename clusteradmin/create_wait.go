package clusteradmin

// After create's pushes: waiting until every node serves the topology,
// and printing the shards as they are served.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

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

// served reports what keeps the node at addr from serving the topology at
// version: servedVersion's, or a cluster_state other than ok.
func served(s *session, addr string, version int64) error {
	if err := servedVersion(s, addr, version); err != nil {
		return err
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
	nodes, err := clusterNodes(s, addr)
	if err != nil {
		return nil, err
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
