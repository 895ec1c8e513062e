package server

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/storage"
)

// Server-assisted client-side caching, as Redis 6's (CLIENT TRACKING, the
// commands in cmd_client.go): a tracking client is told when a key it may
// have cached changes, by an "invalidate" push under RESP3 or, redirected
// (REDIRECT id) to a connection subscribed to __redis__:invalidate, by a
// Pub/Sub message under RESP2.
//
// Which keys changed the server learns from the store itself
// (storage.Observer): every write and deletion, whatever makes it (a
// decision, DEL, expiry, eviction, a master's stream, a full sync's Clear, a
// slot dropped when it moves away, an import, the rate limit service). The
// observer is set only while some client tracks, so that a decision pays one
// predictable branch for all this when none does; the server's own commands
// add nothing (client.changed already tests one flag for durable mode, which
// NOLOOP shares).
//
// The table of tracked keys maps each key read by a client in the default
// mode to the IDs of the clients that read it, in stripes by the key's hash,
// each under its own lock, since every change anywhere looks its key up while
// any client tracks. As in Redis a key leaves the table once invalidated
// (the client reads it again to be told again), IDs of clients gone or no
// longer tracking are dropped lazily, and the table holds at most
// maxTrackedKeys keys: past that a key is invalidated to make room, as if it
// had changed. BCAST clients are kept apart, by prefix.
//
// An invalidation goes out when the change is made, from the goroutine that
// makes it, except for a client that is running commands itself (busy):
// those wait in its pending list and follow the reply of the command that
// runs, as Redis sends its own invalidations after a command's reply, so that
// a client never reads an invalidation before the reply that read the key.
type tracking struct {
	s *Server

	// mu serializes clients turning tracking on and off with setting and
	// clearing the store's observer; clients counts the tracking clients.
	mu      sync.Mutex
	clients atomic.Int64

	// byID finds a client by its ID, for the table's IDs and REDIRECT:
	// every connected client, from accept to closed.
	regMu sync.RWMutex
	byID  map[int64]*client

	// stripes are the table's, allocated apart (newTracking): inline they
	// would put the Server's later fields beyond its first 4 KiB, where
	// every access on the hot path pays an explicit nil check.
	stripes *[trackStripes]trackStripe
	// keys and items count the table's keys and the IDs under them
	// (INFO's tracking_total_keys and tracking_total_items).
	keys, items atomic.Int64

	// prefixes are BCAST clients by prefix; bcast is set while there is
	// one, for the observer's one test.
	bcastMu  sync.RWMutex
	prefixes map[string]map[*client]struct{}
	bcast    atomic.Bool
}

// init readies the table for s.
func (tr *tracking) init(s *Server) {
	tr.s = s
	tr.stripes = new([trackStripes]trackStripe)
}

// trackStripes is the number of the table's stripes, a power of two.
const trackStripes = 64

// maxTrackedKeys bounds the table, as Redis's tracking-table-max-keys
// (whose default it is). A variable so that a test can reach it.
var maxTrackedKeys = 1_000_000

type trackStripe struct {
	mu   sync.Mutex
	keys map[string][]int64
	_    [40]byte // keep neighbouring locks off one cache line
}

var trackSeed = maphash.MakeSeed()

func (tr *tracking) stripe(key []byte) *trackStripe {
	return &tr.stripes[maphash.Bytes(trackSeed, key)&(trackStripes-1)]
}

// trackingMode is what CLIENT TRACKING ON set for a client: replaced whole,
// so that other goroutines read it at once (trackingConn.mode).
type trackingMode struct {
	redirect                     int64 // 0: none
	bcast, optin, optout, noloop bool
	prefixes                     []string // BCAST's, in byte order
}

