package server

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command's ACL categories are Redis 7.2's for the commands Redis
// has (testdata/redis-7.2-acl-categories.txt, read off its command table),
// so that a user's +@read or -@dangerous allows and refuses here what it
// does there. redcell's own commands are placed as the issue of ACLs
// decided: the limiters @write @fast (GCRA @string too, as it is in
// Redis's string group), CLUSTERX @admin @dangerous.
func TestCommandCategoriesAreRedis(t *testing.T) {
	f, err := os.Open("testdata/redis-7.2-acl-categories.txt")
	require.NoError(t, err)
	defer f.Close()
	redis := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line[0] != '#' {
			name, cats, _ := strings.Cut(line, " ")
			redis[name] = cats
		}
	}
	require.NoError(t, sc.Err())

	own := map[string]string{
		"cl.throttle": "@write @fast",
		"cl.count":    "@write @fast",
		"cl.reserve":  "@write @fast",
		"cl.window":   "@write @fast",
		"cl.acquire":  "@write @slow @blocking",
		"cl.release":  "@write @fast",
		"cl.renew":    "@write @fast",
		"cl.leases":   "@read @slow",
		"cl.top":      "@admin @slow @dangerous",
		"gcra":        "@write @string @fast",
		"clusterx":    "@admin @slow @dangerous",
	}
	// SLOWLOG and LATENCY are containers in Redis, whose subcommands are
	// @admin but HELP; redcell serves each as one command, @admin whole.
	flattened := map[string]string{
		"slowlog": "@admin @slow @dangerous",
		"latency": "@admin @slow @dangerous",
	}
	table := newCommandTable()
	for _, cmd := range table.sorted {
		for _, spec := range append([]*command{cmd}, cmd.subcommands...) {
			got := strings.Join(spec.acl, " ")
			switch want, ok := redis[spec.name]; {
			case flattened[spec.name] != "":
				require.Equal(t, flattened[spec.name], got, spec.name)
			case ok:
				require.Equal(t, want, got, "%s: Redis 7.2's categories", spec.name)
			case strings.HasPrefix(spec.name, "clusterx|"):
				require.Equal(t, own["clusterx"], got, spec.name)
			default:
				require.Contains(t, own, spec.name, "%s is not a Redis command: say where it belongs", spec.name)
				require.Equal(t, own[spec.name], got, spec.name)
			}
		}
	}
}

// dispatch's cache of the last command's spelling (sentName) finds the
// command however a pipeline spells it, changes of spelling and of command
// included, and never takes a name that only starts or ends like it.
func TestDispatchKnowsTheLastCommandHoweverSpelled(t *testing.T) {
	tc := newTestClient(t, Config{})
	for _, c := range []struct{ cmd, want string }{
		{"PING", "+PONG\r\n"},
		{"PING", "+PONG\r\n"},
		{"ping", "+PONG\r\n"},
		{"PiNg", "+PONG\r\n"},
		{"PINGS", "-ERR unknown command 'PINGS', with args beginning with: \r\n"},
		{"PIN", "-ERR unknown command 'PIN', with args beginning with: \r\n"},
		{"PING", "+PONG\r\n"},
		{"ECHO", "-ERR wrong number of arguments for 'echo' command\r\n"},
		{"PING", "+PONG\r\n"},
		{"PIN\x00", "-ERR unknown command 'PIN\x00', with args beginning with: \r\n"},
		{"pinG", "+PONG\r\n"},
	} {
		require.Equal(t, c.want, tc.do(c.cmd), "%q", c.cmd)
	}
	// A subcommand becomes lastCmd (runSubcommand): the container is found
	// again by its name all the same.
	id := tc.do("CLIENT", "ID")
	require.Regexp(t, `^:\d+\r\n$`, id)
	require.Equal(t, id, tc.do("CLIENT", "ID"))
	require.Equal(t, id, tc.do("client", "id"))
	require.Equal(t, "+PONG\r\n", tc.do("PING"))
}
