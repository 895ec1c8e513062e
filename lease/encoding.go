package lease

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/redcell/redcell/gcra"
)

// A state is its base (8 bytes: a gcra.Instant, little-endian) and its
// leases, soonest end first. A lease is a word (4 bytes, little-endian):
// its end in milliseconds after the base (the low 31 bits) and whether its
// token is packed (the top bit); then its token. A packed token is one the
// server could have made (pack: 11 characters of base64url, the canonical
// encoding of 8 bytes) kept as those 8 bytes; any other is a length byte
// and the token.
//
// The base is set when a key's first lease is written, on the
// millisecond, and moves (rebase) only when a lease's end no longer fits
// 31 bits of milliseconds after it: a key renewed without a pause for
// weeks. Lease ends stay on the base's milliseconds, so the leases kept
// when a decision rewrites a state are copied as they are.
const (
	baseSize   = 8
	wordSize   = 4
	packedSize = 8
	packedBit  = 1 << 31
	maxOffset  = packedBit - 1
)

// TokenLen is the length of the tokens the server makes (AppendToken),
// which a state keeps packed.
const TokenLen = 11

// AppendToken appends to buf the token of 8 bytes (raw, big-endian) the
// server makes: base64url without padding, TokenLen characters, which a
// state keeps as the 8 bytes (pack).
func AppendToken(buf []byte, raw uint64) []byte { return unpack(raw, buf) }

const ms = gcra.Instant(time.Millisecond)

func baseOf(state []byte) (gcra.Instant, bool) {
	if len(state) < baseSize {
		return 0, false
	}
	return gcra.Instant(binary.LittleEndian.Uint64(state)), true
}

func putBase(state []byte, base gcra.Instant) {
	binary.LittleEndian.PutUint64(state, uint64(base))
}

func appendBase(buf []byte, base gcra.Instant) []byte {
	return binary.LittleEndian.AppendUint64(buf, uint64(base))
}

// floorMillisAfter and ceilMillisAfter place t on the millisecond grid of
// base: the greatest instant at or before t, the least at or after t, as a
// count of milliseconds from base.
func floorMillisAfter(base, t gcra.Instant) int64 {
	d := int64(t - base)
	q := d / int64(ms)
	if d%int64(ms) != 0 && d < 0 {
		q--
	}
	return q
}

func ceilMillisAfter(base, t gcra.Instant) int64 {
	return -floorMillisAfter(t, base)
}

// entry is one lease as stored: its end, its size and its token.
type entry struct {
	exp  gcra.Instant
	size int
	tokenKey
}

// decode reads the lease at state[p:] of a state whose base is base; ok is
// false when it does not decode (leaseAt).
func decode(state []byte, p int, base gcra.Instant) (e entry, ok bool) {
	w, n, ok := leaseAt(state, p)
	if !ok {
		return e, false
	}
	e.exp, e.size = base+gcra.Instant(w&maxOffset)*ms, n
	if w&packedBit != 0 {
		e.packed, e.raw = true, binary.LittleEndian.Uint64(state[p+wordSize:])
	} else {
		e.tok = state[p+wordSize+1 : p+n]
	}
	return e, true
}

// appendToken appends the token e names to buf.
func (e entry) appendToken(buf []byte) []byte {
	if e.packed {
		return unpack(e.raw, buf)
	}
	return append(buf, e.tok...)
}

// walk calls f with each lease of state in the order stored, until f
// returns false. A state that does not decode is ErrCorrupt (the leases
// before the damage were walked).
func walk(state []byte, f func(entry) bool) error {
	if len(state) == 0 {
		return nil
	}
	base, ok := baseOf(state)
	if !ok {
		return ErrCorrupt
	}
	for p := baseSize; p < len(state); {
		e, ok := decode(state, p, base)
		if !ok {
			return ErrCorrupt
		}
		if !f(e) {
			return nil
		}
		p += e.size
	}
	return nil
}

