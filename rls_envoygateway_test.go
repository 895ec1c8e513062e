package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/internal/testkit/harness"
)

// envoyGatewayRoute is the route of the BackendTrafficPolicy below, named
// as Envoy Gateway names the descriptor of an HTTPRoute's rule.
const envoyGatewayRoute = "httproute/default/backend/rule/0/match/0/www_example_com"

// envoyGatewaySnapshot is what Envoy Gateway's control plane serves (its
// translator's BuildRateLimitServiceConfig) for a BackendTrafficPolicy with
// two global rules on that route: 3 an hour per x-user-id (a distinct
// header match: a key without a value), and 10 a minute for everyone (no
// match). The domain is the listener's name.
func envoyGatewaySnapshot() *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: "default/eg/http", Domain: "default/eg/http", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: envoyGatewayRoute, Value: envoyGatewayRoute,
		Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "rule-0-match-0", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 3}},
			{Key: "rule-1-match--1", Value: "rule-1-match--1", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: 10}},
		},
	}}}
}

// envoyGatewayRequest is what Envoy sends for a request of user on that
// route: one descriptor per rule.
func envoyGatewayRequest(user string) *pb.RateLimitRequest {
	entry := func(k, v string) *pbc.RateLimitDescriptor_Entry {
		return &pbc.RateLimitDescriptor_Entry{Key: k, Value: v}
	}
	return &pb.RateLimitRequest{Domain: "default/eg/http", Descriptors: []*pbc.RateLimitDescriptor{
		{Entries: []*pbc.RateLimitDescriptor_Entry{entry(envoyGatewayRoute, envoyGatewayRoute), entry("rule-0-match-0", user)}},
		{Entries: []*pbc.RateLimitDescriptor_Entry{entry(envoyGatewayRoute, envoyGatewayRoute), entry("rule-1-match--1", "rule-1-match--1")}},
	}}
}