// trackingConn is a client's CLIENT TRACKING state.
type trackingConn struct {
	// on is set while the client tracks, for its own goroutine; mode is the
	// same for others, nil while off.
	on   bool
	mode atomic.Pointer[trackingMode]
	// caching is CLIENT CACHING's answer for the next command (OPTIN,
	// OPTOUT); clearCaching that the command that ran last clears it once
	// it is not inside MULTI, as Redis clears it after every command but
	// CLIENT's, and not within a transaction.
	caching, clearCaching bool
	// brokenRedirect is set once the client REDIRECT names has gone.
	brokenRedirect atomic.Bool
	// outbox is the client's outbox once it has one (client.startOutbox),
	// for the goroutines that push to it: a tracking client's, or a
	// redirection's target.
	outbox atomic.Pointer[engine.Outbox]

	// inBatch is set, on the client's own goroutine, once busy is set for
	// the batch it runs; Pushed clears both once its replies are out.
	inBatch bool
	// mu guards busy and pending: while busy, the client's invalidations
	// wait in pending (trackingTable.deliver).
	mu      sync.Mutex
	busy    bool
	pending []pendingInvalidation
}

// pendingInvalidation is an invalidation held for a busy client: of key, or
// of every key (flush).
type pendingInvalidation struct {
	key   string
	flush bool
}

// registerClient and forgetClient keep byID.
func (tr *tracking) registerClient(c *client) {
	tr.regMu.Lock()
	if tr.byID == nil {
		tr.byID = make(map[int64]*client)
	}
	tr.byID[c.id] = c
	tr.regMu.Unlock()
}

func (tr *tracking) forgetClient(c *client) {
	tr.regMu.Lock()
	delete(tr.byID, c.id)
	tr.regMu.Unlock()
}

func (tr *tracking) lookup(id int64) *client {
	tr.regMu.RLock()
	c := tr.byID[id]
	tr.regMu.RUnlock()
	return c
}

// enable turns tracking on for c with mode m, or changes its mode (CLIENT
// TRACKING ON), on c's own goroutine: c gets an outbox, which others push
// its invalidations to. On an event loop, which cannot have one, the
// connection leaves the loop after this command, and starts its outbox
// before it runs another (startTrackingOutbox). BCAST prefixes add to those
// c had.
func (tr *tracking) enable(c *client, m *trackingMode) {
	if c.conn.OnLoop() {
		c.conn.Need(engine.NeedGoroutineAfter)
	} else {
		c.startOutbox()
	}
	if m.bcast {
		// No PREFIX is every key's prefix, the empty one; either adds to
		// the prefixes the client had, as in Redis.
		if len(m.prefixes) == 0 {
			m.prefixes = []string{""}
		}
		if old := c.tracking.mode.Load(); old != nil {
			m.prefixes = mergePrefixes(old.prefixes, m.prefixes)
		}
	}
	c.tracking.mode.Store(m)
	c.tracking.brokenRedirect.Store(false)
	if m.bcast {
		tr.bcastMu.Lock()
		if tr.prefixes == nil {
			tr.prefixes = make(map[string]map[*client]struct{})
		}
		for _, p := range m.prefixes {
			if tr.prefixes[p] == nil {
				tr.prefixes[p] = make(map[*client]struct{})
			}
			tr.prefixes[p][c] = struct{}{}
		}
		tr.bcast.Store(true)
		tr.bcastMu.Unlock()
	}
	if m.noloop {
		c.onChange |= changeNoloop
	} else {
		c.onChange &^= changeNoloop
	}
	if !c.tracking.on {
		c.tracking.on = true
		c.regate()
		tr.mu.Lock()
		if tr.clients.Add(1) == 1 {
			tr.observe(c, tr)
		}
		tr.mu.Unlock()
	}
}

// startTrackingOutbox starts the outbox of a tracking client that has left
// its event loop (enable).
func (c *client) startTrackingOutbox() { c.startOutbox() }

