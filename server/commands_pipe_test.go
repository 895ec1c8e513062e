package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A name with '|' is never a command, whether sent on a fresh connection
// or right after its container ran the subcommand it names, which made the
// dispatcher's cache of the last command run the subcommand by its literal
// name (a nil-pointer panic that ended the process: issue 32's first crash).
// Redis 7 answers it as an unknown command.
func TestPipeNamesAreUnknownCommands(t *testing.T) {
	srv := New(Config{}, nil)
	var literals []string
	for _, cmd := range srv.commands.sorted {
		for _, sub := range cmd.subcommands {
			literals = append(literals, sub.name)
		}
	}
	require.Greater(t, len(literals), 30, "the table's subcommands")
	for _, lit := range literals {
		parent, word, _ := strings.Cut(lit, "|")
		for _, before := range [][]string{nil, {parent, word}, {strings.ToUpper(parent), strings.ToUpper(word)}} {
			tc := newTestClient(t, Config{})
			if before != nil {
				tc.do(before...) // whatever it answers, it becomes the connection's last command
			}
			for _, spelling := range []string{lit, strings.ToUpper(lit)} {
				require.Equal(t, "-ERR unknown command '"+spelling+"', with args beginning with: \r\n", tc.do(spelling),
					"%s after %v", spelling, before)
				require.Equal(t, "-ERR unknown command '"+spelling+"', with args beginning with: 'x' \r\n", tc.do(spelling, "x"),
					"%s x after %v", spelling, before)
			}
			require.Equal(t, "+PONG\r\n", tc.do("PING"), "the connection serves on")
		}
	}
}
