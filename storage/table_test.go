package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// check verifies the table's invariants: the count is the slots in use;
// every entry is at its distance from its home slot, the slots between
// occupied, and each run in the order of its homes (Robin Hood); every key is
// found where it is; the table is at most 7/8 full; the arenas' garbage is
// what no entry uses; and each change log's count of marked entries is
// theirs, each marked entry's block marked.
func (t *table) check(tb testing.TB) {
	tb.Helper()
	if t.count == 0 {
		require.Empty(tb, t.slots, "an empty table holds no slots")
		require.Zero(tb, t.log.marked)
		require.Zero(tb, t.feed.marked)
		return
	}
	n := len(t.slots)
	require.GreaterOrEqual(tb, n, minSlots)
	require.LessOrEqual(tb, t.count*8, n*7, "at most 7/8 full")
	used, liveArena, marked, fed := 0, 0, 0, 0
	for p := range t.slots {
		e := &t.slots[p]
		if !e.used() {
			require.Zero(tb, *e, "slot %d: an empty slot is zero", p)
			continue
		}
		used++
		key := t.keyOf(e)
		h := hashKey(key)
		require.Equal(tb, h, t.hashOf(e), "slot %d: the hash kept is the key's", p)
		if e.inline() {
			require.Equal(tb, hashBits(h), e.n&hashBitsMask, "slot %d: an inline key's hash bits", p)
		} else {
			require.Zero(tb, e.n&hashBitsMask, "slot %d: hash bits only for an inline key", p)
		}
		home := t.home(h)
		require.Equal(tb, (p-home+n)%n, e.dist(), "slot %d (%q): distance from its home %d", p, key, home)
		for q := home; q != p; q = t.next(q) {
			require.True(tb, t.slots[q].used(), "slot %d empty between %q's home %d and its slot %d", q, key, home, p)
		}
		if next := &t.slots[t.next(p)]; next.used() {
			require.LessOrEqual(tb, next.dist(), e.dist()+1, "slot %d: the run in the order of its homes", p)
		}
		got, ok := t.find(key, h)
		require.True(tb, ok, "key %q found", key)
		require.Equal(tb, p, got, "key %q found at its slot", key)
		if e.n&dirtyBit != 0 {
			require.True(tb, t.log.on, "marked entries only when tracking")
			marked++
			b := p >> blockShift
			require.NotZero(tb, t.log.blocks[b>>6]&(1<<(b&63)), "slot %d marked dirty: its block is marked", p)
		}
		if e.n&feedBit != 0 {
			fed++
			b := p >> blockShift
			require.NotZero(tb, t.feed.blocks[b>>6]&(1<<(b&63)), "slot %d marked for the feed: its block is marked", p)
		}
		if !e.inline() && !e.boxed() {
			liveArena += e.keyLen()
			require.LessOrEqual(tb, int(e.keyOff())+e.keyLen(), len(t.arena), "slot %d: key inside the arena", p)
		}
	}
	require.Equal(tb, t.count, used, "the count is the slots in use")
	require.Equal(tb, marked, t.log.marked, "the log counts its marked entries")
	require.Equal(tb, fed, t.feed.marked, "the feed counts its marked entries")
	require.Equal(tb, len(t.arena)-liveArena, t.garbage, "garbage is the arena's unused bytes")
	liveVals := 0
	for p := range t.slots {
		if e := &t.slots[p]; e.boxed() {
			require.Positive(tb, e.valCap(), "slot %d: a live boxed entry has its blob", p)
			liveVals += e.blobSize()
			require.LessOrEqual(tb, int(e.valOff())+e.blobSize(), len(t.vals), "slot %d: blob inside the value arena", p)
			require.LessOrEqual(tb, len(t.value(e)), e.valCap(), "slot %d: value within its capacity", p)
		}
	}
	require.Equal(tb, len(t.vals)-liveVals, t.valGarbage, "value garbage is the value arena's unused bytes")
}

// model is the table's specification: a map, and the keys changed since the
// last takeChanges.
type model struct {
	tats    map[string]gcra.Instant
	changed map[string]bool
}

func newModel() *model {
	return &model{tats: map[string]gcra.Instant{}, changed: map[string]bool{}}
}

