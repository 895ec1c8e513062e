package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/config"
)

// rlsNode is one node of an in-process cluster serving the rate limit
// service.
type rlsNode struct {
	id   string
	port int
	rdb  *redis.Client
	rls  pb.RateLimitServiceClient
}

// In cluster mode a descriptor is decided on the node that owns its key,
// whichever node Envoy asks: three nodes in one process, the slots split as
// redis-cli --cluster create splits them, every user asked of every node in
// turn; each count is one, kept on the key's owner alone.
func TestRLSInClusterModeDecidesOnTheKeysNode(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(rlsRules), 0o644))
	var nodes []*rlsNode
	for i := range 3 {
		respAddr, rlsAddr, stop := runRLS(t, config.Config{Bind: "127.0.0.1", Dir: t.TempDir(), FlushInterval: time.Hour,
			ClusterEnabled: "yes", RLSAddr: "127.0.0.1:0", RLSConfig: rules, WindowLogMax: 10000})
		t.Cleanup(stop)
		conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		port, err := strconv.Atoi(respAddr[strings.LastIndexByte(respAddr, ':')+1:])
		require.NoError(t, err)
		n := &rlsNode{id: strings.Repeat(string(rune('a'+i)), 40), port: port,
			rdb: redis.NewClient(&redis.Options{Addr: respAddr, MaxRetries: -1}), rls: pb.NewRateLimitServiceClient(conn)}
		t.Cleanup(func() { _ = n.rdb.Close() })
		require.NoError(t, n.rdb.Do(context.Background(), "CLUSTERX", "SETNODEID", n.id).Err())
		nodes = append(nodes, n)
	}
	var topo strings.Builder
	for i, r := range [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}} {
		fmt.Fprintf(&topo, "%s 127.0.0.1 %d master - %d-%d\n", nodes[i].id, nodes[i].port, r[0], r[1])
	}
	for _, n := range nodes {
		require.NoError(t, n.rdb.Do(context.Background(), "CLUSTERX", "SETNODES", topo.String(), 1).Err())
	}
	owner := func(key string) int {
		switch slot := cluster.Slot([]byte(key)); {
		case slot <= 5460:
			return 0
		case slot <= 10922:
			return 1
		}
		return 2
	}

	ask := func(n *rlsNode, users ...string) *pb.RateLimitResponse {
		req := &pb.RateLimitRequest{Domain: "api"}
		for _, u := range users {
			req.Descriptors = append(req.Descriptors, &pbc.RateLimitDescriptor{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: u}}})
		}
		resp, err := n.rls.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		return resp
	}
	// Eight users a node: similar names fall in few slots (CRC16), so
	// they are picked by where their keys fall.
	var users []string
	onNode := map[int]int{}
	first := map[int]string{} // a user whose key each node owns
	for i := 0; len(users) < 24; i++ {
		user := "u" + strconv.Itoa(i*7919)
		if o := owner("api_user_" + user + "_hour"); onNode[o] < 8 {
			onNode[o]++
			users = append(users, user)
			if first[o] == "" {
				first[o] = user
			}
		}
	}
	for u, user := range users {
		for call, want := range []uint32{1, 0} {
			st := ask(nodes[(u+call)%3], user).Statuses[0]
			require.Equal(t, pb.RateLimitResponse_OK, st.Code, "%s call %d", user, call)
			require.Equal(t, want, st.LimitRemaining, "%s call %d", user, call)
		}
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, ask(nodes[(u+2)%3], user).OverallCode, user)
	}

	// One request whose descriptors fall on every node: each decided on
	// its own, in one round trip a node.
	resp := ask(nodes[0], first[0], first[1], first[2], "fresh-a", "fresh-b", "fresh-c")
	for i, st := range resp.Statuses {
		if i < 3 {
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, st.Code, "descriptor %d", i)
		} else {
			require.Equal(t, uint32(1), st.LimitRemaining, "descriptor %d", i)
		}
	}

	// Each key lives on its owner only: CL.COUNT reads it there (4 hits),
	// and the other nodes answer MOVED.
	for _, user := range []string{first[0], first[1], first[2]} {
		key := "api_user_" + user + "_hour"
		for i, n := range nodes {
			v, err := n.rdb.Do(context.Background(), "CL.COUNT", key, 3600, 0).Int64Slice()
			if i == owner(key) {
				require.NoError(t, err)
				require.Equal(t, int64(4), v[0], key)
			} else {
				require.ErrorContains(t, err, "MOVED", "%s on node %d", key, i)
			}
		}
	}
}
