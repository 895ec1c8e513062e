package server

import (
	"strconv"
	"strings"
	"testing"
)

func helpReply(lines []string) string {
	out := "*" + strconv.Itoa(len(lines)) + "\r\n"
	for _, l := range lines {
		out += "+" + l + "\r\n"
	}
	return out
}

// STRLEN, OBJECT and MEMORY describe a key's value, the TAT, as Redis would
// describe the same integer string, and answer Redis's errors.
func TestObjectStrlenMemory(t *testing.T) {
	tc := newTestClient(t, Config{})
	long := strings.Repeat("L", 30)
	tat := strconv.FormatInt(t0.Add(10*1e9).UnixNano(), 10) // 19 digits
	for i, s := range []struct {
		args []string
		want string
	}{
		{[]string{"STRLEN", "k"}, ":0\r\n"},
		{[]string{"MEMORY", "USAGE", "k"}, "$-1\r\n"},
		{[]string{"OBJECT", "ENCODING", "k"}, "$-1\r\n"},
		{[]string{"OBJECT", "FREQ", "k"}, "$-1\r\n"},
		{[]string{"OBJECT", "IDLETIME", "k"}, "$-1\r\n"},
		{[]string{"OBJECT", "REFCOUNT", "k"}, "$-1\r\n"},

		{[]string{"CL.THROTTLE", "k", "4", "1", "10"}, intsReply(0, 5, 4, -1, 10)},
		{[]string{"GET", "k"}, "$19\r\n" + tat + "\r\n"},
		{[]string{"STRLEN", "k"}, ":19\r\n"},
		{[]string{"MEMORY", "USAGE", "k"}, ":96\r\n"}, // alone in its shard: a 32-byte entry and 8 slots of 8 bytes
		{[]string{"memory", "usage", "k", "SAMPLES", "0"}, ":96\r\n"},
		{[]string{"MEMORY", "USAGE", "k", "samples", "5", "SAMPLES", "7"}, ":96\r\n"},
		{[]string{"OBJECT", "ENCODING", "k"}, "$3\r\nint\r\n"},
		{[]string{"OBJECT", "REFCOUNT", "k"}, ":1\r\n"},
		{[]string{"OBJECT", "IDLETIME", "k"}, ":0\r\n"},
		{[]string{"OBJECT", "FREQ", "k"}, errReply(errNoLFU)},
		{[]string{"DEL", "k"}, ":1\r\n"},
		{[]string{"CL.THROTTLE", long, "4", "1", "10"}, intsReply(0, 5, 4, -1, 10)},
		{[]string{"MEMORY", "USAGE", long}, ":126\r\n"}, // and its 30 bytes in the arena

		{[]string{"MEMORY", "USAGE", "k", "SAMPLES"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE", "k", "SAMPLES", "-1"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE", "k", "SAMPLES", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"MEMORY", "USAGE", "k", "COUNT", "1"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE"}, "-ERR wrong number of arguments for 'memory|usage' command\r\n"},
		{[]string{"MEMORY", "HELP", "x"}, "-ERR wrong number of arguments for 'memory|help' command\r\n"},
		{[]string{"MEMORY", "STATS"}, "-ERR unknown subcommand 'STATS'. Try MEMORY HELP.\r\n"},
		{[]string{"OBJECT", "ENCODING"}, "-ERR wrong number of arguments for 'object|encoding' command\r\n"},
		{[]string{"OBJECT", "REFCOUNT", "a", "b"}, "-ERR wrong number of arguments for 'object|refcount' command\r\n"},
		{[]string{"OBJECT", "HELP", "x"}, "-ERR wrong number of arguments for 'object|help' command\r\n"},
		{[]string{"OBJECT", "FROB", "k"}, "-ERR unknown subcommand 'FROB'. Try OBJECT HELP.\r\n"},
		{[]string{"STRLEN"}, "-ERR wrong number of arguments for 'strlen' command\r\n"},
		{[]string{"OBJECT"}, "-ERR wrong number of arguments for 'object' command\r\n"},

		{[]string{"OBJECT", "HELP"}, helpReply(objectHelp)},
		{[]string{"MEMORY", "HELP"}, helpReply(memoryHelp)},
	} {
		if got := tc.do(s.args...); got != s.want {
			t.Errorf("step %d: %q = %q want %q", i, s.args, got, s.want)
		}
	}
	if got := tc.c.lastCmd.Load().name; got != "memory|help" {
		t.Errorf("CLIENT LIST cmd= after MEMORY HELP is %q, want memory|help", got)
	}
	if got, want := objectHelp[0], "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"; got != want {
		t.Errorf("OBJECT HELP's first line %q", got)
	}
}
