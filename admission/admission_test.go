package admission

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type disk struct{ failing bool }

func (d *disk) Failing() bool { return d.failing }

// Admit weighs the reasons in one order, whatever the front: the key's
// length, a replica's READONLY (even for a decision that would store
// nothing), then a master's replicas and the disk, which refuse only what
// would store (Conditional); a peek is refused only a key too long.
func TestAdmitOrder(t *testing.T) {
	d := &disk{}
	g := &Gate{MaxKeyLen: 8, Refusing: New(8).Refusing, Durable: true, Persistence: d}
	for _, c := range []struct {
		name     string
		refusing uint32
		failing  bool
		keyLen   int
		quantity int64
		want     Refusal
	}{
		{"nothing refused", 0, false, 8, 1, Admitted},
		{"a key too long first", RefuseReplica, true, 9, 1, KeyTooLong},
		{"a key too long, even a peek", 0, false, 9, 0, KeyTooLong},
		{"a replica", RefuseReplica | RefuseFewReplicas, true, 8, 1, ReadOnly},
		{"a replica answers a peek", RefuseReplica, false, 8, 0, Admitted},
		{"too few replicas before the disk", RefuseFewReplicas, true, 8, 1, NoReplicas},
		{"the disk", 0, true, 8, 5, Misconf},
		{"a peek on a failing disk", 0, true, 8, 0, Admitted},
	} {
		g.Refusing.Store(c.refusing)
		d.failing = c.failing
		require.Equal(t, c.want, g.Admit(c.keyLen, c.quantity), c.name)
	}
	require.True(t, NoReplicas.Conditional())
	require.True(t, Misconf.Conditional())
	require.False(t, ReadOnly.Conditional())
	require.False(t, KeyTooLong.Conditional())
}

// Writes refuses any change, conditional refusals included.
func TestWrites(t *testing.T) {
	g := New(8)
	require.Equal(t, Admitted, g.Writes())
	g.Refusing.Store(RefuseFewReplicas)
	require.Equal(t, NoReplicas, g.Writes())
	g.Refusing.Store(0)
	g.Durable, g.Persistence = true, &disk{failing: true}
	require.Equal(t, Misconf, g.Writes())
}

// A node's refusal, forwarded as its text, reads back as what it is.
func TestOf(t *testing.T) {
	for _, r := range []Refusal{ReadOnly, NoReplicas, Misconf, OOM, ClusterDown, KeyTooLong} {
		require.Equal(t, r, Of(r.Text()), r.Text())
	}
	require.Equal(t, KeyTooLong, Of(KeyTooLongText(9, 8)))
	require.Equal(t, ClusterDown, Of("CLUSTERDOWN The cluster is down"))
	require.Equal(t, Admitted, Of("ERR wrong number of arguments for 'cl.count' command"))
	require.Equal(t, Admitted, Of("OOMPH"))
}