// checkChanges compares one takeChanges result with the model: exactly the
// changed keys, each with its current TAT (zero if gone). A deletion may be
// repeated, a write may not.
func (m *model) checkChanges(tb testing.TB, got []Change) {
	tb.Helper()
	seen := map[string]int{}
	for _, c := range got {
		seen[c.Key]++
		tat, ok := m.tats[c.Key]
		require.True(tb, m.changed[c.Key], "%q reported but not changed", c.Key)
		if ok {
			require.Equal(tb, tat, c.TAT, "%q reported with its current TAT", c.Key)
			require.Equal(tb, 1, seen[c.Key], "%q written: reported once", c.Key)
		} else {
			require.Zero(tb, c.TAT, "%q deleted: reported as a deletion", c.Key)
		}
	}
	for k := range m.changed {
		require.NotZero(tb, seen[k], "changed key %q not reported", k)
	}
	clear(m.changed)
}

// runOps drives a table and the model with ops, a stream of bytes, and
// checks them against each other after every step.
func runOps(tb testing.TB, ops []byte, keys []string) {
	tb.Helper()
	tab := newTable(true)
	m := newModel()
	cursor := 0
	now := gcra.Instant(1000)
	next := func() int {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	for len(ops) > 0 {
		op, k := next(), keys[next()%len(keys)]
		kb := []byte(k)
		switch op % 16 {
		case 0, 1, 2, 3, 4, 5: // put
			tat := now + gcra.Instant(next()%64)
			tab.put(kb, tat)
			m.tats[k] = tat
			m.changed[k] = true
		case 6, 7: // get
			tat, _, ok := tab.get(kb)
			want, wantOK := m.tats[k]
			require.Equal(tb, wantOK, ok, "get %q", k)
			require.Equal(tb, want, tat, "get %q", k)
		case 8, 9: // remove
			_, had := m.tats[k]
			require.Equal(tb, had, tab.remove(kb), "remove %q", k)
			if had {
				delete(m.tats, k)
				m.changed[k] = true
			}
		case 10: // insert, as put does for an absent key
			if _, had := m.tats[k]; !had {
				tab.insert(k, now)
				m.tats[k] = now
				m.changed[k] = true
			}
		case 11, 12: // the sweeper
			now += gcra.Instant(next() % 8)
			var n int
			cursor, _, n = tab.expire(cursor, next()%32, now)
			expired := 0
			for key, tat := range m.tats {
				if _, _, ok := tab.get([]byte(key)); !ok {
					require.LessOrEqual(tb, tat, now, "%q removed before it expired", key)
					delete(m.tats, key)
					m.changed[key] = true
					expired++
				}
			}
			require.Equal(tb, expired, n, "expire reports what it removed")
		case 13, 14:
			m.checkChanges(tb, tab.takeChanges(&tab.log, nil))
		case 15:
			if next()%8 == 0 {
				tab.clear()
				for key := range m.tats {
					m.changed[key] = true
				}
				clear(m.tats)
			}
		}
		tab.check(tb)
		require.Equal(tb, len(m.tats), tab.len())
	}
	for k, tat := range m.tats {
		got, _, ok := tab.get([]byte(k))
		require.True(tb, ok, "%q kept", k)
		require.Equal(tb, tat, got)
	}
	m.checkChanges(tb, tab.takeChanges(&tab.log, nil))
}

// modelKeys mixes inline keys (up to inlineKey bytes), long ones kept in the
// arena, and the empty key.
func modelKeys(n int) []string {
	keys := []string{""}
	for i := 1; i < n; i++ {
		if i%3 == 0 {
			keys = append(keys, fmt.Sprintf("a-long-key-kept-in-the-arena:%d", i))
		} else {
			keys = append(keys, fmt.Sprintf("k%d", i))
		}
	}
	return keys
}

func TestTableMatchesMapModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ops := make([]byte, 4000)
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		runOps(t, ops, modelKeys(int(8+seed*20)))
	}
}

func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 8, 1, 13, 0})
	f.Add([]byte{0, 3, 5, 0, 4, 9, 11, 3, 200, 31, 15, 0, 0, 14, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		runOps(t, ops, modelKeys(40))
	})
}

