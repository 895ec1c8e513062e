package storage

import (
	"sync"

	"redcell/gcra"
)

var _ Backend = (*MemoryBackend)(nil)

// MemoryBackend is a Backend in a map, for tests. Fail, when set, makes Apply
// return it without writing, to simulate a failing disk.
type MemoryBackend struct {
	mu    sync.Mutex
	Data  map[string]gcra.Instant
	Syncs int
	Fail  error
}

// NewMemoryBackend returns an empty MemoryBackend.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{Data: make(map[string]gcra.Instant)}
}

func (m *MemoryBackend) Apply(changes []Change, sync bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return m.Fail
	}
	for _, c := range changes {
		if c.TAT == 0 {
			delete(m.Data, c.Key)
		} else {
			m.Data[c.Key] = c.TAT
		}
	}
	if sync {
		m.Syncs++
	}
	return nil
}

func (m *MemoryBackend) Load(now gcra.Instant, fn func(key []byte, tat gcra.Instant)) (loaded, deleted int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tat := range m.Data {
		if tat <= now {
			delete(m.Data, k)
			deleted++
			continue
		}
		fn([]byte(k), tat)
		loaded++
	}
	return loaded, deleted, nil
}

// Snapshot returns a copy of the stored data.
func (m *MemoryBackend) Snapshot() map[string]gcra.Instant {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]gcra.Instant, len(m.Data))
	for k, v := range m.Data {
		out[k] = v
	}
	return out
}

func (m *MemoryBackend) Sync() error     { return nil }
func (m *MemoryBackend) DiskSize() int64 { return 0 }
func (m *MemoryBackend) Close() error    { return nil }
