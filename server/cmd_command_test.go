package server

import (
	"strings"
	"testing"
)

// The command table is what COMMAND reports and what the dispatcher
// enforces: check it is consistent.
func TestCommandTable(t *testing.T) {
	table := commandTable()
	for name, cmd := range table {
		if name != cmd.name || name != strings.ToLower(name) {
			t.Errorf("%q registered as %q: names are lower case", cmd.name, name)
		}
		if cmd.run == nil {
			t.Errorf("%s has no handler", name)
		}
		if cmd.arity == 0 {
			t.Errorf("%s has arity 0", name)
		}
		if cmd.maxArgs != 0 && (cmd.arity > 0 || cmd.maxArgs < -cmd.arity) {
			t.Errorf("%s: maxArgs %d with arity %d", name, cmd.maxArgs, cmd.arity)
		}
		if cmd.firstKey != 0 && (cmd.step <= 0 || (cmd.lastKey > 0 && cmd.lastKey < cmd.firstKey) || len(cmd.keyFlags) == 0) {
			t.Errorf("%s: key positions %d %d %d flags %v", name, cmd.firstKey, cmd.lastKey, cmd.step, cmd.keyFlags)
		}
		if cmd.noAuth != (name == "auth" || name == "hello" || name == "quit") {
			t.Errorf("%s: noAuth %v; only AUTH, HELLO and QUIT run before authentication", name, cmd.noAuth)
		}
		if cmd.summary == "" || cmd.since == "" || cmd.group == "" || cmd.complexity == "" {
			t.Errorf("%s: COMMAND DOCS fields missing", name)
		}
	}
	ct := table["cl.throttle"]
	if ct == nil || ct.arity != -5 || ct.maxArgs != 6 || ct.firstKey != 1 || ct.lastKey != 1 || ct.step != 1 {
		t.Fatalf("cl.throttle = %+v; want arity -5, at most 6 arguments, key at 1", ct)
	}
}

func TestArityOK(t *testing.T) {
	ct := commandTable()["cl.throttle"]
	for n, want := range map[int]bool{1: false, 4: false, 5: true, 6: true, 7: false} {
		if got := ct.arityOK(n); got != want {
			t.Errorf("cl.throttle with %d arguments: arityOK %v want %v", n, got, want)
		}
	}
	get := commandTable()["get"]
	for n, want := range map[int]bool{1: false, 2: true, 3: false} {
		if got := get.arityOK(n); got != want {
			t.Errorf("get with %d arguments: arityOK %v want %v", n, got, want)
		}
	}
}

func TestCommandGetKeysForEveryKeyedCommand(t *testing.T) {
	tc := newTestClient(t, Config{})
	for name, cmd := range tc.srv.commands {
		if cmd.firstKey == 0 {
			continue
		}
		args := []string{"COMMAND", "GETKEYS", name}
		n := max(cmd.arity, -cmd.arity)
		for i := 1; i < n; i++ {
			args = append(args, "a"+strings.Repeat("x", i))
		}
		want := "*1\r\n$2\r\nax\r\n" // with the fewest arguments, one key: the first
		if got := tc.do(args...); got != want {
			t.Errorf("%q = %q want %q", args, got, want)
		}
	}
}
