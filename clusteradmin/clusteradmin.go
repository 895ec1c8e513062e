// Package clusteradmin is `redcell cluster ...`: an operator's commands for
// a cluster of redcell nodes, sent to the nodes (and to the Redis Sentinels
// that decide their failovers) over RESP. create makes a cluster of running
// nodes as redis-cli --cluster create does (Layout) and registers each
// shard with the Sentinels; reshard moves slots from one master to another
// with their keys' exact state (CLUSTERX MIGRATE) and pushes each slot's
// new owner to every node (CLUSTERX SETSLOT), as kvrocks's controller does
// for kvrocks.
package clusteradmin

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redcell/redcell/internal/cliflag"
)

const usageText = `NAME
    redcell cluster - operate a cluster of redcell nodes

SYNOPSIS
    redcell cluster create host:port [host:port ...] [--replicas n]
                           [--sentinels host:port,...] [--password p]
                           [--sentinel-prefix name] [--down-after d]
                           [--failover-timeout d] [--sentinel-password p]
                           [--timeout d] [--wait d]
    redcell cluster add-node new-host:port existing-host:port
                             [--replica-of id | --master] [--password p]
                             [--sentinel-password p] [--sentinel-prefix name]
                             [--timeout d] [--wait d]
    redcell cluster del-node existing-host:port node-id [--password p]
                             [--sentinel-password p] [--timeout d] [--wait d]
    redcell cluster reshard --from host:port --to host:port --slots list
                            [--password p] [--timeout d] [--retry-for d]
    redcell cluster --help

DESCRIPTION
    create makes one cluster of running nodes started with
    --cluster-enabled yes, as redis-cli --cluster create does: the nodes
    are interleaved by host and the first of them, one a host first, are
    masters; the 16384 slots are split over them as redis-cli splits them
    (3 masters: 0-5460, 5461-10922, 10923-16383); each master gets
    --replicas of the others, on another host than its own where the hosts
    allow. Each node keeps its ID (CLUSTER MYID). The topology is pushed to
    every node (CLUSTERX SETNODES) at one more than the highest version any
    has. With --sentinels, every node is told the Sentinels (CLUSTERX
    SETSENTINELS), which then decide each shard's failover, and each
    Sentinel monitors each shard's master as <prefix>-<n>, n from 1 in
    slot order (SENTINEL MONITOR, quorum a majority of the Sentinels given;
    SENTINEL SET down-after-milliseconds, failover-timeout, auth-pass).
    It waits until every node answers cluster_state:ok and every Sentinel
    sees each shard's replicas and the other Sentinels, then prints the
    shards: name, master, replicas, slots.

    It refuses, changing nothing, a node that does not answer, is not in
    cluster mode, or holds keys or a topology of other nodes, unless that
    topology is this very layout (its shards the same nodes with the same
    slots, whichever is master now); and a Sentinel that monitors a
    shard's name at an address not of that shard, or one of the nodes under
    another name. So, run again with the same nodes in the same order, it
    changes nothing that is in place: a one-shot deployment step may run
    at every start.

    add-node adds a node, as empty as create wants it, to the cluster of
    existing-host:port: a replica of --replica-of (a master's ID), or of
    the master with the fewest replicas, or with --master a master without
    slots, which reshard then gives some. It is told the cluster's
    Sentinels, the topology with it is pushed to every node at one more
    than the highest version any has, and it waits until the node serves
    it and, a replica, is linked to its master and seen by every Sentinel.
    A master added is registered with the Sentinels as the next
    <prefix>-<n>, with the settings of the other shards.

    del-node removes the node node-id from the cluster of
    existing-host:port: a replica, or a master that serves no slot and has
    no replica. The topology without it is pushed to every other node; the
    node itself, if it answers, forgets the Sentinels, is left alone in a
    topology of its own and drops its keys (as CLUSTER RESET empties a
    replica), so it may join a cluster again; the Sentinels forget it
    (SENTINEL RESET of its shard, or SENTINEL REMOVE of a master).

    reshard moves slots from the master at --from to the master at --to,
    one slot at a time, while clients keep being served. It reads the
    topology from --from (CLUSTER NODES, CLUSTERX VERSION) and refuses to
    start unless every node of it, master or replica, answers the same
    version under the ID the topology gives it. Then, for each slot:

      1. CLUSTERX MIGRATE slot to-id SYNC on --from: the slot's keys are
         copied with their exact state while it is served, then frozen for
         a last copy (clients are answered TRYAGAIN for that moment), then
         clients are sent ASK to --to;
      2. CLUSTERX SETSLOT slot NODE to-id version+1 on --to, then on
         --from (which then answers MOVED and drops its copy), then on
         every other node.

    It prints a line a slot: the keys it held (CLUSTER COUNTKEYSINSLOT
    before the move), the time the move took, and how many slots are done.
    A slot --to serves already is skipped, so that a reshard interrupted
    can be run again; a slot another node serves is refused. An error
    names the node and the command that failed; the slots moved before it
    stay moved.

    In a cluster whose failovers Sentinels decide (CLUSTERX SENTINELS), a
    failover in the middle (a replica of the source's or the destination's
    shard promoted) is waited out: a slot whose migration gave up, or whose
    source or destination stopped answering, is tried again for
    --retry-for, the topology read again (CLUSTER NODES) from any node that
    answers before each try, so that it moves between the masters of the
    two shards then; without Sentinels, a migration that gave up is tried
    three times. A node that does not answer a push (a master gone
    down) is left behind for the rest of the reshard and given the whole
    topology at the end if it answers then; otherwise the reshard ends
    with an error naming it, and run again once it is back (every slot
    skipped), it gives a replica behind the topology it missed.

OPTIONS of create
    --replicas n             replicas a master (default 0)
    --sentinels list         the Sentinels, host:port comma-separated
                             (default: none; failovers are the operator's)
    --password p             AUTH password of every node, and Sentinel's
                             auth-pass for them (default: none)
    --user u                 the ACL user --password is for, and Sentinel's
                             auth-user (default: the default user)
    --sentinel-password p    AUTH password of the Sentinels (default: none)
    --sentinel-prefix name   the shards' Sentinel names, name-1, name-2, ...
                             (default redcell)
    --down-after d           Sentinel's down-after-milliseconds (default 5s;
                             Redis's 30s is long for a limiter's slots to be
                             down)
    --failover-timeout d     Sentinel's failover-timeout (default 30s)
    --timeout d              the longest one command may take (default 1m)
    --wait d                 the longest to wait for the nodes and the
                             Sentinels to see the cluster (default 1m)

OPTIONS of add-node and del-node
    --replica-of id      add-node: the master the node replicates
                         (default: the one with the fewest replicas)
    --master             add-node: a master without slots
    --user, --password, --sentinel-password, --sentinel-prefix, --timeout,
    --wait               as create's

OPTIONS of reshard
    --from host:port   the master the slots move from
    --to host:port     the master the slots move to
    --slots list       slots and ranges, comma-separated: 0-100,200
    --password p       AUTH password of every node (default: none)
    --user u           the ACL user --password is for (default: the
                       default user)
    --timeout d        the longest one command may take, a slot's whole
                       migration included (default 1m)
    --retry-for d      how long a slot's move is tried again across a
                       failover (default 1m)

EXIT STATUS
    0 once done, 1 if it could not be, 2 for a bad option.

EXAMPLES
    redcell cluster create 10.0.0.1:6379 10.0.0.2:6379 10.0.0.3:6379 \
        10.0.0.1:6380 10.0.0.2:6380 10.0.0.3:6380 --replicas 1 \
        --sentinels 10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379
    redcell cluster reshard --from 10.0.0.1:6379 --to 10.0.0.2:6379 \
        --slots 0-1023,5000
`

