package storage

import (
	"sync"

	"github.com/redcell/redcell/gcra"
)

var _ Backend = (*memoryBackend)(nil)

// memoryBackend is a Backend in a map, for tests: Data holds every stored
// key's TAT (or expiry), Boxed the whole change of the keys of boxed kinds,
// Saved the instant of the last save. Fail, when set, makes Apply and Sync
// return it without writing, to simulate a failing disk.
type memoryBackend struct {
	mu    sync.Mutex
	Data  map[string]gcra.Instant
	Boxed map[string]Change
	Saved gcra.Instant
	Syncs int
	Fail  error
}

// newMemoryBackend returns an empty memoryBackend.
func newMemoryBackend() *memoryBackend {
	return &memoryBackend{Data: make(map[string]gcra.Instant), Boxed: make(map[string]Change)}
}

func (m *memoryBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return m.Fail
	}
	if saved != 0 {
		m.Saved = saved
	}
	for _, c := range changes {
		delete(m.Boxed, c.Key)
		switch {
		case c.TAT == 0:
			delete(m.Data, c.Key)
		case c.Kind != KindTAT:
			m.Data[c.Key] = c.TAT
			m.Boxed[c.Key] = c
		default:
			m.Data[c.Key] = c.TAT
		}
	}
	if sync {
		m.Syncs++
	}
	return nil
}

// Load calls fn for every stored key whose TAT (or expiry) is after now, as
// OpenPebble does, and leaves the others stored; as OpenPebble, it moves
// every instant back when now is behind the last save, and keeps them so.
func (m *memoryBackend) Load(now gcra.Instant, fn Loader) (LoadStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stats := LoadStats{Behind: clockCorrection(m.Saved, now)}
	if stats.Behind > 0 {
		for k, tat := range m.Data {
			kind, value := KindTAT, []byte(nil)
			if c, ok := m.Boxed[k]; ok {
				kind, value = c.Kind, []byte(c.Value)
			}
			tat, value = shiftState(kind, tat, value, -stats.Behind, nil)
			m.Data[k] = tat
			if kind != KindTAT {
				m.Boxed[k] = Change{Key: k, TAT: tat, Kind: kind, Value: string(value)}
			}
		}
		m.Saved = now
	}
	for k, tat := range m.Data {
		if tat <= now {
			stats.Stale++
			continue
		}
		kind, value := KindTAT, []byte(nil)
		if c, ok := m.Boxed[k]; ok {
			kind, value = c.Kind, []byte(c.Value)
		}
		if err := fn([]byte(k), kind, tat, value); err != nil {
			return stats, err
		}
		stats.Loaded++
	}
	return stats, nil
}

func (m *memoryBackend) DeleteStale(now gcra.Instant) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return 0, m.Fail
	}
	n := 0
	for k, tat := range m.Data {
		if tat <= now {
			delete(m.Data, k)
			delete(m.Boxed, k)
			n++
		}
	}
	return n, nil
}

// Snapshot returns a copy of the stored TATs (and expiries).
func (m *memoryBackend) Snapshot() map[string]gcra.Instant {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]gcra.Instant, len(m.Data))
	for k, v := range m.Data {
		out[k] = v
	}
	return out
}

func (m *memoryBackend) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return m.Fail
	}
	m.Syncs++
	return nil
}

func (m *memoryBackend) DiskSize() int64   { return 0 }
func (m *memoryBackend) DiskState() string { return "ok" }
func (m *memoryBackend) Close() error      { return nil }
