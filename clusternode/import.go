package clusternode

import (
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/statecodec"
)

// The destination's side of a migration (Migrate, on the source): the
// source starts it (StartImport), sends each key's state and each key gone
// (ImportKey), then, its slot frozen, says it is done (EndImport), after
// which the slot is served here to ASKING clients until a topology gives it
// here (Follower.Follow); or it gives up (AbortImport).

// StartImport begins an import of slot from the node id, which must own it
// (ErrNotOwner otherwise): what this node holds of the slot is cleared,
// and an import of it that failed before is forgotten (a retry).
func (m *Migrator) StartImport(slot int, id string) error {
	st := m.cfg.State
	top, me := st.Topology()
	if me == nil { // no topology yet (top is nil), or one without this node
		return ErrNotOwner
	}
	src := top.Node(id)
	if src == nil || top.Owner(slot) != src {
		return ErrNotOwner
	}
	if mv := st.Move(slot); mv != nil && !mv.Out {
		st.EndMove(slot)
	}
	m.cfg.Store.DeleteSlot(slot)
	return st.StartMove(&cluster.Move{Slot: slot, Peer: *src})
}

// ImportKey stores key's state, value as statecodec encodes it, or
// deletes key for an empty value. The key must be of slot, being imported
// (ErrNotImporting otherwise).
func (m *Migrator) ImportKey(slot int, key, value []byte) error {
	if mv := m.cfg.State.Move(slot); mv == nil || mv.Out || cluster.Slot(key) != slot {
		return ErrNotImporting
	}
	if len(value) == 0 {
		m.cfg.Store.Delete(key, m.now())
		return nil
	}
	kind, exp, state, err := statecodec.Decode(value)
	if err != nil {
		return err
	}
	return m.cfg.Store.Apply(key, kind, exp, state)
}

// EndImport marks slot's import done, saved: the source sends clients here
// with ASK from now on. ErrNotImporting if slot is not being imported.
func (m *Migrator) EndImport(slot int) error {
	mv := m.cfg.State.Move(slot)
	if mv == nil || mv.Out {
		return ErrNotImporting
	}
	// Saved before DONE is answered (State.Hand): restarted, this node
	// keeps serving the clients the source sends here, and keeps the keys
	// it imported rather than drop them as a slot it does not serve. The
	// source waits for the answer, and aborts the move on an error.
	if err := m.cfg.State.Hand(mv); err != nil {
		return err
	}
	m.cfg.Logger.Info("cluster: slot imported; served to ASKING clients until a topology gives it here", "slot", slot)
	return nil
}

// AbortImport forgets slot's import and what it brought, if slot is being
// imported; otherwise it does nothing.
func (m *Migrator) AbortImport(slot int) {
	if mv := m.cfg.State.Move(slot); mv != nil && !mv.Out {
		m.cfg.State.EndMove(slot)
		m.cfg.Store.DeleteSlot(slot)
	}
}