func TestTableGrowsAndShrinks(t *testing.T) {
	tab := newTable(false)
	const n = 20000 // enough for mapped regions on Linux
	key := func(i int) []byte {
		if i%2 == 0 {
			return fmt.Appendf(nil, "key:%012d", i)
		}
		return fmt.Appendf(nil, "a-longer-key-that-lives-in-the-arena:%d", i)
	}
	sizes := []int{}
	for i := range n {
		tab.put(key(i), gcra.Instant(i+1))
		if len(sizes) == 0 || sizes[len(sizes)-1] != len(tab.slots) {
			sizes = append(sizes, len(tab.slots))
		}
	}
	tab.check(t)
	require.Equal(t, n, tab.len())
	for i := 1; i < len(sizes); i++ {
		require.Equal(t, sizes[i-1]+sizes[i-1]/4, sizes[i], "grown by a quarter each time")
	}
	require.Greater(t, tab.count*10, len(tab.slots)*7, "more than 70%% full once grown")
	if offHeap {
		require.True(t, tab.mem.slots.mapped && tab.mem.arena.mapped, "large arrays live outside the Go heap")
	}
	for i := range n {
		tat, _, ok := tab.get(key(i))
		require.True(t, ok)
		require.Equal(t, gcra.Instant(i+1), tat)
	}

	// Removing most keys gives the memory back.
	for i := 100; i < n; i++ {
		require.True(t, tab.remove(key(i)))
	}
	tab.check(t)
	require.Equal(t, 100, tab.len())
	require.LessOrEqual(t, len(tab.slots), 500, "at least a fifth full")
	require.LessOrEqual(t, cap(tab.arena), 8192, "the arena was compacted")
	for i := range 100 {
		tat, _, ok := tab.get(key(i))
		require.True(t, ok)
		require.Equal(t, gcra.Instant(i+1), tat)
	}

	// An emptied table holds nothing.
	for i := range 100 {
		require.True(t, tab.remove(key(i)))
	}
	tab.check(t)
	require.Nil(t, tab.slots)
	require.Zero(t, cap(tab.arena))
	require.Equal(t, regionSet{}, *tab.mem.regionSet)
}

// Keys whose 32-bit hashes are equal must still be told apart by their bytes;
// keys that share a home slot must survive each other's deletion, across the
// end of the index.
func TestTableCollisions(t *testing.T) {
	// A birthday search: among 300k keys, some pairs share all 32 bits.
	byHash := map[uint32]string{}
	var pairs [][2]string
	for i := 0; len(pairs) < 3 && i < 2_000_000; i++ {
		k := fmt.Sprintf("c%d", i)
		h := hashKey([]byte(k))
		if other, ok := byHash[h]; ok {
			pairs = append(pairs, [2]string{other, k})
		}
		byHash[h] = k
	}
	require.NotEmpty(t, pairs, "no full-hash collision found")
	tab := newTable(true)
	for i, p := range pairs {
		tab.put([]byte(p[0]), gcra.Instant(2*i+1))
		tab.put([]byte(p[1]), gcra.Instant(2*i+2))
	}
	tab.check(t)
	for i, p := range pairs {
		tat, _, _ := tab.get([]byte(p[0]))
		require.Equal(t, gcra.Instant(2*i+1), tat)
		tat, _, _ = tab.get([]byte(p[1]))
		require.Equal(t, gcra.Instant(2*i+2), tat)
	}
	require.True(t, tab.remove([]byte(pairs[0][0])))
	_, _, ok := tab.get([]byte(pairs[0][0]))
	require.False(t, ok)
	tat, _, ok := tab.get([]byte(pairs[0][1]))
	require.True(t, ok)
	require.Equal(t, gcra.Instant(2), tat)
	tab.check(t)

	// Six keys with the same home slot, the last one of an 8-slot table, so
	// their run wraps around; delete them in every position.
	var same []string
	for i := 0; len(same) < 6; i++ {
		k := fmt.Sprintf("h%d", i)
		if uint64(hashKey([]byte(k)))*8>>32 == 7 {
			same = append(same, k)
		}
	}
	for del := range same {
		tab := newTable(false)
		for i, k := range same {
			tab.put([]byte(k), gcra.Instant(i+1))
		}
		require.Len(t, tab.slots, 8)
		require.Equal(t, 5, tab.slots[4].dist(), "the sixth key five slots on, around the end")
		tab.check(t)
		require.True(t, tab.remove([]byte(same[del])))
		tab.check(t)
		for i, k := range same {
			tat, _, ok := tab.get([]byte(k))
			require.Equal(t, i != del, ok, "key %d after deleting %d", i, del)
			if ok {
				require.Equal(t, gcra.Instant(i+1), tat)
			}
		}
	}
}

