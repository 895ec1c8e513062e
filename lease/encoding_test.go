package lease

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// The server's tokens (base64.RawURLEncoding of 8 random bytes) are kept as
// their 8 bytes and listed back exactly; a token that is not the canonical
// encoding of its bytes is kept as typed, and names another lease.
func TestServerTokensArePackedAndListedBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		var raw [8]byte
		binary.LittleEndian.PutUint64(raw[:], rng.Uint64())
		tok := []byte(base64.RawURLEncoding.EncodeToString(raw[:]))
		v, ok := pack(tok)
		require.True(t, ok, "%s", tok)
		require.Equal(t, binary.BigEndian.Uint64(raw[:]), v, "%s", tok)
		require.Equal(t, string(tok), string(unpack(v, nil)))
	}
	for _, tok := range []string{"AAAAAAAAAAB", "AAAAAAAAAA=", "AAAAAAAAAA", "AAAAAAAAAAAA", "AAAAAAAAAA+", "AAAA AAAAAA"} {
		_, ok := pack([]byte(tok))
		require.False(t, ok, "%q is not a canonical encoding of 8 bytes", tok)
	}

	var state []byte
	for i, tok := range []string{"AAAAAAAAAAA", "AAAAAAAAAAB", "Xx2bQ7rNw0M"} {
		res, next, _, ok := Acquire(spec(t, 5, 1000), state, []byte(tok), gcra.Instant(i)*ms, nil)
		require.True(t, ok && !res.Renewed, tok)
		state = append([]byte(nil), next...)
	}
	require.Equal(t, []string{"AAAAAAAAAAA", "AAAAAAAAAAB", "Xx2bQ7rNw0M"}, tokens(List(state, 5*ms, nil)))
	require.True(t, Valid(state))
	held, next, _ := Release(state, []byte("AAAAAAAAAAA"), 5*ms, nil)
	require.True(t, held)
	require.Equal(t, []string{"AAAAAAAAAAB", "Xx2bQ7rNw0M"}, tokens(List(next, 5*ms, nil)))

	// A packable token written unpacked (by something else) is no state a
	// decision writes: it would not be found by its token.
	unpacked := appendBase(nil, 0)
	unpacked = appendLease(unpacked, &tokenKey{tok: []byte("AAAAAAAAAAA")}, 1000)
	require.False(t, Valid(unpacked))
}

// A lease costs 12 bytes with the server's tokens, and the state 8 more.
func TestAStateOfServerTokensIsTwelveBytesALease(t *testing.T) {
	var state []byte
	buf := make([]byte, 11)
	for i := range 100 {
		binary.LittleEndian.PutUint64(buf[:8], golden*uint64(i))
		tok := []byte(base64.RawURLEncoding.EncodeToString(buf[:8]))
		_, next, _, ok := Acquire(spec(t, 100, 60000), state, tok, gcra.Instant(i)*ms, nil)
		require.True(t, ok)
		state = append(state[:0], next...)
	}
	require.Len(t, state, 8+100*12)
	named := encode(Held{[]byte("job-7"), 5 * ms})
	require.Len(t, named, 8+4+1+5, "a token of the client's own: a length byte and the token")
}

// A lease ends on the millisecond now+lease is in, on the grid of the
// key's base (set on the millisecond), as Redis's PEXPIRE counts: less
// than a millisecond sooner than asked at worst, and retry_after never
// more than the lease asked for.
func TestLeaseEndsAreOnTheMillisecond(t *testing.T) {
	us := gcra.Instant(time.Microsecond)
	_, state, exp, _ := Acquire(spec(t, 2, 100), nil, []byte("a"), 500*us, nil)
	require.Equal(t, 100*ms, exp)
	_, state, exp, _ = Acquire(spec(t, 2, 100), append([]byte(nil), state...), []byte("b"), 10*ms+300*us, nil)
	require.Equal(t, 110*ms, exp)
	require.Equal(t, []Held{{[]byte("a"), 100 * ms}, {[]byte("b"), 110 * ms}}, List(state, 20*ms, nil))
	res, _, _, ok := Acquire(spec(t, 2, 100), state, []byte("c"), 20*ms+700*us, nil)
	require.False(t, ok)
	require.Equal(t, time.Duration(100*ms-(20*ms+700*us)), res.RetryAfter)
	require.Equal(t, int64(80), res.Ints()[3], "ceil(79.3 ms)")
	_, _, exp, _ = Acquire(spec(t, 3, 100), state, []byte("c"), 20*ms, nil)
	require.Equal(t, 120*ms, exp, "on the millisecond: exact")

	// Just after it was granted, a lease's retry_after is the lease asked
	// for, never more, whatever the nanoseconds.
	for _, at := range []gcra.Instant{0, 1, 999 * us, 5*ms + 1} {
		_, state, _, _ := Acquire(spec(t, 1, 600), nil, []byte("a"), at, nil)
		res, _, _, _ := Acquire(spec(t, 1, 600), append([]byte(nil), state...), []byte("b"), at, nil)
		require.LessOrEqual(t, res.Ints()[3], int64(600), "granted at %d ns", at)
		require.Greater(t, res.RetryAfter, time.Duration(599*ms), "granted at %d ns", at)
	}
}

