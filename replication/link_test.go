package replication

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/storage"
)

// A replica's connection that ends (the server closing it: CLIENT KILL, a
// read error) while the master becomes a replica or closes: both return,
// and the master reports no replica left. Link.Close used to hold its
// once while it waited for the node's lock, which ReplicaOf and Close hold
// while they close every link through that once.
func TestLinkCloseWhileTheNodeDropsItsLinks(t *testing.T) {
	for i := range 100 {
		n := New(Config{Store: storage.New(storage.Config{Shards: 1}), BacklogSize: 1 << 10, Dial: refuseDial})
		var links []*Link
		for j := range 4 {
			conn, peer := net.Pipe()
			t.Cleanup(func() { _ = peer.Close() })
			l, err := n.PSync(conn, Replica{IP: "127.0.0.1", Port: 7000 + j}, "?", -1)
			require.NoError(t, err)
			links = append(links, l)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			for _, l := range links {
				l.Close()
			}
		}()
		dropped := make(chan struct{})
		go func() {
			defer close(dropped)
			if i%2 == 0 {
				_, _ = n.ReplicaOf("127.0.0.1", 1)
			}
			n.Close()
		}()
		for _, c := range []chan struct{}{closed, dropped} {
			select {
			case <-c:
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: Link.Close and the node's dropping its links deadlocked", i)
			}
		}
		require.Empty(t, n.Status().Replicas)
	}
}

func refuseDial(string) (net.Conn, error) { return nil, net.ErrClosed }