// redcell swapped in for envoyproxy/ratelimit in Envoy Gateway's rate limit
// Deployment: run as /bin/ratelimit with exactly the environment Envoy
// Gateway gives the reference (internal/infrastructure/kubernetes/ratelimit's
// expectedRateLimitContainerEnv, a Redis backend and Prometheus on), only
// its addresses and the files of its secret made the test's: the gRPC
// service over TLS, the rules from the management server over mutual TLS as
// node envoy-ratelimit, the reference's /healthcheck and metrics. The
// answers are the reference's under the same environment, rules and
// requests, field by field (envoyGatewayReferenceAnswers).
func TestEnvoyGatewayRunsRedcellAsItsRateLimitService(t *testing.T) {
	prog := testkit.Binary(t)
	dir := t.TempDir()
	ratelimit := filepath.Join(dir, "ratelimit")
	require.NoError(t, os.Symlink(prog.Path(), ratelimit))

	pki := testkit.NewPKI(t)
	serverCert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	mgmt := testkit.StartXDSServer(t, "127.0.0.1:0",
		&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert})
	mgmt.Set(t, "envoy-ratelimit", envoyGatewaySnapshot())

	grpcPort, healthPort, metricsPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	env := []string{
		// Envoy Gateway's, in its order.
		"RUNTIME_ROOT=/data", "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_IGNOREDOTFILES=true", "RUNTIME_WATCH_ROOT=false",
		"LOG_LEVEL=info", "USE_STATSD=false", "CONFIG_TYPE=GRPC_XDS_SOTW",
		"CONFIG_GRPC_XDS_SERVER_URL=" + mgmt.Addr, // envoy-gateway:18001
		"CONFIG_GRPC_XDS_NODE_ID=envoy-ratelimit",
		"GRPC_SERVER_USE_TLS=true", "GRPC_SERVER_TLS_CERT=" + pki.ServerCert, "GRPC_SERVER_TLS_KEY=" + pki.ServerKey,
		"GRPC_SERVER_TLS_CA_CERT=" + pki.CA, "CONFIG_GRPC_XDS_SERVER_USE_TLS=true",
		"CONFIG_GRPC_XDS_CLIENT_TLS_CERT=" + pki.ClientCert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY=" + pki.ClientKey,
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT=" + pki.CA, "FORCE_START_WITHOUT_INITIAL_CONFIG=true",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=redis.redis.svc:6379",
		"USE_PROMETHEUS=true", fmt.Sprintf("PROMETHEUS_ADDR=127.0.0.1:%d", metricsPort), // :19001
		"PROMETHEUS_MAPPER_YAML=/etc/statsd-exporter/conf.yaml",
		// The reference's defaults made the test's: 0.0.0.0:8081 and
		// 0.0.0.0:8080; and RESP on a free port of the loopback.
		"GRPC_HOST=127.0.0.1", fmt.Sprintf("GRPC_PORT=%d", grpcPort), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", healthPort),
		"REDCELL_PORT=0",
	}
	proc := testkit.Start(t, testkit.ProgramAt(ratelimit), env)
	require.Contains(t, proc.Log(), "REDIS_URL is envoyproxy/ratelimit's Redis: redcell keeps the state in its own keyspace; ignored")

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", grpcPort), grpc.WithTransportCredentials(credentials.NewTLS(pki.ClientTLS())))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	// Until its rules come the service answers UNAVAILABLE (the reference
	// forced to start answers UNKNOWN "no rate limit configuration
	// loaded"); then a domain it does not know is OK.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "none",
			Descriptors: []*pbc.RateLimitDescriptor{{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
		if err == nil {
			break
		}
		require.Equal(t, codes.Unavailable, status.Code(err), "before its rules the service answers UNAVAILABLE: %v", err)
		require.True(t, time.Now().Before(deadline), "the rules never came: %v; log:\n%s", err, proc.Log())
	}

	var answers []struct {
		User string          `json:"user"`
		Resp json.RawMessage `json:"resp"`
	}
	require.NoError(t, json.Unmarshal([]byte(envoyGatewayReferenceAnswers), &answers))
	if sec := time.Now().Second(); sec >= 57 {
		// The calls must fall in one minute's window, as the
		// reference's did.
		time.Sleep(time.Duration(61-sec) * time.Second)
	}
	for i, a := range answers {
		want := &pb.RateLimitResponse{}
		require.NoError(t, protojson.Unmarshal(a.Resp, want))
		got := callRLS(t, client, a.User)
		// The reset is the window's end by the clock of the moment: the
		// reference's was another.
		units := map[pb.RateLimitResponse_RateLimit_Unit]time.Duration{pb.RateLimitResponse_RateLimit_HOUR: time.Hour,
			pb.RateLimitResponse_RateLimit_MINUTE: time.Minute}
		for j, st := range got.Statuses {
			require.Positive(t, st.DurationUntilReset.AsDuration(), "%d %s", i, a.User)
			require.LessOrEqual(t, st.DurationUntilReset.AsDuration(), units[st.GetCurrentLimit().GetUnit()], "%d %s", i, a.User)
			st.DurationUntilReset, want.Statuses[j].DurationUntilReset = nil, nil
		}
		if !proto.Equal(want, got) {
			t.Fatalf("%d %s:\n got %s\nwant %s (envoyproxy/ratelimit under the same environment)", i, a.User, protojson.Format(got), protojson.Format(want))
		}
	}

	health, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthcheck", healthPort))
	require.NoError(t, err)
	health.Body.Close()
	require.Equal(t, http.StatusOK, health.StatusCode, "Envoy Gateway's probes ask the reference's /healthcheck")
	metrics, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	require.NoError(t, err)
	metrics.Body.Close()
	require.Equal(t, http.StatusOK, metrics.StatusCode)
}

// envoyGatewayReferenceAnswers are envoyproxy/ratelimit's answers (commit
// f2fb157, with Redis) to the requests of users zed, alice four times,
// bob and carol, in turn, run with Envoy Gateway's environment (its commit
// d32f282) against a go-control-plane management server over mutual TLS
// serving envoyGatewaySnapshot, by a client presenting no certificate:
// each user's hour counted on its own, the minute shared, alice over at
// her fourth. Their durationUntilReset is the reference's clock's.
const envoyGatewayReferenceAnswers = `[
{"user":"zed","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"limitRemaining":2,"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":9,"durationUntilReset":"25s"}]}},
{"user":"alice","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"limitRemaining":2,"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":8,"durationUntilReset":"25s"}]}},
{"user":"alice","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"limitRemaining":1,"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":7,"durationUntilReset":"25s"}]}},
{"user":"alice","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":6,"durationUntilReset":"25s"}]}},
{"user":"alice","resp":{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":5,"durationUntilReset":"25s"}]}},
{"user":"bob","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"limitRemaining":2,"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":4,"durationUntilReset":"25s"}]}},
{"user":"carol","resp":{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":3,"unit":"HOUR"},"limitRemaining":2,"durationUntilReset":"1885s"},{"code":"OK","currentLimit":{"requestsPerUnit":10,"unit":"MINUTE"},"limitRemaining":3,"durationUntilReset":"25s"}]}}
]`

func callRLS(t *testing.T, client pb.RateLimitServiceClient, user string) *pb.RateLimitResponse {
	t.Helper()
	resp, err := callRLSErr(client, user)
	require.NoError(t, err)
	return resp
}

func callRLSErr(client pb.RateLimitServiceClient, user string) (*pb.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.ShouldRateLimit(ctx, envoyGatewayRequest(user))
}
