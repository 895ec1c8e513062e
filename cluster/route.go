package cluster

// Where a command on a slot must go (State.Route, on every keyed command,
// and State.Mine, the hot path's whole check).

// Route is where a command on slot must go.
type Route uint8

// Routes.
const (
	Local     Route = iota // run it here
	Moved                  // -MOVED slot ip:port (Node)
	Ask                    // -ASK slot ip:port (Node): the slot is moving there
	TryAgain               // -TRYAGAIN: the slot is frozen for a moment
	Unserved               // -CLUSTERDOWN: no node serves the slot
	NotMember              // -CLUSTERDOWN: this node is not in the topology
	Held                   // -CLUSTERDOWN: this node waits to hear its Sentinels
)

// Mine reports whether this node serves slot, with no move of any slot in
// progress: then Route would answer Local whatever the client. It is the
// hot path's whole check: two atomic loads and an index.
func (s *State) Mine(slot int) bool {
	v := s.view.Load()
	return v.top != nil && v.me >= 0 && int(v.top.owner[slot]) == v.me && !v.held && s.moves.Load() == nil
}

// Route says where a command on slot goes. asking: the client sent ASKING
// just before; readOnly: the client sent READONLY, and read: the command
// only reads (a replica may answer it for its master's slots).
func (s *State) Route(slot int, asking, readOnly, read bool) (Route, *Node) {
	v := s.view.Load()
	if v.top == nil || v.me < 0 {
		return NotMember, nil
	}
	owner := v.top.Owner(slot)
	if owner == nil {
		return Unserved, nil
	}
	me := &v.top.Nodes[v.me]
	if owner == me {
		if v.held {
			return Held, nil
		}
		if m := s.move(slot); m != nil && m.Out {
			switch m.Phase.Load() {
			case Frozen:
				if !read {
					return TryAgain, nil
				}
			case Asking:
				return Ask, &m.Peer
			}
		}
		return Local, nil
	}
	if asking {
		if m := s.move(slot); m != nil && !m.Out {
			return Local, nil
		}
	}
	if readOnly && read && me.MasterID == owner.ID {
		return Local, nil
	}
	return Moved, owner
}
