package resp

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Inline commands are split as Redis's sdssplitargs splits them.
func TestSplitInline(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{"   \t ", []string{}},
		{"PING", []string{"PING"}},
		{"  SET  k\tv  ", []string{"SET", "k", "v"}},
		{`ECHO "a b"`, []string{"ECHO", "a b"}},
		{`ECHO "\x41\x4a\n\r\t\b\a\"\\\q"`, []string{"ECHO", "AJ\n\r\t\b\a\"\\q"}},
		{`ECHO "\x4"`, []string{"ECHO", "x4"}},
		{`ECHO 'it\'s' '\n'`, []string{"ECHO", "it's", `\n`}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO a"b c"`, []string{"ECHO", "ab c"}}, // a quote opens mid-argument in Redis
		{"ECHO a\x00b c", []string{"ECHO", "a"}},  // NUL ends the line, as in C
		{"\xff\xfe\x01 junk", []string{"\xff\xfe\x01", "junk"}},
		{"ECHO a\vb", []string{"ECHO", "a\vb"}}, // \v separates only where blanks are skipped
		{`ECHO "a"b`, nil},
		{`ECHO 'a'b`, nil},
		{`ECHO "a`, nil},
		{`ECHO 'a`, nil},
		{"ECHO \"a\x00\"", nil},
		{`ECHO "a\`, nil},
	} {
		line := []byte(c.line)
		got, ok := splitArgs(line, nil)
		if c.want == nil {
			require.False(t, ok, "%q", c.line)
			continue
		}
		require.True(t, ok, "%q", c.line)
		gotStrings := []string{}
		for _, a := range got {
			gotStrings = append(gotStrings, string(a))
			require.True(t, len(a) == 0 || inside(a, line), "%q: argument %q is not a slice of the line", c.line, a)
		}
		require.Equal(t, c.want, gotStrings, "%q", c.line)
	}
}

// Arguments unescaped in place do not overwrite each other: each is capped
// at its end, so appending to one cannot reach the next.
func TestSplitInlineArgumentsAreCapped(t *testing.T) {
	args, ok := splitArgs([]byte(`"\x41\x42" "c d" e`), nil)
	require.True(t, ok)
	require.Equal(t, len(args[0]), cap(args[0]))
	_ = append(args[0], 'X', 'Y', 'Z')
	require.Equal(t, []string{"AB", "c d", "e"}, []string{string(args[0]), string(args[1]), string(args[2])})
}

// inside reports whether a is a slice of b.
func inside(a, b []byte) bool {
	for i := range b {
		if &b[i] == &a[0] {
			return true
		}
	}
	return false
}

// redcon's own inline parser allocated a copy of the rest of the line for
// each argument (1.1 GB for this line); the split is linear, and in place.
func TestManyInlineArgumentsAreCheap(t *testing.T) {
	line := strings.Repeat("a ", 32767) + "\r\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _ = readAll(NewReader(strings.NewReader(line), Limits{}), true)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated for one 64 KiB line (redcon: 1.1 GB)")
	allocs := testing.AllocsPerRun(10, func() {
		r := NewReader(strings.NewReader(line), Limits{})
		cmds, err := readAll(r, true)
		if len(cmds) != 1 || err == nil {
			t.Fatalf("%d commands, %v", len(cmds), err)
		}
	})
	// The reader, its buffer grown to hold the line, the argument slice grown
	// to 32767: some 30 allocations, none per argument.
	require.Less(t, allocs, 64.0, "allocations for one 64 KiB line of 32767 arguments")
	cmds, _ := readAll(NewReader(strings.NewReader(line), Limits{}), true)
	require.Len(t, cmds, 1)
	require.Equal(t, strings.Repeat("a\x00", 32766)+"a", cmds[0])
}