// pack and unpack are encoding/base64's RawURLEncoding.Strict() for exactly
// 8 bytes, written out: they run on every lease decision that names a
// token, and the package's Decode and AppendEncode measured 160-180
// instructions more a call (callgrind, BenchmarkReleaseServerToken 6,565 ->
// 6,748; BenchmarkAcquireReleaseHandler 7,512 -> 7,999). The tests check
// them against it (TestServerTokensArePackedAndListedBack).
//
// base64url's alphabet, and each character's value (0xff: none).
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var sextet = func() (m [256]byte) {
	for i := range m {
		m[i] = 0xff
	}
	for i := range len(alphabet) {
		m[alphabet[i]] = byte(i)
	}
	return m
}()

// pack returns the 8 bytes, as a big-endian number, that token encodes in
// base64url without padding, when it is their canonical encoding (the last
// character's 2 unused bits zero, as base64.RawURLEncoding writes them):
// then unpack gives the token back, so keeping the 8 bytes loses nothing.
func pack(token []byte) (uint64, bool) {
	if len(token) != TokenLen {
		return 0, false
	}
	var v uint64
	for _, c := range token[:TokenLen-1] {
		d := sextet[c]
		if d == 0xff {
			return 0, false
		}
		v = v<<6 | uint64(d)
	}
	d := sextet[token[TokenLen-1]]
	if d == 0xff || d&3 != 0 {
		return 0, false
	}
	return v<<4 | uint64(d>>2), true
}

// unpack appends to buf the token pack made v of.
func unpack(v uint64, buf []byte) []byte {
	var out [TokenLen]byte
	out[TokenLen-1] = alphabet[(v&0xf)<<2]
	v >>= 4
	for i := TokenLen - 2; i >= 0; i-- {
		out[i] = alphabet[v&0x3f]
		v >>= 6
	}
	return append(buf, out[:]...)
}

// tokenKey is a token as the state keeps it: packed, or its bytes.
type tokenKey struct {
	packed bool
	raw    uint64
	tok    []byte
}

func keyOf(token []byte) tokenKey {
	if v, ok := pack(token); ok {
		return tokenKey{packed: true, raw: v}
	}
	return tokenKey{tok: token}
}

// appendLease appends the lease of k ending off milliseconds after the
// state's base.
func appendLease(buf []byte, k *tokenKey, off int64) []byte {
	if k.packed {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(off)|packedBit)
		return binary.LittleEndian.AppendUint64(buf, k.raw)
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(off))
	buf = append(buf, byte(len(k.tok)))
	return append(buf, k.tok...)
}

// layout is what one pass over a state finds (scan): where its live
// leases are and the one a token names, so that a decision builds the new
// state from slices of the old one rather than lease by lease. A state's
// leases are kept in expiry order, so the expired ones are a prefix.
type layout struct {
	base     gcra.Instant // the state's; 0 for an empty state
	start    int          // the live leases are state[start:]
	held     int64
	earliest gcra.Instant // the earliest live lease's end; 0: none
	// at and size place the live lease the token names (size 0: none).
	at, size int
	// end is the instant asked for, down to the base's millisecond.
	end gcra.Instant
	// lastAt places the last lease and last is its end (0: none).
	lastAt int
	last   gcra.Instant
	// ordered is false for a state out of expiry order or that does not
	// decode (written by something else): rebuild, lease by lease, then.
	ordered bool
}

// lay scans state (scan); a state out of expiry order, or that does not
// decode, is first rewritten with its live leases that decode, in order
// (normalize). Only a state written by something else is: every decision
// keeps the order.
func lay(l *layout, state []byte, now gcra.Instant, k *tokenKey, end gcra.Instant) []byte {
	l.scan(state, now, k, end)
	if !l.ordered {
		state = normalize(state, now)
		l.scan(state, now, k, end)
	}
	return state
}

