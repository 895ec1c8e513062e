package clusteradmin

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// Node is one node of the topology, as CLUSTER NODES lists it.
type Node struct {
	ID   string
	Addr string // host:port, where clients and the operator reach it
	// MasterID is a replica's master's ID, "" for a master.
	MasterID string
	// Slots are the slots a master serves, ascending.
	Slots []int
}

// IsReplica reports whether n is a replica.
func (n *Node) IsReplica() bool { return n.MasterID != "" }

// String names n in messages: its address and ID.
func (n *Node) String() string { return n.Addr + " (" + n.ID + ")" }

// parseNodes reads a CLUSTER NODES reply, Redis's format, one node a line:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
//
// A slot is a number or a range from-to; a slot moving in or out, in
// brackets, is left out: the topology's owner of that slot is listed plain.
func parseNodes(text string) ([]Node, error) {
	var nodes []Node
	ids := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(why string, args ...any) error {
			return fmt.Errorf("CLUSTER NODES line %d: %s", n+1, fmt.Sprintf(why, args...))
		}
		if len(f) < 8 {
			return nil, bad("want at least 8 fields, got %d", len(f))
		}
		addr, _, _ := strings.Cut(f[1], "@")
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, bad("address %q: %v", f[1], err)
		}
		node := Node{ID: f[0], Addr: addr}
		if ids[node.ID] {
			return nil, bad("node %s is listed twice", node.ID)
		}
		ids[node.ID] = true
		flags := strings.Split(f[2], ",")
		switch {
		case slices.Contains(flags, "master"):
		case slices.Contains(flags, "slave") || slices.Contains(flags, "replica"):
			node.MasterID = f[3]
		default:
			return nil, bad("flags %q: neither master nor slave", f[2])
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			from, to, err := parseRange(s)
			if err != nil {
				return nil, bad("%v", err)
			}
			for slot := from; slot <= to; slot++ {
				node.Slots = append(node.Slots, slot)
			}
		}
		nodes = append(nodes, node)
	}
	owner := map[int]string{}
	for _, n := range nodes {
		for _, s := range n.Slots {
			if o, dup := owner[s]; dup {
				return nil, fmt.Errorf("CLUSTER NODES: slot %d is served by %s and %s", s, o, n.ID)
			}
			owner[s] = n.ID
		}
	}
	return nodes, nil
}

// parseRange reads a slot, "n", or a range of them, "from-to".
func parseRange(s string) (from, to int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	from, err = strconv.Atoi(a)
	if err != nil || from < 0 || from >= slotCount {
		return 0, 0, fmt.Errorf("slot %q: must be 0 to %d, or a range from-to", s, slotCount-1)
	}
	to = from
	if isRange {
		if to, err = strconv.Atoi(b); err != nil || to < from || to >= slotCount {
			return 0, 0, fmt.Errorf("slot range %q: must be from-to with from <= to <= %d", s, slotCount-1)
		}
	}
	return from, to, nil
}

// ParseSlots reads --slots: slots and ranges of them separated by commas,
// "0-100,200". It returns them ascending, each once.
func ParseSlots(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("--slots %q: an empty item", s)
		}
		from, to, err := parseRange(part)
		if err != nil {
			return nil, fmt.Errorf("--slots: %v", err)
		}
		for slot := from; slot <= to; slot++ {
			out = append(out, slot)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Plan is what a reshard does: the slots it moves from one master to
// another, at which topology version it starts, and the nodes each slot's
// new owner is pushed to.
type Plan struct {
	From, To *Node
	Nodes    []Node // every master and replica of the topology
	Version  int64  // the topology's version before the first move
	Moves    []int  // the slots to move, ascending
	Skipped  []int  // the slots asked for that To serves already
}

// plan checks that the slots can move from the master fromID to the master
// toID in the topology nodes: every slot is served by one of them (one To
// serves is skipped, so that a reshard interrupted can be run again).
func plan(nodes []Node, version int64, fromID, toID string, slots []int) (*Plan, error) {
	p := &Plan{Nodes: nodes, Version: version}
	owner := map[int]*Node{}
	for i := range nodes {
		n := &nodes[i]
		switch n.ID {
		case fromID:
			p.From = n
		case toID:
			p.To = n
		}
		for _, s := range n.Slots {
			owner[s] = n
		}
	}
	switch {
	case fromID == toID:
		return nil, fmt.Errorf("--from and --to are the same node, %s", fromID)
	case p.From == nil:
		return nil, fmt.Errorf("--from, node %s, is not in its own topology", fromID)
	case p.To == nil:
		return nil, fmt.Errorf("--to, node %s, is not in the topology of --from, %s", toID, p.From)
	case p.From.IsReplica():
		return nil, fmt.Errorf("--from, %s, is a replica of %s: give its master", p.From, p.From.MasterID)
	case p.To.IsReplica():
		return nil, fmt.Errorf("--to, %s, is a replica of %s: give a master", p.To, p.To.MasterID)
	}
	for _, s := range slots {
		switch o := owner[s]; o {
		case p.From:
			p.Moves = append(p.Moves, s)
		case p.To:
			p.Skipped = append(p.Skipped, s)
		case nil:
			return nil, fmt.Errorf("slot %d is served by no node: assign it with CLUSTERX SETSLOT or SETNODES", s)
		default:
			return nil, fmt.Errorf("slot %d is served by %s, not --from, %s", s, o, p.From)
		}
	}
	return p, nil
}

// pushOrder lists the nodes a slot's new owner is pushed to, in order: the
// destination first, so that it serves the slot before the source answers
// MOVED there (a destination still importing would send a client back with
// MOVED, and the client would go back and forth); then the source, which
// drops its copy; then every other master and replica.
func (p *Plan) pushOrder() []*Node {
	out := []*Node{p.To, p.From}
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n != p.To && n != p.From {
			out = append(out, n)
		}
	}
	return out
}

// setNodesText is nodes, a CLUSTER NODES reply parsed, in CLUSTERX
// SETNODES's format.
func setNodesText(nodes []Node) string {
	var b strings.Builder
	for _, n := range nodes {
		host, port, _ := net.SplitHostPort(n.Addr)
		if n.IsReplica() {
			fmt.Fprintf(&b, "%s %s %s slave %s\n", n.ID, host, port, n.MasterID)
		} else {
			fmt.Fprintf(&b, "%s %s %s master -", n.ID, host, port)
			if len(n.Slots) > 0 {
				b.WriteString(" " + rangesText(n.Slots))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