// Main runs `redcell cluster args...` and returns the process's exit
// status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	case "create":
		return run("create", args[1:], stdout, stderr, func(args []string) (func() error, error) {
			o, err := ParseCreate(args)
			o.Out = stdout
			return func() error { return Create(o) }, err
		})
	case "add-node", "del-node":
		return run(args[0], args[1:], stdout, stderr, func(rest []string) (func() error, error) {
			o, err := ParseNode(args[0], rest)
			o.Out = stdout
			if args[0] == "add-node" {
				return func() error { return AddNode(o) }, err
			}
			return func() error { return DelNode(o) }, err
		})
	case "reshard":
		return reshardMain(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "redcell cluster: unknown command %q\nTry 'redcell cluster --help'.\n", args[0])
	return 2
}

func reshardMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseReshard(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "redcell cluster reshard:", err)
		fmt.Fprintln(stderr, "Try 'redcell cluster --help'.")
		return 2
	}
	o.Out = stdout
	if err := Reshard(o); err != nil {
		fmt.Fprintln(stderr, "redcell cluster reshard:", err)
		return 1
	}
	return 0
}

// run parses a command's arguments with parse and runs what it returns,
// answering --help, and returns the exit status.
func run(name string, args []string, stdout, stderr io.Writer, parse func([]string) (func() error, error)) int {
	do, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "redcell cluster %s: %v\n", name, err)
		fmt.Fprintln(stderr, "Try 'redcell cluster --help'.")
		return 2
	}
	if err := do(); err != nil {
		fmt.Fprintf(stderr, "redcell cluster %s: %v\n", name, err)
		return 1
	}
	return 0
}

// parseInterleaved sets fs's flags from args, which may come before,
// between and after the positional arguments, and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		_, rest, err := cliflag.Parse(fs, args)
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return pos, nil
}

