package lease

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// encode is a state of leases in the order given, on a base of 0: what
// something other than a decision may have written.
func encode(leases ...Held) []byte {
	out := appendBase(nil, 0)
	for _, h := range leases {
		k := keyOf(h.Token)
		out = appendLease(out, &k, int64(h.Expiry/ms))
	}
	return out
}

func spec(t *testing.T, limit, leaseMS int64) Spec {
	t.Helper()
	s, err := NewSpec(limit, leaseMS)
	require.NoError(t, err)
	return s
}

func tokens(held []Held) []string {
	var out []string
	for _, h := range held {
		out = append(out, string(h.Token))
	}
	return out
}

func TestAcquireReleaseRenewOnOneKey(t *testing.T) {
	var state []byte
	store := func(next []byte, ok bool) {
		if ok {
			state = append([]byte(nil), next...)
		}
	}
	s := spec(t, 2, 1000)
	res, next, exp, ok := Acquire(s, state, []byte("a"), 0, nil)
	require.Equal(t, Result{Limit: 2, Remaining: 1, RetryAfter: -1}, res)
	require.Equal(t, 1000*ms, exp)
	store(next, ok)

	res, next, exp, ok = Acquire(s, state, []byte("b"), 100*ms, nil)
	require.Equal(t, Result{Limit: 2, Remaining: 0, RetryAfter: -1}, res)
	require.Equal(t, 1100*ms, exp, "the key lives as long as its latest lease")
	store(next, ok)

	res, _, _, ok = Acquire(s, state, []byte("c"), 200*ms, nil)
	require.False(t, ok, "a refusal stores nothing")
	require.Equal(t, Result{Limited: true, Limit: 2, RetryAfter: 800 * time.Millisecond}, res)
	require.Equal(t, [4]int64{1, 2, 0, 800}, res.Ints())

	// The same token again renews, takes no second slot.
	res, next, _, ok = Acquire(s, state, []byte("a"), 300*ms, nil)
	require.Equal(t, Result{Limit: 2, Remaining: 0, RetryAfter: -1, Renewed: true}, res)
	store(next, ok)
	require.Equal(t, []string{"b", "a"}, tokens(List(state, 300*ms, nil)), "soonest expiry first")

	renewed, next, exp := Renew(state, []byte("b"), 5*time.Second, 400*ms, nil)
	require.True(t, renewed)
	require.Equal(t, 5400*ms, exp)
	store(next, true)
	require.Equal(t, []string{"a", "b"}, tokens(List(state, 400*ms, nil)))

	held, next, _ := Release(state, []byte("a"), 500*ms, nil)
	require.True(t, held)
	store(next, true)
	held, _, _ = Release(state, []byte("a"), 500*ms, nil)
	require.False(t, held, "released once")

	// b's lease ends at 5.4 s: after it, nothing renews it back.
	renewed, _, _ = Renew(state, []byte("b"), time.Second, 5400*ms, nil)
	require.False(t, renewed, "an ended lease stays ended")
	held, next, exp = Release(state, []byte("b"), 5399*ms, nil)
	require.True(t, held)
	require.Empty(t, next, "no lease left: the key goes")
	require.Zero(t, exp)
}

func TestLimitZeroAndLoweredLimit(t *testing.T) {
	res, _, _, ok := Acquire(spec(t, 0, 10), nil, []byte("a"), 0, nil)
	require.False(t, ok)
	require.Equal(t, [4]int64{1, 0, 0, -1}, res.Ints(), "nothing held: no expiry frees a slot")

	var state []byte
	for _, tok := range []string{"a", "b", "c"} {
		_, next, _, ok := Acquire(spec(t, 3, 1000), state, []byte(tok), 0, nil)
		require.True(t, ok)
		state = append([]byte(nil), next...)
	}
	// Lowered to 1: three holders keep theirs; no new one until two end.
	res, _, _, ok = Acquire(spec(t, 1, 1000), state, []byte("d"), 10*ms, nil)
	require.False(t, ok)
	require.Equal(t, Result{Limited: true, Limit: 1, RetryAfter: 990 * time.Millisecond}, res)
	res, _, _, ok = Acquire(spec(t, 1, 1000), state, []byte("b"), 10*ms, nil)
	require.True(t, ok, "a holder renews above the lowered limit")
	require.Equal(t, Result{Limit: 1, Remaining: 0, RetryAfter: -1, Renewed: true}, res)
}

func TestNewSpecAndTokenBounds(t *testing.T) {
	for _, c := range []struct {
		limit, lease int64
		err          error
	}{
		{-1, 1, ErrLimit}, {MaxLimit + 1, 1, ErrLimit}, {1, 0, ErrLease}, {1, -5, ErrLease},
		{1, int64(MaxLease/time.Millisecond) + 1, ErrLeaseTooLong},
	} {
		_, err := NewSpec(c.limit, c.lease)
		require.ErrorIs(t, err, c.err, "%d %d", c.limit, c.lease)
	}
	require.ErrorIs(t, CheckToken(nil), ErrToken)
	require.ErrorIs(t, CheckToken(make([]byte, MaxToken+1)), ErrToken)
	require.NoError(t, CheckToken(make([]byte, MaxToken)))
}