// A key renewed without a pause for longer than a base can count (31 bits
// of milliseconds, 24.8 days) keeps its leases exact: its base moves.
func TestAKeyRenewedForMonthsKeepsItsLeases(t *testing.T) {
	day := gcra.Instant(24 * time.Hour)
	var state []byte
	now := 7 * ms
	for _, tok := range []string{"a", "Xx2bQ7rNw0M", "c"} {
		_, next, _, ok := Acquire(spec(t, 3, int64(2*time.Duration(day)/time.Millisecond)), state, []byte(tok), now, nil)
		require.True(t, ok)
		state = append([]byte(nil), next...)
	}
	base0, _ := baseOf(state)
	for d := range gcra.Instant(90) {
		now = d*day + 7*ms + gcra.Instant(d)*ms
		for i, tok := range []string{"a", "Xx2bQ7rNw0M", "c"} {
			lease := 2*time.Duration(day) + time.Duration(i)*time.Millisecond
			renewed, next, exp := Renew(state, []byte(tok), lease, now, nil)
			require.True(t, renewed, "day %d %s", d, tok)
			state = append([]byte(nil), next...)
			require.Equal(t, now+gcra.Instant(lease), exp, "day %d %s", d, tok)
		}
		require.Equal(t, []Held{
			{[]byte("a"), now + 2*day}, {[]byte("Xx2bQ7rNw0M"), now + 2*day + ms}, {[]byte("c"), now + 2*day + 2*ms},
		}, List(state, now, nil), "day %d", d)
		res, _, _, ok := Acquire(spec(t, 3, 1000), state, []byte("d"), now, nil)
		require.False(t, ok, "day %d", d)
		require.Equal(t, time.Duration(2*day), res.RetryAfter, "day %d", d)
	}
	base, _ := baseOf(state)
	require.Greater(t, base, base0+60*day, "the base moved with the leases")
}

// A clock stepped back by months (a test's, or a wall clock set wrong and
// corrected) never panics or writes a state that does not decode; a
// lease that no longer fits beside the others is cut to the longest that
// does, and the key's expiry is still its latest lease's.
func TestAClockSteppedBackByMonths(t *testing.T) {
	day := gcra.Instant(24 * time.Hour)
	now := 100 * day
	_, state, _, _ := Acquire(spec(t, 3, int64(20*24*time.Hour/time.Millisecond)), nil, []byte("a"), now, nil)
	state = append([]byte(nil), state...)
	for _, back := range []gcra.Instant{day, 30 * day, 90 * day} {
		res, next, exp, ok := Acquire(spec(t, 3, 1000), state, []byte(fmt.Sprint("b", back/day)), now-back, nil)
		require.True(t, ok && !res.Limited, "%d days back", back/day)
		require.True(t, Valid(next), "%d days back: %x", back/day, next)
		list := List(next, now-back, nil)
		require.Len(t, list, 2)
		require.Equal(t, list[len(list)-1].Expiry, exp, "%d days back", back/day)
		require.Equal(t, now-back+1000*ms, list[0].Expiry, "%d days back: the new lease is exact", back/day)
	}
}

// golden spreads numbers over 64 bits: tokens unlike each other.
var golden uint64 = 0x9e3779b97f4a7c15

// BenchmarkReleaseServerToken is CL.RELEASE of a server's token held on a
// key of 100 leases.
func BenchmarkReleaseServerToken(b *testing.B) {
	s := Spec{Limit: 100, Lease: time.Hour}
	var state []byte
	raw := make([]byte, 8)
	for i := range 100 {
		binary.LittleEndian.PutUint64(raw, golden*uint64(i))
		_, next, _, _ := Acquire(s, state, []byte(base64.RawURLEncoding.EncodeToString(raw)), 0, nil)
		state = append(state[:0], next...)
	}
	binary.LittleEndian.PutUint64(raw, golden*50)
	tok := []byte(base64.RawURLEncoding.EncodeToString(raw))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		held, next, _ := Release(state, tok, 1, buf)
		if !held {
			b.Fatal("not held")
		}
		buf = next[:0]
	}
}
