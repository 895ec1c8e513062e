package clusternode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redcell/redcell/cluster"
)

// Catching up with the topology. A node that was down while the operator
// pushed a newer topology (a reshard's SETSLOTs, a node added) holds an older
// one, and would serve as master slots that moved away. So a node asks the
// other nodes of its topology for theirs (CLUSTERX TOPOLOGY: the version
// and the topology as pushed) when it starts, before it serves any slot as
// master where Sentinels decide failovers (SentinelWatch releases the hold
// only after), and every topologyCheckEvery after; it takes the newest one
// any answers. Versions order pushes, so this never goes back.

// topologyCheckEvery spaces the checks of the peers' topologies after the
// first.
const topologyCheckEvery = 10 * time.Second

// catchUp asks every other node of the pushed topology for its own, within
// peerDialTimeout each, all at once, and takes the newest if it is newer
// than this node's. It reports whether it took one.
func (w *SentinelWatch) catchUp(ctx context.Context) bool {
	st := w.cfg.State
	top := st.Pushed()
	if top == nil || top.Version < 0 {
		return false
	}
	me := st.MyID()
	type answer struct {
		from    cluster.Node
		version int64
		text    string
		err     error
	}
	answers := make([]answer, len(top.Nodes))
	var wg sync.WaitGroup
	for i, n := range top.Nodes {
		if n.ID == me {
			continue
		}
		wg.Go(func() {
			a := answer{from: n}
			a.version, a.text, a.err = peerTopology(ctx, n, w.cfg.User, w.cfg.Password)
			answers[i] = a
		})
	}
	wg.Wait()
	best := answer{version: top.Version}
	for _, a := range answers {
		if a.err == nil && a.version > best.version {
			best = a
		}
	}
	if best.text == "" {
		return false
	}
	t, err := cluster.Parse(best.text, best.version)
	if err == nil {
		err = st.SetTopology(t, false)
	}
	if err != nil {
		w.cfg.Logger.Warn("cluster: a peer's newer topology not taken", "from", best.from.ID, "version", best.version, "err", err)
		return false
	}
	w.cfg.Logger.Info("cluster: caught up with a newer topology a peer holds", "from", best.from.ID, "addr", addrOf(best.from),
		"version", best.version, "was", top.Version)
	return true
}

// peerTopology asks node n for the topology it was pushed (CLUSTERX
// TOPOLOGY): its version and text.
func peerTopology(ctx context.Context, n cluster.Node, user, password string) (int64, string, error) {
	p, err := dialPeer(n, user, password)
	if err != nil {
		return 0, "", err
	}
	defer p.close()
	stop := context.AfterFunc(ctx, p.close)
	defer stop()
	p.deadline = time.Now().Add(sentinelTimeout)
	v, err := p.value("CLUSTERX", "TOPOLOGY")
	if err != nil {
		return 0, "", err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return 0, "", fmt.Errorf("CLUSTERX TOPOLOGY answered %v", v)
	}
	version, ok1 := a[0].(int64)
	text, ok2 := a[1].(string)
	if !ok1 || !ok2 {
		return 0, "", fmt.Errorf("CLUSTERX TOPOLOGY answered %v", v)
	}
	return version, text, nil
}
