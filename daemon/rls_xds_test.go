package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/internal/testkit/harness"
)

// With --rls-xds-server and no management server up yet, redcell starts and
// serves RESP, its health check says OK (as the reference forced to start
// does; with --rls-healthcheck-needs-rules it says 500 until rules with a
// domain come), and the rate limit service answers UNAVAILABLE; once the
// management server comes up with a snapshot for the node, its rules
// serve, their state in the keyspace.
func TestRLSOverXDSStartsBeforeItsManagementServer(t *testing.T) {
	mgmtAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	healthAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	respAddr, rlsAddr, stop := runRLS(t, config.Config{Bind: "127.0.0.1", InMemory: true, WindowLogMax: 10000, RLSAddr: "127.0.0.1:0",
		RLSXDSServer: mgmtAddr, RLSXDSNodeID: "envoy-ratelimit", RLSHealthcheckAddr: healthAddr, RLSHealthcheckNeedsRules: true})
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: respAddr})
	defer rdb.Close()
	require.Equal(t, "PONG", rdb.Ping(context.Background()).Val(), "RESP serves from the start")
	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbc.RateLimitDescriptor{{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: "alice"}}}}}
	_, err = client.ShouldRateLimit(context.Background(), req)
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Equal(t, http.StatusInternalServerError, healthcheck(t, healthAddr).code, "no rules yet, and they are needed")

	mgmt := testkit.StartXDSServer(t, mgmtAddr, nil)
	mgmt.Set(t, "envoy-ratelimit", &rlsconf.RateLimitConfig{Name: "api", Domain: "api", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 2}}}})
	require.Eventually(t, func() bool {
		resp, err := client.ShouldRateLimit(context.Background(), req)
		return err == nil && resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit() == 2
	}, 20*time.Second, 10*time.Millisecond, "the rules of the management server come once it is up")
	require.Equal(t, int64(1), rdb.Exists(context.Background(), "api_user_alice_hour").Val(), "the state is a key of the keyspace")
	h := healthcheck(t, healthAddr)
	require.Equal(t, http.StatusOK, h.code)
	require.Equal(t, "OK", h.body)
}

type healthAnswer struct {
	code int
	body string
}

func healthcheck(t *testing.T, addr string) healthAnswer {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthcheck")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return healthAnswer{resp.StatusCode, strings.TrimSpace(string(body))}
}