// scan lays out state at now for the token k and a lease ending at end.
// It is the loop of every decision, over every lease of the key, so it
// does the least a lease: the expired prefix is skipped without looking at
// tokens, it compares milliseconds after the base rather than instants,
// and what few decisions need is found afterwards: where a lease goes
// (insertAt: most go last), the end of the lease before the last
// (endBefore).
func (l *layout) scan(state []byte, now gcra.Instant, k *tokenKey, end gcra.Instant) {
	*l = layout{ordered: true}
	if len(state) == 0 {
		return
	}
	base, ok := baseOf(state)
	if !ok {
		l.ordered = false
		return
	}
	l.base = base
	nowOff := floorMillisAfter(base, now) // a lease ending at or before it has ended
	l.end = base + gcra.Instant(floorMillisAfter(base, end))*ms
	var prev int64
	p := baseSize
	for p < len(state) { // the expired prefix
		w, n, ok := leaseAt(state, p)
		off := int64(w & maxOffset)
		if ok && off > nowOff {
			break
		}
		if !ok || off < prev {
			l.ordered = false
			return
		}
		prev = off
		p += n
	}
	l.start = p
	// The live leases: one loop for each kind of token, so that each
	// compares only the leases of its kind, and as few values live as
	// can be kept in registers (the match's size, and the end of the
	// lease before the last, are read afterwards).
	var held int64
	at, lastAt := 0, 0 // 0: none (a lease starts after the base)
	if k.packed {
		raw := k.raw
		for p < len(state) {
			w, n, ok := leaseAt(state, p)
			if !ok || int64(w&maxOffset) < prev {
				l.ordered = false
				return
			}
			prev = int64(w & maxOffset)
			if w&packedBit != 0 && binary.LittleEndian.Uint64(state[p+wordSize:]) == raw {
				at = p
			}
			held++
			lastAt = p
			p += n
		}
	} else {
		tok := k.tok
		for p < len(state) {
			w, n, ok := leaseAt(state, p)
			if !ok || int64(w&maxOffset) < prev {
				l.ordered = false
				return
			}
			prev = int64(w & maxOffset)
			// The length, then the last byte: tokens of one length
			// (numbered ones) differ there most, and most leases are not
			// the token's, so most are told apart without a call to
			// compare.
			if n == wordSize+1+len(tok) && w&packedBit == 0 && state[p+n-1] == tok[len(tok)-1] &&
				string(state[p+wordSize+1:p+n]) == string(tok) {
				at = p
			}
			held++
			lastAt = p
			p += n
		}
	}
	l.held, l.lastAt = held, lastAt
	if at > 0 {
		_, l.size, _ = leaseAt(state, at)
		l.at = at
	}
	if held > 0 {
		l.earliest, l.last = l.endAt(state, l.start), l.endAt(state, lastAt)
	}
}

// leaseAt reads the lease at state[p:]: its word and its size; ok is
// false when it does not decode.
func leaseAt(state []byte, p int) (w uint32, n int, ok bool) {
	if p+wordSize >= len(state) {
		return 0, 0, false
	}
	w = binary.LittleEndian.Uint32(state[p:])
	n = wordSize + packedSize
	if w&packedBit == 0 {
		n = wordSize + 1 + int(state[p+wordSize])
		if n == wordSize+1 {
			return 0, 0, false
		}
	}
	return w, n, p+n <= len(state)
}

// endAt is the end of the lease at state[p:].
func (l *layout) endAt(state []byte, p int) gcra.Instant {
	return l.base + gcra.Instant(binary.LittleEndian.Uint32(state[p:])&maxOffset)*ms
}

// insertAt is where a lease ending at l.end goes: before the first live
// lease that ends after it. Most go last (a lease asked now ends after
// those asked before, when they are as long), found without a walk.
func (l *layout) insertAt(state []byte) int {
	if l.held == 0 || l.last <= l.end {
		return len(state)
	}
	p := l.start
	for l.endAt(state, p) <= l.end {
		_, n, _ := leaseAt(state, p) // scan has read it
		p += n
	}
	return p
}

// endBefore is the end of the live lease before the one at state[at:] (0:
// none): the key's expiry once its last lease is dropped.
func (l *layout) endBefore(state []byte, at int) gcra.Instant {
	before := 0
	for p := l.start; p < at; {
		_, n, _ := leaseAt(state, p) // scan has read it
		before, p = p, p+n
	}
	if before == 0 {
		return 0
	}
	return l.endAt(state, before)
}

