package cluster

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
)

func TestParseKvrocksFormat(t *testing.T) {
	text := idA + " 127.0.0.1 30001 master - 0-5460 9000\n" +
		idB + " 127.0.0.1 30002 master - 5461-8999 9001-16383\n" +
		idC + " 127.0.0.1 30003 slave " + idA + "\n"
	top, err := Parse(text, 7)
	require.NoError(t, err)
	require.Equal(t, int64(7), top.Version)
	require.Len(t, top.Nodes, 3)
	require.Equal(t, []Range{{0, 5460}, {9000, 9000}}, top.Nodes[0].Slots)
	require.Equal(t, []Range{{5461, 8999}, {9001, 16383}}, top.Nodes[1].Slots)
	require.Nil(t, top.Nodes[2].Slots)
	require.Equal(t, idA, top.Owner(0).ID)
	require.Equal(t, idA, top.Owner(9000).ID)
	require.Equal(t, idB, top.Owner(9001).ID)
	require.Equal(t, Slots, top.Assigned())
	require.Equal(t, []*Node{&top.Nodes[2]}, top.ReplicasOf(idA))
	require.Equal(t, idA, top.MasterOf(&top.Nodes[2]).ID)
	require.Equal(t, text, top.Text(), "Text is what Parse reads")

	again, err := Parse(top.Text(), 7)
	require.NoError(t, err)
	require.Equal(t, top, again)
}

func TestParseRefusesBadTopologies(t *testing.T) {
	for _, c := range []struct{ name, text, err string }{
		{"short id", "abc 127.0.0.1 1 master - 0", "a node ID must be 40 characters"},
		{"few fields", idA + " 127.0.0.1 1 master", "got 4 fields"},
		{"bad port", idA + " 127.0.0.1 0 master - 0", `port "0"`},
		{"bad role", idA + " 127.0.0.1 1 primary - 0", `role "primary"`},
		{"master with a master", idA + " 127.0.0.1 1 master " + idB, "master id must be -"},
		{"slot twice", idA + " h 1 master - 0-10\n" + idB + " h 2 master - 10", "slot 10 is served by"},
		{"slot range", idA + " h 1 master - 10-5", `slot range "10-5"`},
		{"slot too big", idA + " h 1 master - 16384", `slot "16384"`},
		{"replica with slots", idA + " h 1 master - 0\n" + idB + " h 2 slave " + idA + " 5", "a replica serves no slots"},
		{"replica of nobody", idB + " h 2 slave " + idA, "is not a master of the topology"},
		{"duplicate", idA + " h 1 master - 0\n" + idA + " h 2 master - 1", "listed twice"},
	} {
		_, err := Parse(c.text, 1)
		require.ErrorContains(t, err, c.err, c.name)
	}
}

func TestWithSlotMovesOneSlot(t *testing.T) {
	top, err := Parse(idA+" h 1 master - 0-16383\n"+idB+" h 2 master -\n", 3)
	require.NoError(t, err)
	moved, err := top.WithSlot(100, idB, 4)
	require.NoError(t, err)
	require.Equal(t, idB, moved.Owner(100).ID)
	require.Equal(t, []Range{{0, 99}, {101, 16383}}, moved.Nodes[0].Slots)
	require.Equal(t, []Range{{100, 100}}, moved.Nodes[1].Slots)
	require.Equal(t, idA, top.Owner(100).ID, "the old topology is unchanged")
	_, err = top.WithSlot(100, idC, 4)
	require.Error(t, err)
}

func TestEmulatedServesEverySlot(t *testing.T) {
	e := Emulated(idA, "127.0.0.1", 6379)
	require.Equal(t, int64(-1), e.Version)
	require.Equal(t, Slots, e.Assigned())
	require.Equal(t, idA, e.Owner(16383).ID)
}
