package clusteradmin

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ReshardOptions are the settings of a reshard.
type ReshardOptions struct {
	From, To string // host:port of the source and destination masters
	Slots    []int  // the slots to move (ParseSlots)
	Password string // AUTH password of every node; "" for none
	// Timeout bounds each command sent to a node, a slot's whole
	// migration included. The default value is DefaultTimeout.
	Timeout time.Duration
	Out     io.Writer // progress, a line a slot
}

// DefaultTimeout is ReshardOptions.Timeout's default.
const DefaultTimeout = time.Minute

// migrateAttempts is how many times a slot's migration is tried when it
// gives up, each time leaving the slot where it was.
const migrateAttempts = 3

// NodeError is a command a node refused or did not answer.
type NodeError struct {
	Node    string // address, and ID when known
	Command string
	Err     error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Command + ": " + e.Err.Error() }

func (e *NodeError) Unwrap() error { return e.Err }

// resharder is a reshard's connections and settings.
type resharder struct {
	*session
	o ReshardOptions
}

// Reshard moves o.Slots from the master at o.From to the master at o.To,
// one slot at a time: CLUSTERX MIGRATE slot to-id SYNC on the source,
// then CLUSTERX SETSLOT slot NODE to-id version+1 on every node of the
// topology (Plan.pushOrder). It reads the topology from o.From (CLUSTER
// NODES, CLUSTERX VERSION) and refuses to start unless every node answers
// the same version under the ID the topology gives it.
func Reshard(o ReshardOptions) error {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	s := &resharder{session: newSession(o.Password, o.Timeout), o: o}
	defer s.close()
	p, err := s.plan()
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "topology version %d, %d nodes: moving %d slots from %s to %s\n",
		p.Version, len(p.Nodes), len(p.Moves), p.From, p.To)
	for _, slot := range p.Skipped {
		fmt.Fprintf(o.Out, "slot %d: served by %s already, skipped\n", slot, p.To.Addr)
	}
	start, keys := time.Now(), int64(0)
	version := p.Version
	for i, slot := range p.Moves {
		n, took, err := s.move(p, slot, version+1)
		if err != nil {
			return err
		}
		version++
		keys += n
		fmt.Fprintf(o.Out, "slot %d: %d keys moved in %v (%d/%d)\n", slot, n, took.Round(time.Microsecond), i+1, len(p.Moves))
	}
	fmt.Fprintf(o.Out, "moved %d slots, %d keys, in %v: topology version %d\n",
		len(p.Moves), keys, time.Since(start).Round(time.Millisecond), version)
	return nil
}

// plan reads the topology from o.From and checks every node agrees on it.
func (s *resharder) plan() (*Plan, error) {
	o := s.o
	fromID, err := s.callString(o.From, o.From, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	toID, err := s.callString(o.To, o.To, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	text, err := s.callString(o.From, o.From, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	version, err := s.callInt(o.From, o.From, "CLUSTERX", "VERSION")
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodes(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.From, err)
	}
	p, err := plan(nodes, version, fromID, toID, o.Slots)
	if err != nil {
		return nil, err
	}
	// The topology's addresses, not the ones given, from here on: they are
	// the ones its nodes and clients use.
	s.conns[p.From.Addr], s.conns[p.To.Addr] = s.conns[o.From], s.conns[o.To]
	var disagree []string
	for i := range p.Nodes {
		n := &p.Nodes[i]
		id, err := s.callString(n.Addr, n.String(), "CLUSTER", "MYID")
		if err != nil {
			return nil, err
		}
		if id != n.ID {
			return nil, fmt.Errorf("%s answers CLUSTER MYID %s, not the ID the topology of %s gives it", n, id, o.From)
		}
		v, err := s.callInt(n.Addr, n.String(), "CLUSTERX", "VERSION")
		if err != nil {
			return nil, err
		}
		if v != version {
			disagree = append(disagree, n.String()+" has version "+strconv.FormatInt(v, 10))
		}
	}
	if disagree != nil {
		return nil, fmt.Errorf("the nodes disagree on the topology: %s has version %d, but %s; push one topology to every node (CLUSTERX SETNODES) first",
			p.From, version, strings.Join(disagree, ", "))
	}
	return p, nil
}

// move migrates one slot and pushes its new owner at version. It returns
// how many keys the slot held before, and how long the move took.
func (s *resharder) move(p *Plan, slot int, version int64) (int64, time.Duration, error) {
	sl, v := strconv.Itoa(slot), strconv.FormatInt(version, 10)
	keys, err := s.callInt(p.From.Addr, p.From.String(), "CLUSTER", "COUNTKEYSINSLOT", sl)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		_, err := s.call(p.From.Addr, p.From.String(), "CLUSTERX", "MIGRATE", sl, p.To.ID, "SYNC")
		if err == nil {
			break
		}
		// A migration that gave up (the destination slow to answer while
		// the slot was frozen, a connection lost) left the slot on the
		// source with its state: it is tried again, a few times.
		if attempt < migrateAttempts && strings.Contains(err.Error(), "ERR slot "+sl+" to ") {
			fmt.Fprintf(s.o.Out, "slot %d: migration gave up, the slot stays on %s (%v); trying again (%d/%d)\n",
				slot, p.From.Addr, err, attempt+1, migrateAttempts)
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			continue
		}
		return 0, 0, fmt.Errorf("slot %d stays on %s: %w", slot, p.From.Addr, err)
	}
	var failed []string
	for k, n := range p.pushOrder() {
		_, err := s.call(n.Addr, n.String(), "CLUSTERX", "SETSLOT", sl, "NODE", p.To.ID, v)
		if err == nil {
			continue
		}
		if k == 0 {
			// The source keeps sending clients to the destination with
			// ASK, which serves them: pushing to the others would leave
			// the slot served by none.
			return 0, 0, fmt.Errorf("slot %d migrated, but the destination did not take it, so no other node was told: %w; "+
				"the source sends clients there with ASK until every node has version %d", slot, err, version)
		}
		failed = append(failed, err.Error())
	}
	if failed != nil {
		return 0, 0, fmt.Errorf("slot %d moved to %s, but these nodes did not take version %d; push it to them: %s",
			slot, p.To.Addr, version, strings.Join(failed, "; "))
	}
	return keys, time.Since(start), nil
}
