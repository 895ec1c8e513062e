package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Topology is the whole cluster as an operator pushed it (CLUSTERX
// SETNODES): every node, which slots each master serves, and the version
// that orders pushes. It never changes once built; a push builds a new one.
type Topology struct {
	Version int64
	Nodes   []Node
	// owner[slot] is the index in Nodes of the master serving slot, or -1.
	owner [Slots]int16
}

// Node is one node of a topology.
type Node struct {
	ID   string // 40 characters
	IP   string
	Port int
	// MasterID is a replica's master's ID, "" for a master.
	MasterID string
	// Slots are a master's slots, as ranges in ascending order.
	Slots []Range
}

// IsReplica reports whether n is a replica.
func (n *Node) IsReplica() bool { return n.MasterID != "" }

// Range is the slots From to To, both included.
type Range struct{ From, To int }

// Errors of Parse.
var (
	ErrSyntax = errors.New("cluster: invalid nodes definition")
	ErrNodeID = errors.New("cluster: a node ID must be 40 characters")
)

// IDLen is the length of a node ID.
const IDLen = 40

// Parse reads a topology in kvrocks's CLUSTERX SETNODES format: one node a
// line (lines separated by '\n'),
//
//	<id> <ip> <port> master|slave <master id or -> [slot or from-to ...]
//
// where only masters list slots. Every slot belongs to at most one master;
// a slot no master lists is served by none. A replica's master must be in
// the topology and be a master.
func Parse(text string, version int64) (*Topology, error) {
	t := &Topology{Version: version}
	for i := range t.owner {
		t.owner[i] = -1
	}
	ids := map[string]int{}
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(why string, args ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrSyntax, n+1, fmt.Sprintf(why, args...))
		}
		if len(f) < 5 {
			return nil, bad("want <id> <ip> <port> <role> <master id> [slots], got %d fields", len(f))
		}
		node := Node{ID: f[0], IP: f[1]}
		if len(node.ID) != IDLen || !isHex(node.ID) {
			return nil, fmt.Errorf("%w: line %d: %q", ErrNodeID, n+1, node.ID)
		}
		if _, dup := ids[node.ID]; dup {
			return nil, bad("node %s is listed twice", node.ID)
		}
		port, err := strconv.Atoi(f[2])
		if err != nil || port < 1 || port > 65535 {
			return nil, bad("port %q", f[2])
		}
		node.Port = port
		switch f[3] {
		case "master":
			if f[4] != "-" {
				return nil, bad("a master's master id must be -, not %q", f[4])
			}
		case "slave", "replica":
			if len(f[4]) != IDLen || !isHex(f[4]) {
				return nil, fmt.Errorf("%w: line %d: master id %q", ErrNodeID, n+1, f[4])
			}
			if len(f) > 5 {
				return nil, bad("a replica serves no slots")
			}
			node.MasterID = f[4]
		default:
			return nil, bad("role %q: must be master or slave", f[3])
		}
		idx := len(t.Nodes)
		for _, s := range f[5:] {
			r, err := parseRange(s)
			if err != nil {
				return nil, bad("%v", err)
			}
			for slot := r.From; slot <= r.To; slot++ {
				if o := t.owner[slot]; o >= 0 {
					return nil, bad("slot %d is served by %s and %s", slot, t.Nodes[o].ID, node.ID)
				}
				t.owner[slot] = int16(idx)
			}
		}
		ids[node.ID] = idx
		t.Nodes = append(t.Nodes, node)
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if !n.IsReplica() {
			n.Slots = t.rangesOf(i)
			continue
		}
		m, ok := ids[n.MasterID]
		if !ok || t.Nodes[m].IsReplica() {
			return nil, fmt.Errorf("%w: replica %s: its master %s is not a master of the topology", ErrSyntax, n.ID, n.MasterID)
		}
	}
	return t, nil
}

func parseRange(s string) (Range, error) {
	from, to, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(from)
	if err != nil || a < 0 || a >= Slots {
		return Range{}, fmt.Errorf("slot %q: must be 0 to %d, or a range from-to", s, Slots-1)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(to); err != nil || b < a || b >= Slots {
			return Range{}, fmt.Errorf("slot range %q: must be from-to with from <= to <= %d", s, Slots-1)
		}
	}
	return Range{a, b}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// rangesOf lists the slots owner[] gives node i, as ranges.
func (t *Topology) rangesOf(i int) []Range {
	var out []Range
	for s := 0; s < Slots; s++ {
		if int(t.owner[s]) != i {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].To == s-1 {
			out[k].To = s
		} else {
			out = append(out, Range{s, s})
		}
	}
	return out
}

// Owner returns the master serving slot, or nil.
func (t *Topology) Owner(slot int) *Node {
	if o := t.owner[slot]; o >= 0 {
		return &t.Nodes[o]
	}
	return nil
}

// Node returns the node of id, or nil.
func (t *Topology) Node(id string) *Node {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return &t.Nodes[i]
		}
	}
	return nil
}

