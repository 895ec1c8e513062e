package resp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func multibulk(args ...string) string { return string(AppendCommand(nil, args...)) }

// peekAll calls PeekKeys before each Next over input read whole, and
// returns what it saw, each as next/after ("-" for nil).
func peekAll(t *testing.T, input string) []string {
	r := NewReader(strings.NewReader(input), Limits{})
	require.NoError(t, r.Fill())
	var seen []string
	for {
		next, after := r.PeekKeys()
		seen = append(seen, orDash(next)+"/"+orDash(after))
		args, err := r.Next(true)
		require.NoError(t, err)
		if args == nil {
			return seen
		}
	}
}

func orDash(b []byte) string {
	if b == nil {
		return "-"
	}
	return string(b)
}

// PeekKeys sees the keys of the next two commands, whatever they are, and
// nothing it cannot read cheaply: an inline command, a lone name, a long or
// empty argument, a command cut short.
func TestPeekKeys(t *testing.T) {
	th := func(key string) string { return multibulk("CL.THROTTLE", key, "10", "1", "60") }
	long := strings.Repeat("x", 100)
	cases := []struct {
		input string
		want  []string // before each Next
	}{
		{th("a") + th("b") + th("c"), []string{"a/b", "b/c", "c/-", "-/-"}},
		{multibulk("SET", "k", "v") + th("b"), []string{"k/b", "b/-", "-/-"}},
		{th("a") + "PING\r\n" + th("c"), []string{"a/-", "-/-", "c/-", "-/-"}},
		{th("a") + multibulk("PING") + th("c") + th("d"), []string{"a/-", "-/-", "c/d", "d/-", "-/-"}},
		{th("a") + th(long) + th("c"), []string{"a/-", "-/-", "c/-", "-/-"}}, // past a long key, the command after is not found
		{th("a") + "*0\r\n" + th("c"), []string{"a/-", "-/-", "-/-"}},        // "*0" is skipped by Next, not peeked through
		{th("a") + th("b")[:20], []string{"a/-", "-/-"}},
		{th("") + th("b"), []string{"-/-", "b/-", "-/-"}}, // nor past an empty argument ("$0")
	}
	for _, c := range cases {
		require.Equal(t, c.want, peekAll(t, c.input), "%q", c.input)
	}
}

// What PeekKeys remembers of the command after the next does not outlive a
// Fill, which may move the buffer: the keys are read again from where they
// are now.
func TestPeekKeysAfterFill(t *testing.T) {
	first := multibulk("GET", "a") + multibulk("GET", "b")
	r := NewReader(&splitReader{in: []byte(first + multibulk("GET", "c")), sizes: []int{len(first), 100}}, Limits{})
	require.NoError(t, r.Fill())
	next, after := r.PeekKeys()
	require.Equal(t, "a/b", orDash(next)+"/"+orDash(after))
	args, err := r.Next(true)
	require.NoError(t, err)
	require.Equal(t, "a", string(args[1]))
	args, err = r.Next(true)
	require.NoError(t, err)
	require.Equal(t, "b", string(args[1]))
	require.NoError(t, r.Fill())
	next, after = r.PeekKeys()
	require.Equal(t, "c/-", orDash(next)+"/"+orDash(after))
}

// Peeking allocates nothing: it runs once per command of a pipeline.
func TestPeekKeysAllocatesNothing(t *testing.T) {
	r := NewReader(&loopReader{batch: throttleBatch()}, Limits{})
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
		for {
			r.PeekKeys()
			if args, _ := r.Next(true); args == nil {
				return
			}
		}
	})
	require.Zero(t, allocs)
}