// disable turns tracking off for c (CLIENT TRACKING OFF, RESET, the
// connection's end), on c's own goroutine. The keys it read stay in the
// table until they change, as in Redis.
func (tr *tracking) disable(c *client) {
	if !c.tracking.on {
		return
	}
	m := c.tracking.mode.Load()
	if m.bcast {
		tr.bcastMu.Lock()
		for _, p := range m.prefixes {
			delete(tr.prefixes[p], c)
			if len(tr.prefixes[p]) == 0 {
				delete(tr.prefixes, p)
			}
		}
		tr.bcast.Store(len(tr.prefixes) > 0)
		tr.bcastMu.Unlock()
	}
	c.tracking.mode.Store(nil)
	c.tracking.on, c.tracking.caching, c.tracking.clearCaching = false, false, false
	c.onChange &^= changeNoloop
	c.regate()
	c.tracking.mu.Lock()
	c.tracking.pending = nil
	c.tracking.mu.Unlock()
	tr.mu.Lock()
	if tr.clients.Add(-1) == 0 {
		tr.observe(c, nil)
		tr.clearTable()
	}
	tr.mu.Unlock()
}

// observe sets or clears the store's observer. Inside EXEC c holds some of
// the store's shards (its Txn): those are set through it.
func (tr *tracking) observe(c *client, o storage.Observer) {
	if tx, ok := c.ks.(*storage.Txn); ok {
		tx.Observe(o)
		return
	}
	tr.s.store.Observe(o)
}

// mergePrefixes is old's prefixes with add's, each once, in byte order.
func mergePrefixes(old, add []string) []string {
	out := slices.Clone(old)
	for _, p := range add {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// clearTable empties the table of tracked keys.
func (tr *tracking) clearTable() {
	for i := range tr.stripes {
		st := &tr.stripes[i]
		st.mu.Lock()
		st.keys = nil
		st.mu.Unlock()
	}
	tr.keys.Store(0)
	tr.items.Store(0)
}

// remember records that c may cache key (the default mode's read).
func (tr *tracking) remember(c *client, key []byte) {
	st := tr.stripe(key)
	st.mu.Lock()
	if st.keys == nil {
		st.keys = make(map[string][]int64)
	}
	ids, ok := st.keys[string(key)]
	if !ok {
		tr.keys.Add(1)
	}
	if !slices.Contains(ids, c.id) {
		st.keys[string(key)] = append(ids, c.id)
		tr.items.Add(1)
	}
	var evicted string
	var evictedIDs []int64
	if len(st.keys) > maxTrackedKeys/trackStripes {
		for k, v := range st.keys { // a key at random, as Redis's random walk
			if k != string(key) {
				evicted, evictedIDs = k, v
				delete(st.keys, k)
				tr.keys.Add(-1)
				tr.items.Add(-int64(len(v)))
				break
			}
		}
	}
	st.mu.Unlock()
	if evictedIDs != nil {
		tr.invalidateIDs(evictedIDs, []byte(evicted))
	}
}

// appendTrackingFlags appends CLIENT LIST's flags for tracking, as Redis's: t
// tracking, R its redirection broken, B in BCAST mode.
func (c *client) appendTrackingFlags(f []byte) []byte {
	m := c.tracking.mode.Load()
	if m == nil {
		return f
	}
	f = append(f, 't')
	if c.tracking.brokenRedirect.Load() {
		f = append(f, 'R')
	}
	if m.bcast {
		f = append(f, 'B')
	}
	return f
}

// redirect is CLIENT LIST's redir and CLIENT GETREDIR's answer: -1 when not
// tracking, else the ID invalidations are redirected to, 0 for none.
func (c *client) redirect() int64 {
	if m := c.tracking.mode.Load(); m != nil {
		return m.redirect
	}
	return -1
}

// trackingCounts are INFO's tracking_total_keys, tracking_total_items and
// tracking_total_prefixes.
func (tr *tracking) counts() (keys, items int64, prefixes int) {
	tr.bcastMu.RLock()
	prefixes = len(tr.prefixes)
	tr.bcastMu.RUnlock()
	return tr.keys.Load(), tr.items.Load(), prefixes
}

var _ storage.Observer = (*tracking)(nil)
