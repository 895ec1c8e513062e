package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"redcell/gcra"
)

// check verifies the table's invariants: every entry is found through its
// slot, every slot points at the entry whose key hashes to its tag, the
// arena's garbage is what no entry uses, and every dirty entry has a pending
// record at its current index.
func (t *table) check(tb testing.TB) {
	tb.Helper()
	if len(t.entries) == 0 {
		require.Empty(tb, t.slots, "an empty table holds no index")
		return
	}
	require.Equal(tb, 0, len(t.slots)&(len(t.slots)-1), "slots: a power of two")
	require.LessOrEqual(tb, len(t.entries)*4, len(t.slots)*3, "slots at most 3/4 full")
	used, liveArena := 0, 0
	for p, s := range t.slots {
		if s == 0 {
			continue
		}
		used++
		i := int(uint32(s)) - 1
		require.Less(tb, i, len(t.entries), "slot %d points past the entries", p)
		key := t.keyOf(&t.entries[i])
		require.Equal(tb, hashKey(key), uint32(s>>32), "slot %d: tag is the key's hash", p)
		got, pos := t.find(key, hashKey(key))
		require.Equal(tb, i, got, "key %q found at its entry", key)
		require.Equal(tb, p, pos, "key %q found through its slot", key)
	}
	require.Equal(tb, len(t.entries), used, "one slot per entry")
	pending := map[int]bool{}
	for _, c := range append(t.log.records, t.log.taking[t.log.takePos:]...) {
		if c&deletedBit == 0 {
			pending[int(c)] = true
		}
	}
	for i := range t.entries {
		e := &t.entries[i]
		if n := e.keyLen(); !e.inline() && !e.boxed() {
			liveArena += n
			off := int(binary.LittleEndian.Uint64(e.key[:]))
			require.LessOrEqual(tb, off+n, len(t.arena), "entry %d: key inside the arena", i)
		}
		if e.n&dirtyBit != 0 {
			require.True(tb, t.log.on, "dirty entries only when tracking")
			require.True(tb, pending[i], "dirty entry %d has a pending record", i)
		}
	}
	require.Equal(tb, len(t.arena)-liveArena, t.garbage, "garbage is the arena's unused bytes")
	liveVals := 0
	for i := range t.entries {
		if e := &t.entries[i]; e.boxed() {
			require.Positive(tb, e.valCap(), "entry %d: a live boxed entry has its blob", i)
			liveVals += e.blobSize()
			require.LessOrEqual(tb, int(e.valOff())+e.blobSize(), len(t.vals), "entry %d: blob inside the value arena", i)
			require.LessOrEqual(tb, len(t.value(e)), e.valCap(), "entry %d: value within its capacity", i)
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
			cursor, n = tab.expire(cursor, next()%32, now)
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
	for i := range n {
		tab.put(key(i), gcra.Instant(i+1))
	}
	tab.check(t)
	require.Equal(t, n, tab.len())
	require.Equal(t, 32768, len(tab.slots), "grown in powers of two, at most 3/4 full")
	if offHeap {
		require.True(t, tab.mem.slots.mapped && tab.mem.entries.mapped && tab.mem.arena.mapped,
			"large arrays live outside the Go heap")
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
	require.LessOrEqual(t, len(tab.slots), 2048)
	require.LessOrEqual(t, cap(tab.entries), 512)
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
	require.Zero(t, cap(tab.entries))
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

	// Six keys with the same home slot, the last one of an 8-slot index,
	// so their run wraps around; delete them in every position.
	var same []string
	for i := 0; len(same) < 6; i++ {
		k := fmt.Sprintf("h%d", i)
		if hashKey([]byte(k))&7 == 7 {
			same = append(same, k)
		}
	}
	for del := range same {
		tab := newTable(false)
		for i, k := range same {
			tab.put([]byte(k), gcra.Instant(i+1))
		}
		require.Len(t, tab.slots, 8)
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
	scanned := make([]string, tab.len())
	for i := range scanned {
		scanned[i] = tab.keyAt(i)
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
	off := binary.LittleEndian.Uint64(tab.entries[0].key[:])
	require.Equal(t, uint64(4<<30+100), off, "stored past 4 GiB")
	tat, _, ok := tab.get(key)
	require.True(t, ok)
	require.Equal(t, gcra.Instant(42), tat)
	require.Equal(t, string(key), tab.keyAt(0))
	tab.release()
}