// Keys handed out (SCAN's copies, Change.Key) stay valid while the table
// compacts and reuses its memory.
func TestTableKeysHandedOutStayValid(t *testing.T) {
	tab := newTable(true)
	long := func(i int) string { return fmt.Sprintf("%s:%d", strings.Repeat("x", 40), i) }
	for i := range 1000 {
		tab.put([]byte(long(i)), gcra.Instant(i+1))
	}
	changes := tab.takeChanges(&tab.log, nil)
	require.Len(t, changes, 1000)
	var scanned []string
	for p := range tab.slots {
		if e := &tab.slots[p]; e.used() {
			scanned = append(scanned, string(tab.keyOf(e)))
		}
	}
	for i := range 900 {
		require.True(t, tab.remove([]byte(long(i))))
	}
	for i := range 2000 {
		tab.put([]byte(long(5000+i)), 1)
	}
	tab.check(t)
	sort.Slice(changes, func(i, j int) bool { return changes[i].TAT < changes[j].TAT })
	for i, c := range changes {
		require.Equal(t, long(i), c.Key)
		require.Equal(t, gcra.Instant(i+1), c.TAT)
	}
	for _, k := range scanned {
		require.True(t, strings.HasPrefix(k, strings.Repeat("x", 40)+":"), "scanned key %q", k)
	}
}

// A write to a key that was deleted in the same window is reported once, as
// the write; a key deleted twice is reported as deleted.
func TestTableChangesOfDeletedKeys(t *testing.T) {
	tab := newTable(true)
	tab.put([]byte("a"), 1)
	tab.put([]byte("b"), 2)
	require.True(t, tab.remove([]byte("a")))
	tab.put([]byte("a"), 3)
	require.True(t, tab.remove([]byte("b")))
	tab.check(t)
	got := tab.takeChanges(&tab.log, nil)
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	require.Equal(t, []Change{{Key: "a", TAT: 3}, {Key: "b"}}, got)
	require.Empty(t, tab.takeChanges(&tab.log, nil))

	// Untracked writes are not reported, and a clear reports every key.
	tab.log.on = false
	tab.put([]byte("c"), 4)
	tab.log.on = true
	require.Empty(t, tab.takeChanges(&tab.log, nil))
	tab.put([]byte("a"), 5)
	tab.clear()
	got = tab.takeChanges(&tab.log, nil)
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	require.Equal(t, []Change{{Key: "a"}, {Key: "c"}}, got)
}

// A long key stored past 4 GiB into its shard's arena is kept and found:
// offsets are 64-bit (with 32-bit offsets, --shards 1 and 4 GiB of keys
// panicked). The arena is a mapped region, so the 5 GiB reserved here cost
// only the pages touched.
func TestTableLongKeyPastFourGiBOfArena(t *testing.T) {
	if !offHeap {
		t.Skip("needs the mapped regions of linux")
	}
	tab := newTable(false)
	const size = 5 << 30
	tab.mem.arena = allocRegion(size)
	tab.arena = tab.mem.arena.b[: 4<<30+100 : size] // as if 4 GiB of keys had come and gone
	tab.garbage = len(tab.arena)
	key := []byte(strings.Repeat("k", 100))
	require.NoError(t, tab.put(key, 42))
	p := tab.lookup(key)
	require.GreaterOrEqual(t, p, 0)
	off := binary.LittleEndian.Uint64(tab.slots[p].key[:])
	require.Equal(t, uint64(4<<30+100), off, "stored past 4 GiB")
	tat, _, ok := tab.get(key)
	require.True(t, ok)
	require.Equal(t, gcra.Instant(42), tat)
	require.Equal(t, string(key), string(tab.keyOf(&tab.slots[p])))
	tab.release()
}

