package cluster

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/redcell/redcell/internal/atomicfile"
)

// nodes.conf: the state a node keeps in --dir (its ID, the topology pushed,
// its Sentinels and the failovers they reported), written before a change
// is answered and read back by NewState.

// The file a State persists in: "myid <id>", "sentinels <host:port> ..."
// when there are Sentinels, "failover <shard's master> <master> <epoch>"
// for each shard Sentinel named a master of, "moving <slot> out|in
// <peer's id>" for each move handed (in Asking, and handing, the one
// State.Hand saves before it enters Asking), "version <n>", then the topology's lines as pushed (Topology.Text), or no
// version and no lines before the first push. It is replaced whole
// (atomicfile). The caller holds s.mu.
func (s *State) save(v *view, handing *Move) error {
	if s.path == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("# redcell cluster state: this node's ID, its Sentinels, the failovers they reported and the topology pushed last (CLUSTERX SETNODES)\n")
	b.WriteString("myid " + v.myID + "\n")
	if len(v.sentinels) > 0 {
		b.WriteString("sentinels " + strings.Join(v.sentinels, " ") + "\n")
	}
	for _, shard := range slices.Sorted(maps.Keys(v.failovers)) {
		f := v.failovers[shard]
		if f.Pending {
			f.Master = f.Reported // Sentinel has not said it yet
		}
		fmt.Fprintf(&b, "failover %s %s %d\n", shard, f.Master, f.Epoch)
	}
	var moves []*Move
	if p := s.moves.Load(); p != nil {
		for _, m := range *p {
			if m.Phase.Load() == Asking || m == handing {
				moves = append(moves, m)
			}
		}
	}
	slices.SortFunc(moves, func(a, b *Move) int { return a.Slot - b.Slot })
	for _, m := range moves {
		way := "in"
		if m.Out {
			way = "out"
		}
		fmt.Fprintf(&b, "moving %d %s %s\n", m.Slot, way, m.Peer.ID)
	}
	if v.base != nil && v.base.Version >= 0 {
		b.WriteString("version " + strconv.FormatInt(v.base.Version, 10) + "\n")
		b.WriteString(v.base.Text())
	}
	if err := atomicfile.Write(s.path, []byte(b.String())); err != nil {
		return fmt.Errorf("cluster: saving %s: %w", s.path, err)
	}
	return nil
}

// saved is what load reads back of a State's file.
type saved struct {
	id        string
	top       *Topology
	sentinels []string
	failovers map[string]Failover
	moves     []savedMove
}

// savedMove is a "moving" line: a move handed (State.Hand).
type savedMove struct {
	slot int
	out  bool
	peer string
}

func load(path string) (f saved, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	var version int64 = -1
	var nodes strings.Builder
	for n, line := range strings.Split(string(data), "\n") {
		fs := strings.Fields(line)
		bad := fmt.Errorf("%s:%d: %q is not a line redcell writes", path, n+1, line)
		switch {
		case len(fs) == 0 || strings.HasPrefix(fs[0], "#"):
		case fs[0] == "myid" && len(fs) == 2 && len(fs[1]) == IDLen && isHex(fs[1]):
			f.id = fs[1]
		case fs[0] == "sentinels" && len(fs) >= 2:
			f.sentinels = fs[1:]
		case fs[0] == "failover" && len(fs) == 4:
			epoch, err := strconv.ParseInt(fs[3], 10, 64)
			if err != nil || len(fs[1]) != IDLen || len(fs[2]) != IDLen {
				return f, bad
			}
			if f.failovers == nil {
				f.failovers = map[string]Failover{}
			}
			f.failovers[fs[1]] = Failover{Master: fs[2], Epoch: epoch}
		case fs[0] == "moving" && len(fs) == 4:
			slot, err := strconv.Atoi(fs[1])
			if err != nil || slot < 0 || slot >= Slots || (fs[2] != "out" && fs[2] != "in") || len(fs[3]) != IDLen {
				return f, bad
			}
			f.moves = append(f.moves, savedMove{slot: slot, out: fs[2] == "out", peer: fs[3]})
		case fs[0] == "version" && len(fs) == 2:
			if version, err = strconv.ParseInt(fs[1], 10, 64); err != nil {
				return f, fmt.Errorf("%s:%d: %q", path, n+1, line)
			}
		case len(fs) >= 5:
			nodes.WriteString(line + "\n")
		default:
			return f, bad
		}
	}
	if f.id == "" {
		return f, fmt.Errorf("%s: no myid line", path)
	}
	if version < 0 {
		return f, nil
	}
	if f.top, err = Parse(nodes.String(), version); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
