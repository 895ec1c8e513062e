package engine

import (
	"math"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// A decision's reply is encoded at once (appendInts), byte for byte what
// redcon's writers encode element by element, at every magnitude and sign.
func TestAppendIntsIsRedcons(t *testing.T) {
	values := []int64{0, 1, 2, 9, 10, 99, 100, 101, 998, 999, 1000, 12345, 1<<31 - 1, 1 << 32, math.MaxInt64, math.MaxInt64 - 1}
	for p := int64(10); p <= 1e18; p *= 10 {
		values = append(values, p-1, p, p+1) // each count of digits, at its edges
	}
	for _, n := range values[:len(values):len(values)] {
		values = append(values, -n)
	}
	values = append(values, math.MinInt64, math.MinInt64+1)
	for i := range values {
		var v [5]int64
		for j := range v {
			v[j] = values[(i+j)%len(values)]
		}
		want := redcon.AppendArray(nil, 5)
		for _, n := range v {
			want = redcon.AppendInt(want, n)
		}
		require.Equal(t, string(want), string(AppendInts([]byte("x"), v))[1:], "%v", v)
	}
	out := make([]byte, 0, 256)
	require.Zero(t, testing.AllocsPerRun(10, func() {
		AppendInts(out, [5]int64{math.MinInt64, math.MaxInt64, 1000, -2, 7})
	}), "numbers past the table do not allocate either")
}

// Conn.WriteInts is held to the output limit as the writers it replaces:
// a reply that would pass MaxOutput is dropped and the connection closed,
// one that fits exactly is queued.
func TestWriteIntsKeepsTheOutputLimit(t *testing.T) {
	v := [5]int64{0, 101, 100, -1, 1}
	size := len(AppendInts(nil, v))
	for _, c := range []struct {
		queued int
		closed bool
	}{{100 - size, false}, {100 - size + 1, true}} {
		client, server := net.Pipe()
		t.Cleanup(func() { _ = client.Close() })
		cn := newConn(New(Config{Limits: Limits{MaxOutput: 100}}, nil), server)
		cn.out = append(cn.out, make([]byte, c.queued)...)
		cn.WriteInts(v)
		require.Equal(t, c.closed, cn.closed, "%d bytes queued before", c.queued)
		if !c.closed {
			require.Equal(t, string(AppendInts(nil, v)), string(cn.out[c.queued:]))
		}
	}
}