// splice appends to buf the new state: the live leases of state (l.start
// on) without the one at l.at when drop, with k's lease ending at end
// (down to the base's millisecond) when k is not nil; and returns
// it with the key's new expiry (its latest lease's end; 0 for none).
func splice(buf, state []byte, l *layout, drop bool, k *tokenKey, end, now gcra.Instant) ([]byte, gcra.Instant) {
	buf = buf[:0]
	kept := l.held
	if drop {
		kept--
	}
	if kept == 0 { // nothing kept: a new base, on the millisecond
		if k == nil {
			return buf, 0
		}
		base := millisOf(now)
		off := floorMillisAfter(base, end)
		return appendLease(appendBase(buf, base), k, off), base + gcra.Instant(off)*ms
	}
	off := int64(0)
	if k != nil {
		off = int64(l.end-l.base) / int64(ms)
		if off < 0 || off > maxOffset {
			return rebase(buf, state, l, drop, k, now)
		}
	}
	buf = append(buf, state[:baseSize]...)
	// keep appends state[from:to] without the dropped lease.
	keep := func(from, to int) {
		if drop && l.at >= from && l.at < to {
			buf = append(buf, state[from:l.at]...)
			buf = append(buf, state[l.at+l.size:to]...)
			return
		}
		buf = append(buf, state[from:to]...)
	}
	keyExp := l.last
	if drop && l.at == l.lastAt {
		keyExp = l.endBefore(state, l.at)
	}
	if k == nil {
		keep(l.start, len(state))
		return buf, keyExp
	}
	ins := l.insertAt(state)
	keep(l.start, ins)
	buf = appendLease(buf, k, off)
	keep(ins, len(state))
	return buf, max(keyExp, l.end)
}

// rebase is splice when k's lease ends too far from the state's base (a
// key renewed for weeks, or a clock stepped back): the base moves to now's
// millisecond on its grid, and the leases kept are written again from it
// (onBase). It allocates: it runs once in weeks a key, if ever.
func rebase(buf, state []byte, l *layout, drop bool, k *tokenKey, now gcra.Instant) ([]byte, gcra.Instant) {
	var kept []entry
	inserted := false
	for p := l.start; p < len(state); {
		e, _ := decode(state, p, l.base) // scan has read it
		if !inserted && e.exp > l.end {
			kept = append(kept, entry{exp: l.end, tokenKey: *k})
			inserted = true
		}
		if !drop || p != l.at {
			kept = append(kept, e)
		}
		p += e.size
	}
	if !inserted {
		kept = append(kept, entry{exp: l.end, tokenKey: *k})
	}
	return onBase(buf[:0], l.base+gcra.Instant(floorMillisAfter(l.base, now))*ms, kept)
}

// normalize returns state's live leases that decode, in expiry order, in a
// new slice, on a base at now's millisecond (onBase).
func normalize(state []byte, now gcra.Instant) []byte {
	var held []entry
	_ = walk(state, func(e entry) bool {
		if e.exp > now {
			if !e.packed {
				e.tokenKey = keyOf(e.tok) // a packable token written unpacked
			}
			held = append(held, e)
		}
		return true
	})
	slices.SortStableFunc(held, func(a, b entry) int { return cmp.Compare(a.exp, b.exp) })
	if len(held) == 0 {
		return nil
	}
	out, _ := onBase(nil, millisOf(now), held)
	return out
}

// onBase appends to buf a state of base and leases (in expiry order),
// and returns it with its last lease's end. An end off the base's grid
// (written by something else) moves up to it, so that a lease live now
// stays live; one too far to count from the base (only after a clock
// stepped back by weeks) is cut to the farthest that is not.
func onBase(buf []byte, base gcra.Instant, leases []entry) ([]byte, gcra.Instant) {
	buf = appendBase(buf, base)
	var last gcra.Instant
	for i := range leases {
		off := min(max(ceilMillisAfter(base, leases[i].exp), 0), maxOffset)
		buf = appendLease(buf, &leases[i].tokenKey, off)
		last = base + gcra.Instant(off)*ms
	}
	return buf, last
}

// millisOf is the millisecond t is in: a new state's base.
func millisOf(t gcra.Instant) gcra.Instant {
	return gcra.Instant(floorMillisAfter(0, t)) * ms
}