func TestCorruptStatesHoldNothingAndNeverPanic(t *testing.T) {
	good, _, _, _ := Acquire(spec(t, 3, 1000), nil, []byte("tok"), 0, nil)
	_ = good
	_, state, _, _ := Acquire(spec(t, 3, 1000), nil, []byte("tok"), 0, nil)
	require.True(t, Valid(state))
	for cut := 1; cut < len(state); cut++ {
		require.False(t, Valid(state[:cut]), "cut at %d", cut)
		require.NotPanics(t, func() {
			Acquire(spec(t, 3, 1000), state[:cut], []byte("x"), 0, nil)
			List(state[:cut], 0, nil)
			Shift(state[:cut], time.Second, nil)
		})
	}
	require.False(t, Valid(nil))
	twice := encode(Held{[]byte("t"), 5 * ms}, Held{[]byte("t"), 9 * ms})
	require.False(t, Valid(twice), "a token twice: no state a decision writes")
}

func TestShiftMovesEveryExpiry(t *testing.T) {
	var state []byte
	for i, tok := range []string{"a", "bb", "ccc"} {
		_, next, _, _ := Acquire(spec(t, 3, 1000), state, []byte(tok), gcra.Instant(i)*ms, nil)
		state = append([]byte(nil), next...)
	}
	shifted := Shift(state, -time.Hour, nil)
	now := -gcra.Instant(time.Hour)
	require.Equal(t, []Held{
		{[]byte("a"), now + 1000*ms}, {[]byte("bb"), now + 1001*ms}, {[]byte("ccc"), now + 1002*ms},
	}, List(shifted, now, nil))
}

// TestRandomSequencesMatchAModel runs random acquires, renews, releases and
// clock steps on one key, several tokens and limits that change, against a
// model (a map of token to expiry): every answer is the model's, and a
// grant never makes more than limit leases live at once.
func TestRandomSequencesMatchAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Tokens of every kind: the server's (packed), one that is not the
	// canonical encoding of its bytes (kept as typed), short and long.
	pool := []string{"t0", "t1", "t2", "AAAAAAAAAAA", "AAAAAAAAAAB", "Xx2bQ7rNw0M", "-_-_-_-_-_-", strings.Repeat("z", MaxToken)}
	// A lease ends on the millisecond now+d is in: the clock below steps
	// by nanoseconds too.
	endOf := func(t gcra.Instant) gcra.Instant { return t / ms * ms }
	for round := range 200 {
		var state []byte
		model := map[string]gcra.Instant{}
		var now gcra.Instant
		latest := func() gcra.Instant {
			var m gcra.Instant
			for _, e := range model {
				if e > now {
					m = max(m, e)
				}
			}
			return m
		}
		live := func() int64 {
			n := int64(0)
			for _, e := range model {
				if e > now {
					n++
				}
			}
			return n
		}
		for step := range 300 {
			tok := pool[rng.IntN(len(pool))]
			at := fmt.Sprintf("round %d step %d", round, step)
			switch rng.IntN(5) {
			case 0, 1:
				limit := int64(rng.IntN(5))
				d := int64(1 + rng.IntN(500))
				before := live()
				res, next, exp, ok := Acquire(spec(t, limit, d), state, []byte(tok), now, nil)
				renew := model[tok] > now
				switch {
				case renew:
					require.True(t, ok && res.Renewed, at)
				case before < limit:
					require.True(t, ok && !res.Limited && !res.Renewed, at)
					require.LessOrEqual(t, before+1, limit, at)
				default:
					require.True(t, !ok && res.Limited, at)
					earliest := gcra.Instant(-1)
					for _, e := range model {
						if e > now && (earliest < 0 || e < earliest) {
							earliest = e
						}
					}
					want := time.Duration(-1)
					if earliest >= 0 {
						want = time.Duration(earliest - now)
					}
					require.Equal(t, want, res.RetryAfter, at)
				}
				if ok {
					model[tok] = endOf(now + gcra.Instant(d)*ms)
					state = append([]byte(nil), next...)
					require.Equal(t, latest(), exp, "the key lives as long as its latest lease: %s", at)
					require.Equal(t, max(0, limit-live()), res.Remaining, at)
				}
			case 2:
				held, next, exp := Release(state, []byte(tok), now, nil)
				require.Equal(t, model[tok] > now, held, at)
				if held {
					delete(model, tok)
					state = append([]byte(nil), next...)
					require.Equal(t, latest(), exp, at)
				}
			case 3:
				d := time.Duration(1+rng.IntN(500)) * time.Millisecond
				renewed, next, exp := Renew(state, []byte(tok), d, now, nil)
				require.Equal(t, model[tok] > now, renewed, at)
				if renewed {
					model[tok] = endOf(now + gcra.Instant(d))
					state = append([]byte(nil), next...)
					require.Equal(t, latest(), exp, at)
				}
			case 4:
				now += gcra.Instant(rng.IntN(200))*ms + gcra.Instant(rng.IntN(3))*gcra.Instant(rng.IntN(int(ms)))
			}
			var want []string
			for k, e := range model {
				if e > now {
					want = append(want, k)
				}
			}
			list := List(state, now, nil)
			require.True(t, slices.IsSortedFunc(list, func(a, b Held) int { return int(a.Expiry - b.Expiry) }), "soonest first: %s", at)
			got := tokens(list)
			slices.Sort(want)
			listed := slices.Clone(got)
			slices.Sort(listed)
			require.Equal(t, want, listed, at)
		}
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	s := Spec{Limit: 16, Lease: time.Second}
	var state, buf, buf2 []byte
	for i := range 15 {
		_, next, _, _ := Acquire(s, state, fmt.Appendf(nil, "holder%02d", i), 0, buf)
		state = append(state[:0], next...)
	}
	tok := []byte("tok")
	b.ReportAllocs()
	for b.Loop() {
		_, next, _, _ := Acquire(s, state, tok, 1, buf)
		buf = next[:0]
		_, next, _ = Release(next, tok, 1, buf2)
		buf2 = next[:0]
	}
}

