package server

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// STRLEN, OBJECT and MEMORY describe a key's value, the TAT, as Redis would
// describe the same integer string, and answer Redis's errors.
func TestObjectStrlenMemory(t *testing.T) {
	tc := newTestClient(t, Config{})
	long := strings.Repeat("L", 30)
	tat := strconv.FormatInt(t0.Add(10*1e9).UnixNano(), 10) // 19 digits
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"STRLEN", "k"}, Want: ":0\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k"}, Want: "$-1\r\n"},
		{Args: []string{"OBJECT", "ENCODING", "k"}, Want: "$-1\r\n"},
		{Args: []string{"OBJECT", "FREQ", "k"}, Want: "$-1\r\n"},
		{Args: []string{"OBJECT", "IDLETIME", "k"}, Want: "$-1\r\n"},
		{Args: []string{"OBJECT", "REFCOUNT", "k"}, Want: "$-1\r\n"},

		{Args: []string{"CL.THROTTLE", "k", "4", "1", "10"}, Want: testkit.Ints(0, 5, 4, -1, 10)},
		{Args: []string{"GET", "k"}, Want: "$19\r\n" + tat + "\r\n"},
		{Args: []string{"STRLEN", "k"}, Want: ":19\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k"}, Want: ":256\r\n"}, // alone in its shard: a table of 8 slots of 32 bytes
		{Args: []string{"memory", "usage", "k", "SAMPLES", "0"}, Want: ":256\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k", "samples", "5", "SAMPLES", "7"}, Want: ":256\r\n"},
		{Args: []string{"OBJECT", "ENCODING", "k"}, Want: "$3\r\nint\r\n"},
		{Args: []string{"OBJECT", "REFCOUNT", "k"}, Want: ":1\r\n"},
		{Args: []string{"OBJECT", "IDLETIME", "k"}, Want: ":0\r\n"},
		{Args: []string{"OBJECT", "FREQ", "k"}, Want: errReply(errNoLFU)},
		{Args: []string{"DEL", "k"}, Want: ":1\r\n"},
		{Args: []string{"CL.THROTTLE", long, "4", "1", "10"}, Want: testkit.Ints(0, 5, 4, -1, 10)},
		{Args: []string{"MEMORY", "USAGE", long}, Want: ":286\r\n"}, // and its 30 bytes in the arena

		{Args: []string{"MEMORY", "USAGE", "k", "SAMPLES"}, Want: "-ERR syntax error\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k", "SAMPLES", "-1"}, Want: "-ERR syntax error\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k", "SAMPLES", "x"}, Want: "-ERR value is not an integer or out of range\r\n"},
		{Args: []string{"MEMORY", "USAGE", "k", "COUNT", "1"}, Want: "-ERR syntax error\r\n"},
		{Args: []string{"MEMORY", "USAGE"}, Want: "-ERR wrong number of arguments for 'memory|usage' command\r\n"},
		{Args: []string{"MEMORY", "HELP", "x"}, Want: "-ERR wrong number of arguments for 'memory|help' command\r\n"},
		{Args: []string{"MEMORY", "STATS"}, Want: "-ERR unknown subcommand 'STATS'. Try MEMORY HELP.\r\n"},
		{Args: []string{"OBJECT", "ENCODING"}, Want: "-ERR wrong number of arguments for 'object|encoding' command\r\n"},
		{Args: []string{"OBJECT", "REFCOUNT", "a", "b"}, Want: "-ERR wrong number of arguments for 'object|refcount' command\r\n"},
		{Args: []string{"OBJECT", "HELP", "x"}, Want: "-ERR wrong number of arguments for 'object|help' command\r\n"},
		{Args: []string{"OBJECT", "FROB", "k"}, Want: "-ERR unknown subcommand 'FROB'. Try OBJECT HELP.\r\n"},
		{Args: []string{"STRLEN"}, Want: "-ERR wrong number of arguments for 'strlen' command\r\n"},
		{Args: []string{"OBJECT"}, Want: "-ERR wrong number of arguments for 'object' command\r\n"},

		{Args: []string{"OBJECT", "HELP"}, Want: testkit.Simples(objectHelp...)},
		{Args: []string{"MEMORY", "HELP"}, Want: testkit.Simples(memoryHelp...)},
	}, tc.do, nil)
	if got := tc.c.lastCmd.Load().name; got != "memory|help" {
		t.Errorf("CLIENT LIST cmd= after MEMORY HELP is %q, want memory|help", got)
	}
	if got, want := objectHelp[0], "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"; got != want {
		t.Errorf("OBJECT HELP's first line %q", got)
	}
}

// MEMORY PURGE answers OK, as Redis's, and gives free memory back to the
// system: the heap a dropped 64 MiB buffer took is released.
func TestMemoryPurgeReleasesFreePages(t *testing.T) {
	tc := newTestClient(t, Config{})
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i) // touched: resident
	}
	runtime.KeepAlive(buf)
	buf = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.Equal(t, "+OK\r\n", tc.do("MEMORY", "PURGE"))
	runtime.ReadMemStats(&after)
	require.GreaterOrEqual(t, after.HeapReleased-min(after.HeapReleased, before.HeapReleased), uint64(32<<20),
		"released %d MiB before, %d after", before.HeapReleased>>20, after.HeapReleased>>20)
	require.Equal(t, "-ERR wrong number of arguments for 'memory|purge' command\r\n", tc.do("MEMORY", "PURGE", "x"))
}
