package replication

import (
	"time"
)

// WAIT, and a failover's wait for its replica to catch up: what a master
// counts of its replicas' acknowledgements.

// Wait asks every replica to acknowledge (REPLCONF GETACK) and waits until
// numReplicas of them hold every change made before the call, or timeout (0:
// no limit) passes, or done is closed; it returns how many do.
func (n *Node) Wait(numReplicas int, timeout time.Duration, done <-chan struct{}) int {
	target := n.Sync()
	if n.count(target) >= numReplicas && numReplicas > 0 {
		return n.count(target)
	}
	if !n.IsReplica() {
		n.appendStream([]byte(getAckCommand))
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		n.mu.Lock()
		acked := n.acked
		n.mu.Unlock()
		c := n.count(target)
		if c >= numReplicas {
			return c
		}
		select {
		case <-acked:
		case <-deadline:
			return n.count(target)
		case <-done:
			return n.count(target)
		}
	}
}

// count is how many replicas acknowledged offset.
func (n *Node) count(offset int64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for l := range n.links {
		if l.acked.Load() >= offset {
			c++
		}
	}
	return c
}

// WaitCaughtUp waits until the replica at ip:port (with ip "", any replica)
// has acknowledged the whole stream as it is when called, asking for
// acknowledgements (REPLCONF GETACK) as it waits, for at most timeout (0:
// no limit) or until done is closed. It returns the replica and whether it
// caught up. The caller has paused writes, so the stream's end holds still.
func (n *Node) WaitCaughtUp(ip string, port int, timeout time.Duration, done <-chan struct{}) (ReplicaStatus, bool) {
	target := n.Sync()
	n.appendStream([]byte(getAckCommand))
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	ask := time.NewTicker(100 * time.Millisecond)
	defer ask.Stop()
	for {
		n.mu.Lock()
		acked := n.acked
		var found *Link
		for l := range n.links {
			if (ip == "" || (l.ip == ip && l.port == port)) && l.acked.Load() >= target {
				found = l
				break
			}
		}
		n.mu.Unlock()
		if found != nil {
			return found.status(n.cfg.Now()), true
		}
		select {
		case <-acked:
		case <-ask.C:
			n.appendStream([]byte(getAckCommand))
		case <-deadline:
			return ReplicaStatus{}, false
		case <-done:
			return ReplicaStatus{}, false
		}
	}
}
