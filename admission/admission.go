// Package admission decides whether a rate-limit decision may be made now,
// for every front that makes one: the RESP limiter commands (CL.THROTTLE,
// GCRA, CL.RESERVE, CL.WINDOW, CL.COUNT), inside MULTI/EXEC as outside, and
// Envoy's rate limit service. One Gate a process, shared by the fronts, so
// that they can never disagree on when a decision is refused, or in what
// order the reasons are weighed.
//
// A decision is admitted in two steps. Admit, before the decision, refuses
// what is refused whatever the decision would be: a key too long, any
// change on a replica (READONLY, as Redis's replica refuses a write even
// one that would store nothing). Its other refusals are conditional: a
// master short of good replicas (NOREPLICAS) or a durable server whose
// disk fails (MISCONF) still answers a decision that stores nothing (a
// peek, a limited call), so the decision is made dry, without storing, and
// refused only if it would have stored (Refusal.Conditional). A key the
// store cannot create (maxmemory's OOM, a full shard) is the store's to
// refuse, under the key's lock: storage.ErrOOM.
//
// Slot ownership in cluster mode (MOVED, ASK, CLUSTERDOWN) is decided before
// any of this, by the cluster routing every keyed command goes through, and
// by the rate limit service's forwarding of each key to its owner.
package admission

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// Refusal is why a decision may not be made, or Admitted.
type Refusal uint8

const (
	// Admitted: decide, and store what the decision stores.
	Admitted Refusal = iota
	// KeyTooLong: the key is longer than the gate's MaxKeyLen.
	KeyTooLong
	// ReadOnly: this node is a replica; only peeks are answered.
	ReadOnly
	// NoReplicas: fewer good replicas than --min-replicas-to-write ask;
	// conditional.
	NoReplicas
	// Misconf: durable mode (--flush-interval 0) while flushes fail;
	// conditional.
	Misconf
	// OOM: the key would be created past --maxmemory under noeviction.
	// The store refuses it, under the key's lock (storage.ErrOOM); it is
	// a Refusal so that every front words and codes it alike.
	OOM
	// ClusterDown: in cluster mode, the key's slot is served by no node
	// (CLUSTERDOWN), found by the routing of a key to its node.
	ClusterDown
)

// Conditional reports whether r refuses only a decision that would store:
// one that stores nothing is answered.
func (r Refusal) Conditional() bool { return r == NoReplicas || r == Misconf }

// Text is the refusal's error text, as Redis words it where Redis has the
// refusal, for every front: RESP replies it, the rate limit service puts it
// in its gRPC status. A key too long is worded by KeyTooLongText.
func (r Refusal) Text() string {
	switch r {
	case ReadOnly:
		return "READONLY You can't write against a read only replica."
	case NoReplicas:
		return "NOREPLICAS Not enough good replicas to write."
	case Misconf:
		// Redis's answer to a write it cannot persist
		// (stop-writes-on-bgsave-error), in redcell's terms.
		return "MISCONF redcell is configured to persist every change before replying (--flush-interval 0), but it is currently unable to persist to disk. Commands that may modify the data set are disabled until a flush succeeds. Please check the redcell logs for details about the error."
	case KeyTooLong:
		return "ERR key too long"
	case OOM:
		return "OOM command not allowed when used memory > 'maxmemory'."
	case ClusterDown:
		return "CLUSTERDOWN Hash slot not served"
	}
	return ""
}

// Of reads a refusal back from its text, as another node answered it to a
// call forwarded there: Admitted for a text that is no refusal.
func Of(text string) Refusal {
	for _, r := range []Refusal{ReadOnly, NoReplicas, Misconf, OOM, ClusterDown, KeyTooLong} {
		word := r.Text()
		if r != KeyTooLong {
			word, _, _ = strings.Cut(word, " ")
			word += " "
		}
		if strings.HasPrefix(text, word) {
			return r
		}
	}
	return Admitted
}

// KeyTooLongText words the refusal of a key of n bytes over a limit of max.
func KeyTooLongText(n, max int) string {
	return "ERR key too long: " + strconv.Itoa(n) + " bytes, --max-key-len is " + strconv.Itoa(max)
}

// The words of Gate.Refusing, as replication.Node sets them
// (replication.RefuseReplica, replication.RefuseFewReplicas).
const (
	RefuseReplica     uint32 = 1 << 0
	RefuseFewReplicas uint32 = 1 << 1
)

// Persistence is what the gate asks of durable mode's persistence.
type Persistence interface {
	// Failing reports whether the last flush failed.
	Failing() bool
}

// Gate admits decisions. Its fields are set once, before it is used; it is
// then safe for concurrent use.
type Gate struct {
	// MaxKeyLen bounds a key's length, --max-key-len; > 0.
	MaxKeyLen int
	// Refusing is replication's word of why it refuses writes (a replica,
	// a master short of replicas: RefuseReplica, RefuseFewReplicas), or a
	// word never set without replication. Never nil.
	Refusing *atomic.Uint32
	// Durable is durable mode (--flush-interval 0), in which a change that
	// the disk cannot take is refused (MISCONF) through Persistence.
	Durable     bool
	Persistence Persistence
}

// New returns a gate with maxKeyLen, no replication and no durable mode.
func New(maxKeyLen int) *Gate { return &Gate{MaxKeyLen: maxKeyLen, Refusing: new(atomic.Uint32)} }

// Admit decides whether a decision on a key of keyLen bytes, charging
// quantity (0: a peek, which never stores), may be made: Admitted, a
// refusal, or a conditional refusal, under which the decision is made dry
// and refused only if it would store. The reasons are weighed in one order
// for every front: the key's length, then a replica's, then a master's
// replicas, then the disk.
func (g *Gate) Admit(keyLen int, quantity int64) Refusal {
	switch {
	case keyLen > g.MaxKeyLen:
		return KeyTooLong
	case quantity == 0:
		return Admitted // a peek stores nothing
	}
	return g.Writes()
}

// Open reports whether Admit would admit any decision on a key of keyLen
// bytes now: nothing is refused. It is the hot path's test, inlined into
// the caller (a comparison, an atomic load and a test), which asks Admit
// only when it is false.
func (g *Gate) Open(keyLen int) bool {
	return keyLen <= g.MaxKeyLen && g.Refusing.Load() == 0 && !g.Durable
}

// Writes is the refusal of a change now, whatever it is (DEL, FLUSHALL, a
// key restored), or Admitted: Admit for a change with no key to weigh. Its
// conditional refusals refuse the change outright.
func (g *Gate) Writes() Refusal {
	switch r := g.Refusing.Load(); {
	case r&RefuseReplica != 0:
		return ReadOnly
	case r&RefuseFewReplicas != 0:
		return NoReplicas
	case g.Durable && g.Persistence.Failing():
		return Misconf
	}
	return Admitted
}
