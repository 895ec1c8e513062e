package clusternode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/resp"
)

// Pipelined commands' replies are all read, the first error reply returned
// once they are, so the connection stays in step for the next command.
func TestPeerReadsEveryReply(t *testing.T) {
	f := startFakePeer(t, idF, func(args []string) string {
		switch args[0] {
		case "AUTH":
			if args[len(args)-1] != "secret" {
				return "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
			}
		case "FAIL":
			return "-ERR " + args[1] + "\r\n"
		case "INT":
			return ":12\r\n"
		}
		return "+OK\r\n"
	})
	n := cluster.Node{IP: "127.0.0.1", Port: f.port}
	_, err := dialPeer(n, "", "wrong")
	require.EqualError(t, err, "WRONGPASS invalid username-password pair or user is disabled.")

	p, err := dialPeer(n, "", "secret")
	require.NoError(t, err)
	defer p.close()
	p.send("PING")
	p.send("FAIL", "first")
	p.send("INT")
	p.send("FAIL", "second")
	require.Equal(t, 4, p.pending)
	err = p.replies(4)
	require.Equal(t, resp.ReplyError("ERR first"), err)
	require.Zero(t, p.pending)
	require.NoError(t, p.call("PING"), "in step")
	require.Equal(t, [][]string{{"AUTH", "wrong"}, {"AUTH", "secret"}, {"PING"}, {"FAIL", "first"}, {"INT"}, {"FAIL", "second"}, {"PING"}}, f.drain())

	// With a user: AUTH user password, the internal user's.
	p, err = dialPeer(n, "cluster", "secret")
	require.NoError(t, err)
	p.close()
	require.Equal(t, [][]string{{"AUTH", "cluster", "secret"}}, f.drain())
}
