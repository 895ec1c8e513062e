package statecodec

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// windowState is a real window's state: limit 10 in 60 s at precision,
// after q taken at now.
func windowState(precision, q int64) []byte {
	spec, err := window.NewSpec(10, 60, q, precision, window.DefaultLogMax)
	if err != nil {
		panic(err)
	}
	_, state, _, _ := window.Decide(spec, nil, gcra.InstantOf(now), nil)
	return state
}

// The strings a Redis replica holds, byte for byte: a TAT in decimal, as
// redis-cell keeps it, and a window boxed behind its magic, kind and
// big-endian expiry.
func TestEncodeIsTheStringAReplicaHolds(t *testing.T) {
	tat := gcra.Instant(1764590000123456789)
	require.Equal(t, "1764590000123456789", string(Encode(storage.Change{Key: "k", TAT: tat})))
	state := windowState(0, 3)
	boxed := Encode(storage.Change{Key: "w", TAT: tat, Kind: storage.KindWindow, Value: string(state)})
	want := append([]byte("\x00redcell1\x01\x18\x7d\x15\x41\x83\x90\xad\x15"), state...)
	require.Equal(t, want, boxed)
	require.Equal(t, "x1764590000123456789", string(Append([]byte("x"), storage.Change{TAT: tat})))

	for _, c := range []struct {
		value string
		want  string
	}{
		{"", `not a redcell state: ""`},
		{"0123", `not a redcell state: "0123"`},
		{"-5", `not a redcell state: "-5"`},
		{"9223372036854775808", `not a redcell state: "9223372036854775808"`},
		{boxMagic + "\x02", "not a redcell state: a boxed state of 10 bytes"},
		{boxMagic + "\x07\x00\x00\x00\x00\x00\x00\x00\x01", "not a redcell state: kind 7"},
		{boxMagic + "\x01\x00\x00\x00\x00\x00\x00\x00\x00", "not a redcell state: expiry 0"},
		{boxMagic + "\x02\x00\x00\x00\x00\x00\x00\x00\x01\x05", "not a redcell state: leases that do not decode"},
		{boxMagic + "\x02\x00\x00\x00\x00\x00\x00\x00\x01" + "\x05\x00\x00\x00\x00\x00\x00\x00\x01t" + "\x09\x00\x00\x00\x00\x00\x00\x00\x01t",
			"not a redcell state: leases that do not decode"}, // a token twice
	} {
		_, _, _, err := Decode([]byte(c.value))
		require.ErrorIs(t, err, ErrNotAState, "%q", c.value)
		require.EqualError(t, err, c.want, "%q", c.value)
	}
}

func checkDecoded(t *testing.T, ch storage.Change, value []byte) {
	t.Helper()
	kind, exp, state, err := Decode(value)
	if err != nil || kind != ch.Kind || exp != ch.TAT || string(state) != ch.Value {
		t.Fatalf("%+v decoded as kind %d, %d, %q, %v", ch, kind, exp, state, err)
	}
}

// Decode on arbitrary bytes never panics, and what it accepts is a state
// with an expiry ahead of the epoch that encodes back to an equal one: a
// boxed value to the very bytes.
func FuzzDecodeValue(f *testing.F) {
	f.Add([]byte("1764590000000000000"))
	f.Add([]byte("+5"))
	f.Add([]byte("-5"))
	f.Add(Encode(storage.Change{Key: "w", TAT: 1, Kind: storage.KindWindow, Value: string(windowState(0, 1))}))
	f.Add([]byte(boxMagic + "\x02"))
	f.Add(Encode(storage.Change{Key: "l", TAT: 9, Kind: storage.KindLeases, Value: "\x09\x00\x00\x00\x00\x00\x00\x00\x01t"}))
	f.Add([]byte(boxMagic + "\x07\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte(boxMagic + "\x02\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, value []byte) {
		kind, exp, state, err := Decode(value)
		if err != nil {
			if !errors.Is(err, ErrNotAState) {
				t.Fatalf("%q: %v, not ErrNotAState", value, err)
			}
			return
		}
		if exp <= 0 {
			t.Fatalf("%q: expiry %d accepted", value, exp)
		}
		again := Encode(storage.Change{TAT: exp, Kind: kind, Value: string(state)})
		switch kind {
		case storage.KindTAT:
			if len(state) != 0 {
				t.Fatalf("%q: a TAT with a state %q", value, state)
			}
			checkDecoded(t, storage.Change{TAT: exp, Kind: kind}, again)
		case storage.KindWindow, storage.KindLeases:
			if !bytes.Equal(again, value) {
				t.Fatalf("%q encodes back as %q", value, again)
			}
		default:
			t.Fatalf("%q: kind %d accepted", value, kind)
		}
	})
}