// A state out of expiry order (written by something else: a decision keeps
// the order) is decided as the leases it holds, and written back in order.
func TestAStateOutOfOrderIsPutInOrder(t *testing.T) {
	state := encode(Held{[]byte("late"), 900 * ms}, Held{[]byte("gone"), 10 * ms}, Held{[]byte("early"), 500 * ms})
	require.True(t, Valid(state))
	res, next, exp, ok := Acquire(spec(t, 3, 1000), state, []byte("new"), 100*ms, nil)
	require.True(t, ok)
	require.Equal(t, int64(0), res.Remaining, "two live and the new one")
	require.Equal(t, 1100*ms, exp)
	require.Equal(t, []string{"early", "late", "new"}, tokens(List(next, 100*ms, nil)))
	held, next, exp := Release(state, []byte("late"), 100*ms, nil)
	require.True(t, held)
	require.Equal(t, 500*ms, exp)
	require.Equal(t, []string{"early"}, tokens(List(next, 100*ms, nil)))
}

// FuzzDecisions: whatever bytes a key holds, a decision never panics; on a
// state a key can hold (Valid: what statecodec lets in, out of order or
// not), every state it stores decodes, is in expiry order and holds each
// token once.
func FuzzDecisions(f *testing.F) {
	_, good, _, _ := Acquire(Spec{Limit: 3, Lease: time.Second}, nil, []byte("a"), 0, nil)
	f.Add(good, []byte("a"), uint8(0), int64(5), int64(100))
	f.Add([]byte{1, 2, 3}, []byte("b"), uint8(1), int64(0), int64(1))
	f.Add(encode(Held{[]byte("x"), 900 * ms}, Held{[]byte("y"), 10 * ms}), []byte("y"), uint8(2), int64(2), int64(50))
	f.Fuzz(func(t *testing.T, state, token []byte, op uint8, limit, at int64) {
		if CheckToken(token) != nil {
			return
		}
		valid := len(state) == 0 || Valid(state)
		now := gcra.Instant(at) * ms
		var next []byte
		var stored bool
		switch op % 3 {
		case 0:
			s, err := NewSpec(limit%MaxLimit, 1+at%1000)
			if err != nil {
				return
			}
			_, next, _, stored = Acquire(s, state, token, now, nil)
		case 1:
			stored, next, _ = Release(state, token, now, nil)
		case 2:
			stored, next, _ = Renew(state, token, time.Second, now, nil)
		}
		if !stored || len(next) == 0 || !valid {
			return
		}
		if !Valid(next) {
			t.Fatalf("stored a state that does not decode: %x", next)
		}
		held := List(next, gcra.Instant(math.MinInt64), nil)
		seen := map[string]bool{}
		for i, h := range held {
			if i > 0 && h.Expiry < held[i-1].Expiry {
				t.Fatalf("out of order: %v", held)
			}
			if seen[string(h.Token)] {
				t.Fatalf("token %q twice: %v", h.Token, held)
			}
			seen[string(h.Token)] = true
		}
	})
}

// BenchmarkReleaseNotHeld is CL.RELEASE of a token not held on a key of
// 100 leases whose tokens have its length (bench/leases.sh's numbered
// tokens): a scan that compares each.
func BenchmarkReleaseNotHeld(b *testing.B) {
	s := Spec{Limit: 100, Lease: time.Hour}
	var state []byte
	for i := range 100 {
		_, next, _, _ := Acquire(s, state, fmt.Appendf(nil, "%012d", i*7), 0, nil)
		state = append(state[:0], next...)
	}
	tok := fmt.Appendf(nil, "%012d", 3)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		held, _, _ := Release(state, tok, 1, buf)
		if held {
			b.Fatal("held")
		}
	}
}
