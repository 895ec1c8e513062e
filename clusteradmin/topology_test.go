package clusteradmin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
	idR = strings.Repeat("d", 40)
)

// nodesText is CLUSTER NODES as a redcell node answers it, asked of A
// while it migrates slot 7 to B, with a replica of C.
var nodesText = idA + " 127.0.0.1:7001@17001 myself,master - 0 0 3 connected 0-9 [7->-" + idB + "]\n" +
	idB + " 127.0.0.1:7002@17002 master - 0 0 3 connected 10 12-14\n" +
	idC + " 127.0.0.1:7003@17003,host-c master - 0 0 3 connected 15-16383\n" +
	idR + " [::1]:7004@17004 slave " + idC + " 0 0 3 connected\n"

func TestParseNodes(t *testing.T) {
	nodes, err := parseNodes(nodesText)
	require.NoError(t, err)
	require.Len(t, nodes, 4)
	require.Equal(t, Node{ID: idA, Addr: "127.0.0.1:7001", Slots: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, nodes[0],
		"the migrating slot in brackets is left out: 7 is listed plain")
	require.Equal(t, []int{10, 12, 13, 14}, nodes[1].Slots)
	require.Equal(t, "127.0.0.1:7003", nodes[2].Addr, "the hostname after the bus port is not the address")
	require.Len(t, nodes[2].Slots, 16384-15)
	require.Equal(t, Node{ID: idR, Addr: "[::1]:7004", MasterID: idC}, nodes[3])
	require.True(t, nodes[3].IsReplica())
}

func TestParseNodesRefuses(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{idA + " 127.0.0.1:7001@17001 master - 0 0", "CLUSTER NODES line 1: want at least 8 fields, got 6"},
		{idA + " 127.0.0.1@17001 master - 0 0 1 connected", `CLUSTER NODES line 1: address "127.0.0.1@17001": address 127.0.0.1: missing port in address`},
		{idA + " 127.0.0.1:1@2 handshake - 0 0 1 connected", `CLUSTER NODES line 1: flags "handshake": neither master nor slave`},
		{idA + " 127.0.0.1:1@2 master - 0 0 1 connected 5-3", `CLUSTER NODES line 1: slot range "5-3": must be from-to with from <= to <= 16383`},
		{idA + " 127.0.0.1:1@2 master - 0 0 1 connected 16384", `CLUSTER NODES line 1: slot "16384": must be 0 to 16383, or a range from-to`},
		{idA + " 127.0.0.1:1@2 master - 0 0 1 connected\n" + idA + " 127.0.0.1:2@3 master - 0 0 1 connected",
			"CLUSTER NODES line 2: node " + idA + " is listed twice"},
		{idA + " 127.0.0.1:1@2 master - 0 0 1 connected 0-5\n" + idB + " 127.0.0.1:2@3 master - 0 0 1 connected 5",
			"CLUSTER NODES: slot 5 is served by " + idA + " and " + idB},
	} {
		_, err := parseNodes(c.text)
		require.EqualError(t, err, c.want, "%q", c.text)
	}
}