// NodeAt returns the node at ip:port, or nil.
func (t *Topology) NodeAt(ip string, port int) *Node {
	for i := range t.Nodes {
		if t.Nodes[i].IP == ip && t.Nodes[i].Port == port {
			return &t.Nodes[i]
		}
	}
	return nil
}

// ReplicasOf lists the replicas of the master id, in the topology's order.
func (t *Topology) ReplicasOf(id string) []*Node {
	var out []*Node
	for i := range t.Nodes {
		if t.Nodes[i].MasterID == id {
			out = append(out, &t.Nodes[i])
		}
	}
	return out
}

// MasterOf returns the master whose slots n serves: n itself, or its
// master.
func (t *Topology) MasterOf(n *Node) *Node {
	if !n.IsReplica() {
		return n
	}
	return t.Node(n.MasterID)
}

// Assigned counts the slots some master serves.
func (t *Topology) Assigned() int {
	n := 0
	for _, o := range t.owner {
		if o >= 0 {
			n++
		}
	}
	return n
}

// Text is the topology in the format Parse reads.
func (t *Topology) Text() string {
	var b strings.Builder
	for i := range t.Nodes {
		n := &t.Nodes[i]
		role, master := "master", "-"
		if n.IsReplica() {
			role, master = "slave", n.MasterID
		}
		fmt.Fprintf(&b, "%s %s %d %s %s", n.ID, n.IP, n.Port, role, master)
		for _, r := range n.Slots {
			b.WriteByte(' ')
			b.WriteString(r.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// String is "from-to", or "from" for one slot.
func (r Range) String() string {
	if r.From == r.To {
		return strconv.Itoa(r.From)
	}
	return strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To)
}

// WithSlot returns a copy of t at version in which slot is served by the
// master id (CLUSTERX SETSLOT slot NODE id version, once a migration is
// done).
func (t *Topology) WithSlot(slot int, id string, version int64) (*Topology, error) {
	n := t.Node(id)
	if n == nil || n.IsReplica() {
		return nil, fmt.Errorf("%w: %s is not a master of the topology", ErrSyntax, id)
	}
	c := &Topology{Version: version, Nodes: make([]Node, len(t.Nodes)), owner: t.owner}
	copy(c.Nodes, t.Nodes)
	for i := range c.Nodes {
		if c.Nodes[i].ID == id {
			c.owner[slot] = int16(i)
		}
	}
	for i := range c.Nodes {
		if !c.Nodes[i].IsReplica() {
			c.Nodes[i].Slots = c.rangesOf(i)
		}
	}
	return c, nil
}

// Emulated is the topology of a node alone in cluster mode, before any
// push: it serves every slot at ip:port (as Dragonfly's emulated cluster
// mode), so that a client that insists on cluster mode works against one
// node. Its version is -1, below any pushed one.
func Emulated(id, ip string, port int) *Topology {
	t := &Topology{Version: -1, Nodes: []Node{{ID: id, IP: ip, Port: port, Slots: []Range{{0, Slots - 1}}}}}
	for i := range t.owner {
		t.owner[i] = 0
	}
	return t
}

// ShardOf returns the master of the shard node id belongs to (id itself for
// a master), or nil when id is not in t.
func (t *Topology) ShardOf(id string) *Node {
	n := t.Node(id)
	if n == nil {
		return nil
	}
	return t.MasterOf(n)
}

// WithMaster returns a copy of t in which id, a replica of its shard,
// serves the shard's slots as its master: the old master and the other
// replicas become its replicas (a failover, as Sentinel makes one). The
// version stays t's: it is the operator's, and a failover is ordered by its
// epoch instead (State.SetMaster). A master id returns t itself.
func (t *Topology) WithMaster(id string) (*Topology, error) {
	n := t.Node(id)
	if n == nil {
		return nil, fmt.Errorf("%w: %s is not in the topology", ErrSyntax, id)
	}
	if !n.IsReplica() {
		return t, nil
	}
	old := n.MasterID
	c := &Topology{Version: t.Version, Nodes: make([]Node, len(t.Nodes))}
	copy(c.Nodes, t.Nodes)
	next := -1
	for i := range c.Nodes {
		switch m := &c.Nodes[i]; {
		case m.ID == id:
			m.MasterID, next = "", i
		case m.ID == old:
			m.MasterID, m.Slots = id, nil
		case m.MasterID == old:
			m.MasterID = id
		}
	}
	prev := indexOf(t, old)
	for s, o := range t.owner {
		if int(o) == prev {
			c.owner[s] = int16(next)
		} else {
			c.owner[s] = o
		}
	}
	c.Nodes[next].Slots = c.rangesOf(next)
	return c, nil
}
