package server

import (
	"slices"
	"strings"
	"testing"
)

// The command table is what COMMAND reports and what the dispatcher
// enforces: check it is consistent.
func TestCommandTable(t *testing.T) {
	commands := newCommandTable()
	table := commands.byName
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
		if cmd.noAuth != (name == "auth" || name == "hello" || name == "quit" || name == "reset") {
			t.Errorf("%s: noAuth %v; only AUTH, HELLO, QUIT and RESET run before authentication", name, cmd.noAuth)
		}
		if cmd.summary == "" || cmd.since == "" || cmd.group == "" || cmd.complexity == "" {
			t.Errorf("%s: COMMAND DOCS fields missing", name)
		}
	}
	ct := table["cl.throttle"]
	if ct == nil || ct.arity != -5 || ct.maxArgs != 6 || ct.firstKey != 1 || ct.lastKey != 1 || ct.step != 1 {
		t.Fatalf("cl.throttle = %+v; want arity -5, at most 6 arguments, key at 1", ct)
	}

	// The sorted list holds the same commands, in strict name order.
	if len(commands.sorted) != len(table) {
		t.Errorf("%d commands listed, %d by name", len(commands.sorted), len(table))
	}
	for i, cmd := range commands.sorted {
		if table[cmd.name] != cmd {
			t.Errorf("%s listed but not the one registered by that name", cmd.name)
		}
		if i > 0 && commands.sorted[i-1].name >= cmd.name {
			t.Errorf("%s listed after %s", cmd.name, commands.sorted[i-1].name)
		}
	}

	// Subcommands are entries of their own: a full name, arity, handler
	// and docs each.
	for _, cmd := range commands.sorted {
		for _, sub := range cmd.subcommands {
			if !strings.HasPrefix(sub.name, cmd.name+"|") || sub.name != strings.ToLower(sub.name) {
				t.Errorf("%s: subcommand named %q", cmd.name, sub.name)
			}
			if sub.run == nil || sub.arity == 0 || sub.subcommands != nil {
				t.Errorf("%s: run %v, arity %d, subcommands %d", sub.name, sub.run != nil, sub.arity, len(sub.subcommands))
			}
			if sub.summary == "" || sub.since == "" || sub.group == "" || sub.complexity == "" {
				t.Errorf("%s: COMMAND DOCS fields missing", sub.name)
			}
			if got := cmd.subcommand([]byte(strings.ToUpper(sub.name[len(cmd.name)+1:]))); got != sub {
				t.Errorf("%s: subcommand lookup found %v", sub.name, got)
			}
		}
	}

	// Which commands run at once inside MULTI, and which lock the whole
	// keyspace in a transaction.
	var txControl, wholeKeyspace []string
	for _, cmd := range commands.sorted {
		if cmd.txControl {
			txControl = append(txControl, cmd.name)
		}
		if cmd.wholeKeyspace {
			wholeKeyspace = append(wholeKeyspace, cmd.name)
		}
	}
	if want := []string{"discard", "exec", "multi", "quit", "reset", "watch"}; !slices.Equal(txControl, want) {
		t.Errorf("txControl commands %q want %q", txControl, want)
	}
	if want := []string{"dbsize", "flushall", "flushdb", "info", "keys", "memory", "object", "scan"}; !slices.Equal(wholeKeyspace, want) {
		t.Errorf("wholeKeyspace commands %q want %q", wholeKeyspace, want)
	}
}

func TestArityOK(t *testing.T) {
	ct := newCommandTable().byName["cl.throttle"]
	for n, want := range map[int]bool{1: false, 4: false, 5: true, 6: true, 7: false} {
		if got := ct.arityOK(n); got != want {
			t.Errorf("cl.throttle with %d arguments: arityOK %v want %v", n, got, want)
		}
	}
	get := newCommandTable().byName["get"]
	for n, want := range map[int]bool{1: false, 2: true, 3: false} {
		if got := get.arityOK(n); got != want {
			t.Errorf("get with %d arguments: arityOK %v want %v", n, got, want)
		}
	}
}

func TestCommandGetKeysForEveryKeyedCommand(t *testing.T) {
	tc := newTestClient(t, Config{})
	for name, cmd := range tc.srv.commands.byName {
		if cmd.firstKey == 0 {
			continue
		}
		args := []string{"COMMAND", "GETKEYS", name}
		// The fewest arguments, but one at least: SUNSUBSCRIBE's channels
		// are its keys, and it may have none.
		n := max(cmd.arity, -cmd.arity, 2)
		for i := 1; i < n; i++ {
			args = append(args, "a"+strings.Repeat("x", i))
		}
		want := "*1\r\n$2\r\nax\r\n" // with the fewest arguments, one key: the first
		if got := tc.do(args...); got != want {
			t.Errorf("%q = %q want %q", args, got, want)
		}
	}
}