func TestParseSlots(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "7", want: []int{7}},
		{in: "0-3,200", want: []int{0, 1, 2, 3, 200}},
		{in: "9, 3-4 ,4,16383", want: []int{3, 4, 9, 16383}},
		{in: "", err: `--slots "": an empty item`},
		{in: "1,,2", err: `--slots "1,,2": an empty item`},
		{in: "x", err: `--slots: slot "x": must be 0 to 16383, or a range from-to`},
		{in: "-1", err: `--slots: slot "-1": must be 0 to 16383, or a range from-to`},
		{in: "10-2", err: `--slots: slot range "10-2": must be from-to with from <= to <= 16383`},
		{in: "0-16384", err: `--slots: slot range "0-16384": must be from-to with from <= to <= 16383`},
	} {
		got, err := ParseSlots(c.in)
		if c.err != "" {
			require.EqualError(t, err, c.err, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestPlan(t *testing.T) {
	nodes, err := parseNodes(nodesText)
	require.NoError(t, err)
	p, err := plan(nodes, 3, idA, idB, []int{0, 7, 10, 12})
	require.NoError(t, err)
	require.Equal(t, idA, p.From.ID)
	require.Equal(t, idB, p.To.ID)
	require.Equal(t, int64(3), p.Version)
	require.Equal(t, []int{0, 7}, p.Moves)
	require.Equal(t, []int{10, 12}, p.Skipped, "slots the destination serves already")
	var order []string
	for _, n := range p.pushOrder() {
		order = append(order, n.ID)
	}
	require.Equal(t, []string{idB, idA, idC, idR}, order, "the destination first, then the source, then the rest, replicas included")

	for _, c := range []struct {
		from, to string
		slots    []int
		want     string
	}{
		{idA, idA, []int{0}, "--from and --to are the same node, " + idA},
		{idB, strings.Repeat("e", 40), []int{0}, "--to, node " + strings.Repeat("e", 40) + ", is not in the topology of --from, 127.0.0.1:7002 (" + idB + ")"},
		{strings.Repeat("e", 40), idB, []int{0}, "--from, node " + strings.Repeat("e", 40) + ", is not in its own topology"},
		{idA, idR, []int{0}, "--to, [::1]:7004 (" + idR + "), is a replica of " + idC + ": give a master"},
		{idR, idA, []int{0}, "--from, [::1]:7004 (" + idR + "), is a replica of " + idC + ": give its master"},
		{idA, idB, []int{0, 11}, "slot 11 is served by no node: assign it with CLUSTERX SETSLOT or SETNODES"},
		{idA, idB, []int{100}, "slot 100 is served by 127.0.0.1:7003 (" + idC + "), not --from, 127.0.0.1:7001 (" + idA + ")"},
	} {
		_, err := plan(nodes, 3, c.from, c.to, c.slots)
		require.EqualError(t, err, c.want)
	}
}

func TestParseReshard(t *testing.T) {
	o, err := parseReshard([]string{"--from", "h1:1", "--to=h2:2", "--slots", "5,1-2", "--password", "pw", "--timeout", "5s", "--retry-for", "2m"})
	require.NoError(t, err)
	require.Equal(t, ReshardOptions{From: "h1:1", To: "h2:2", Slots: []int{1, 2, 5}, Password: "pw", Timeout: 5 * time.Second, RetryFor: 2 * time.Minute}, o)
	o, err = parseReshard([]string{"--from", "h1:1", "--to", "h2:2", "--slots", "0"})
	require.NoError(t, err)
	require.Equal(t, DefaultTimeout, o.Timeout)
	require.Equal(t, DefaultRetryFor, o.RetryFor)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "h:2", "--slots", "1"}, "--from host:port is required"},
		{[]string{"--from", "h:1", "--slots", "1"}, "--to host:port is required"},
		{[]string{"--from", "h:1", "--to", "h:2"}, "--slots is required"},
		{[]string{"--from", "h:1", "--to", "h:2", "--slots", "1", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"--from", "h:1", "--to", "h:2", "--slots", "1", "--retry-for", "0s"}, "--retry-for 0s: must be positive"},
		{[]string{"--from", "h:1", "--to", "h:2", "--slots", "1", "extra"}, `unexpected argument "extra"`},
		{[]string{"--from", "h:1", "--to", "h:2", "--slots", "a"}, `--slots: slot "a": must be 0 to 16383, or a range from-to`},
		{[]string{"--form", "h:1"}, "unknown flag --form: did you mean --from?"},
		{[]string{"--from", "h:1", "--to", "h:2", "--slots", "1", "--timeout", "5"}, `invalid value "5" for --timeout: a duration needs a unit, as 1s or 500ms`},
	} {
		_, err := parseReshard(c.args)
		require.EqualError(t, err, c.want, "%q", c.args)
	}
}

func TestMainUsage(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 0, Main([]string{"--help"}, &out, &errOut))
	require.Contains(t, out.String(), "redcell cluster reshard --from host:port --to host:port --slots list")
	for _, line := range strings.Split(out.String(), "\n") {
		require.LessOrEqual(t, len(line), 80, "fits a terminal: %q", line)
	}
	out.Reset()
	require.Equal(t, 0, Main([]string{"reshard", "-h"}, &out, &errOut))
	require.Equal(t, usageText, out.String())
	require.Equal(t, 2, Main([]string{"rebalance"}, &out, &errOut))
	require.Equal(t, "redcell cluster: unknown command \"rebalance\"\nTry 'redcell cluster --help'.\n", errOut.String())
	errOut.Reset()
	require.Equal(t, 2, Main([]string{"reshard", "--from", "h:1"}, &out, &errOut))
	require.Equal(t, "redcell cluster reshard: --to host:port is required\nTry 'redcell cluster --help'.\n", errOut.String())
}
