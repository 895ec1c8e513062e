package clusteradmin

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	defaultShared(&o.SentinelPrefix, &o.Timeout, &o.Wait, &o.Out)
	if o.DownAfter <= 0 {
		o.DownAfter = DefaultDownAfter
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = DefaultFailoverTimeout
	}
}

// defaultShared fills the settings create, add-node and del-node share
// (CreateOptions, NodeOptions) where they are unset: the prefix of the
// Sentinels' master names, one call's timeout, how long to wait for the
// cluster to settle, and where to print.
func defaultShared(prefix *string, timeout, wait *time.Duration, out *io.Writer) {
	if *prefix == "" {
		*prefix = DefaultSentinelPrefix
	}
	if *timeout <= 0 {
		*timeout = DefaultTimeout
	}
	if *wait <= 0 {
		*wait = DefaultWait
	}
	if *out == nil {
		*out = io.Discard
	}
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