// ParseCreate reads create's arguments: the nodes and the flags.
func ParseCreate(args []string) (CreateOptions, error) {
	var o CreateOptions
	var sentinels string
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.Replicas, "replicas", 0, "")
	fs.StringVar(&sentinels, "sentinels", "", "")
	fs.StringVar(&o.Password, "password", "", "")
	fs.StringVar(&o.User, "user", "", "")
	fs.StringVar(&o.SentinelPassword, "sentinel-password", "", "")
	fs.StringVar(&o.SentinelPrefix, "sentinel-prefix", DefaultSentinelPrefix, "")
	fs.DurationVar(&o.DownAfter, "down-after", DefaultDownAfter, "")
	fs.DurationVar(&o.FailoverTimeout, "failover-timeout", DefaultFailoverTimeout, "")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "")
	fs.DurationVar(&o.Wait, "wait", DefaultWait, "")
	nodes, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
	}
	o.Nodes = nodes
	switch {
	case len(nodes) == 0:
		return o, errors.New("no nodes given: create host:port [host:port ...]")
	case o.Replicas < 0:
		return o, fmt.Errorf("--replicas %d: must be 0 or more", o.Replicas)
	case o.SentinelPrefix == "" || strings.ContainsAny(o.SentinelPrefix, " \t\r\n"):
		return o, fmt.Errorf("--sentinel-prefix %q: must be a word", o.SentinelPrefix)
	case o.DownAfter < time.Millisecond:
		return o, fmt.Errorf("--down-after %v: must be 1ms or more", o.DownAfter)
	case o.FailoverTimeout < time.Millisecond:
		return o, fmt.Errorf("--failover-timeout %v: must be 1ms or more", o.FailoverTimeout)
	case o.Timeout <= 0:
		return o, fmt.Errorf("--timeout %v: must be positive", o.Timeout)
	case o.Wait <= 0:
		return o, fmt.Errorf("--wait %v: must be positive", o.Wait)
	}
	for _, n := range nodes {
		if _, _, err := net.SplitHostPort(n); err != nil {
			return o, fmt.Errorf("%q: want host:port", n)
		}
	}
	if sentinels != "" {
		if o.Sentinels, err = sentinelAddrsFlag(sentinels); err != nil {
			return o, err
		}
	}
	return o, nil
}

// ParseNode reads add-node's arguments (new-host:port existing-host:port
// and its flags) or del-node's (existing-host:port node-id and its flags).
func ParseNode(cmd string, args []string) (NodeOptions, error) {
	var o NodeOptions
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd == "add-node" {
		fs.StringVar(&o.ReplicaOf, "replica-of", "", "")
		fs.BoolVar(&o.Master, "master", false, "")
		fs.StringVar(&o.SentinelPrefix, "sentinel-prefix", DefaultSentinelPrefix, "")
	}
	fs.StringVar(&o.Password, "password", "", "")
	fs.StringVar(&o.User, "user", "", "")
	fs.StringVar(&o.SentinelPassword, "sentinel-password", "", "")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "")
	fs.DurationVar(&o.Wait, "wait", DefaultWait, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
	}
	if cmd == "add-node" {
		if len(pos) != 2 {
			return o, errors.New("want the new node and a node of the cluster: add-node new-host:port existing-host:port")
		}
		o.New, o.Existing = pos[0], pos[1]
		if o.Master && o.ReplicaOf != "" {
			return o, errors.New("--master and --replica-of: give one")
		}
	} else {
		if len(pos) != 2 {
			return o, errors.New("want a node of the cluster and the ID of the node to remove: del-node existing-host:port node-id")
		}
		o.Existing, o.ID = pos[0], pos[1]
	}
	for _, a := range []string{o.New, o.Existing} {
		if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
			return o, fmt.Errorf("%q: want host:port", a)
		}
	}
	switch {
	case o.Timeout <= 0:
		return o, fmt.Errorf("--timeout %v: must be positive", o.Timeout)
	case o.Wait <= 0:
		return o, fmt.Errorf("--wait %v: must be positive", o.Wait)
	}
	return o, nil
}

// parseReshard reads reshard's flags.
func parseReshard(args []string) (ReshardOptions, error) {
	var o ReshardOptions
	var slots string
	fs := flag.NewFlagSet("reshard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.From, "from", "", "")
	fs.StringVar(&o.To, "to", "", "")
	fs.StringVar(&slots, "slots", "", "")
	fs.StringVar(&o.Password, "password", "", "")
	fs.StringVar(&o.User, "user", "", "")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "")
	fs.DurationVar(&o.RetryFor, "retry-for", DefaultRetryFor, "")
	_, rest, err := cliflag.Parse(fs, args)
	if err != nil {
		return o, err
	}
	switch {
	case len(rest) > 0:
		return o, fmt.Errorf("unexpected argument %q", rest[0])
	case o.From == "":
		return o, errors.New("--from host:port is required")
	case o.To == "":
		return o, errors.New("--to host:port is required")
	case slots == "":
		return o, errors.New("--slots is required")
	case o.Timeout <= 0:
		return o, fmt.Errorf("--timeout %v: must be positive", o.Timeout)
	case o.RetryFor <= 0:
		return o, fmt.Errorf("--retry-for %v: must be positive", o.RetryFor)
	}
	o.Slots, err = ParseSlots(slots)
	return o, err
}
