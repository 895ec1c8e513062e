package storage

// What a key holds (Kind): a TAT inline in its entry, or a boxed state in
// the value arena (table.value), and how TYPE and OBJECT name it.

// Kind is what a key holds.
type Kind uint8

const (
	// KindTAT is the GCRA family's state: a TAT (CL.THROTTLE, GCRA,
	// CL.RESERVE), stored inline.
	KindTAT Kind = iota
	// KindWindow is CL.WINDOW's state: a log or counters (package window),
	// boxed in the value arena.
	KindWindow
	// KindLeases is CL.ACQUIRE's state: the leases held (package lease),
	// boxed in the value arena. The entry's tag (Kind + 1) has room for no
	// more kinds.
	KindLeases
)

// Boxed reports whether k is a kind whose state is kept in the value arena
// (every kind but the TAT).
func (k Kind) Boxed() bool { return k == KindWindow || k == KindLeases }

// Type is the key's type as TYPE and OBJECT ENCODING name it: a TAT is a
// string, as redis-cell's keys are.
func (k Kind) Type() string {
	switch k {
	case KindWindow:
		return "window"
	case KindLeases:
		return "leases"
	}
	return "string"
}

// Kinds lists every kind, for what counts keys by kind.
var Kinds = [...]Kind{KindTAT, KindWindow, KindLeases}

// KeysByKind returns how many keys of each kind the store holds, expired
// ones not yet swept included (as Len), indexed by Kind.
func (s *Store) KeysByKind() [len(Kinds)]int {
	var n [len(Kinds)]int
	for i := range s.shards {
		s.shards[i].with(func(sh *shard) {
			n[KindTAT] += sh.t.count - sh.t.boxed[0] - sh.t.boxed[1]
			n[KindWindow] += sh.t.boxed[0]
			n[KindLeases] += sh.t.boxed[1]
		})
	}
	return n
}