// A SCAN walks a table in the order of its keys' hashes, so that however the
// table grows, shrinks or moves its keys between two calls, a full scan
// reports each key at most once, and every key present through the whole
// scan exactly once. Driven at random against a map, with TAT keys, long
// keys and boxed ones, the sweeper deleting, the change logs on, and scans
// of random sizes interleaved with the writes; the table checked after each
// step.
func TestTableScanAgainstMapModel(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tab := newTable(true)
		tab.feed.on = true
		keys := modelKeys(int(50 + seed*100))
		value := func(k string) []byte { return []byte("v:" + k) }
		live := map[string]gcra.Instant{} // the model: key to expiry
		boxed := map[string]bool{}
		now, cursor := gcra.Instant(1000), 0

		// The scan under way: where it goes on from, what it reported, and
		// the keys deleted since it began (not owed to it).
		var from uint64
		seen := map[string]int{}
		gone := map[string]bool{}
		atStart := map[string]bool{}
		resizes, resized := 0, 0 // resizes when the scan began; scans across one
		begin := func() {
			from, resizes = 0, tab.resizes
			clear(seen)
			clear(gone)
			clear(atStart)
			for k := range live {
				atStart[k] = true
			}
		}
		begin()
		scans := 0
		for step := range 4000 {
			k := keys[rng.IntN(len(keys))]
			switch op := rng.IntN(20); {
			case op < 8: // write: mostly TAT keys, a boxed one now and then
				exp := now + gcra.Instant(1+rng.IntN(64))
				if _, ok := live[k]; !ok {
					boxed[k] = k != "" && rng.IntN(4) == 0
				}
				if boxed[k] {
					require.NoError(t, tab.putBoxed([]byte(k), KindWindow, exp, value(k)))
				} else {
					require.NoError(t, tab.put([]byte(k), exp))
				}
				live[k] = exp
			case op < 12: // delete
				_, had := live[k]
				require.Equal(t, had, tab.remove([]byte(k)), "step %d: remove %q", step, k)
				if had {
					delete(live, k)
					gone[k] = true
				}
			case op < 14: // the sweeper
				now += gcra.Instant(rng.IntN(4))
				var n int
				cursor, _, n = tab.expire(cursor, rng.IntN(64), now)
				expired := 0
				for key, exp := range live {
					if tab.lookup([]byte(key)) < 0 {
						require.LessOrEqual(t, exp, now, "step %d: %q removed before it expired", step, key)
						delete(live, key)
						gone[key] = true
						expired++
					}
				}
				require.Equal(t, expired, n, "step %d: expire reports what it removed", step)
			case op < 15: // the persister and the feed take their changes
				tab.takeChanges(&tab.log, nil)
				tab.takeChanges(&tab.feed, nil)
			default: // a SCAN call, of 1 to 40 slots
				_, next, done := tab.scan(from, 1+rng.IntN(40), func(e *entry) {
					key := string(tab.keyOf(e))
					seen[key]++
					require.Equal(t, 1, seen[key], "step %d: %q reported twice in one scan", step, key)
					exp, ok := live[key]
					require.True(t, ok, "step %d: %q reported but absent", step, key)
					require.Equal(t, exp, e.exp, "step %d: %q reported with its expiry", step, key)
					if boxed[key] {
						require.Equal(t, value(key), tab.value(e), "step %d: %q's state", step, key)
					}
				})
				if !done {
					require.Greater(t, next, from, "step %d: a scan moves on", step)
					from = next
					break
				}
				for key := range atStart {
					if !gone[key] {
						require.Equal(t, 1, seen[key], "step %d: %q present through the scan, reported once", step, key)
					}
				}
				scans++
				if tab.resizes != resizes {
					resized++
				}
				begin()
			}
			if step%8 == 0 {
				tab.check(t)
			}
			require.Equal(t, len(live), tab.len(), "step %d", step)
		}
		require.Greater(t, scans, 3, "seed %d: full scans completed", seed)
		require.Positive(t, resized, "seed %d: some scan saw the table resized", seed)
		for k, exp := range live {
			p := tab.lookup([]byte(k))
			require.GreaterOrEqual(t, p, 0, "%q kept", k)
			require.Equal(t, exp, tab.slots[p].exp)
			if boxed[k] {
				require.Equal(t, value(k), tab.value(&tab.slots[p]))
			}
		}
		tab.clear()
		tab.check(t)
	}
}

// A key of 256 MiB or more is refused with ErrKeyTooLong, of either kind,
// and nothing is stored.
func TestTableRefusesAKeyTooLong(t *testing.T) {
	big := make([]byte, lenMask+1) // untouched pages: read as zeros, never resident
	tab := newTable(true)
	require.ErrorIs(t, tab.put(big, 42), ErrKeyTooLong)
	require.ErrorIs(t, tab.putBoxed(big, KindWindow, 42, []byte("v")), ErrKeyTooLong)
	require.Zero(t, tab.len())
	require.Zero(t, tab.log.pending(), "nothing recorded")
	tab.check(t)
	require.NoError(t, tab.put([]byte("short"), 42), "the table still takes keys")
	require.Equal(t, 1, tab.len())
}
