package daemon

import (
	"context"
	"crypto/tls"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/testkit"
)

const rlsRules = `domain: api
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 2
`

// startRLS runs the daemon with --rls-addr on a free port and the rules in
// rules, over dir, and returns its RESP and gRPC addresses and how to stop
// it.
func startRLS(t *testing.T, dir, rules string) (respAddr, rlsAddr string, stop func()) {
	t.Helper()
	return runRLS(t, config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Hour, RLSAddr: "127.0.0.1:0", RLSConfig: rules,
		WindowLogMax: 10000})
}

// runRLS runs the daemon with cfg, which serves the rate limit service, and
// returns its RESP and gRPC addresses once both listen, and how to stop it.
func runRLS(t *testing.T, cfg config.Config) (respAddr, rlsAddr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	rlsReady := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, slog.New(slog.DiscardHandler), Options{Ready: ready, rlsReady: func(a net.Addr) { rlsReady <- a }})
	}()
	var r, g net.Addr
	for r == nil || g == nil {
		select {
		case r = <-ready:
		case g = <-rlsReady:
		case err := <-done:
			t.Fatalf("Run: %v", err)
		}
	}
	return r.String(), g.String(), func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func rlsCall(t *testing.T, addr string, user string) *pb.RateLimitResponse {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api",
		Descriptors: []*pbc.RateLimitDescriptor{{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: user}}}}})
	require.NoError(t, err)
	return resp
}

// --rls-addr serves Envoy's API and gRPC health; the state is a key in the
// keyspace, which CL.COUNT reads, DEL resets and a restart keeps.
func TestRLSServesOverTheKeyspace(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(rlsRules), 0o644))
	respAddr, rlsAddr, stop := startRLS(t, dir, rules)

	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.Status)

	codes := func() []pb.RateLimitResponse_Code {
		var c []pb.RateLimitResponse_Code
		for range 3 {
			c = append(c, rlsCall(t, rlsAddr, "alice").OverallCode)
		}
		return c
	}
	require.Equal(t, []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT}, codes())

	rdb := redis.NewClient(&redis.Options{Addr: respAddr})
	defer rdb.Close()
	count, err := rdb.Do(context.Background(), "CL.COUNT", "api_user_alice_hour", 3600, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, int64(3), count[0], "three hits counted, the one over the limit too")
	require.Equal(t, int64(1), rdb.Del(context.Background(), "api_user_alice_hour").Val())
	require.Equal(t, uint32(1), rlsCall(t, rlsAddr, "alice").Statuses[0].LimitRemaining, "DEL reset it")
	stop()

	_, rlsAddr, stop = startRLS(t, dir, rules)
	defer stop()
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, func() pb.RateLimitResponse_Code {
		rlsCall(t, rlsAddr, "alice")
		return rlsCall(t, rlsAddr, "alice").OverallCode
	}(), "the count was kept across the restart: 1 before, 2 more now")
}

// A rules file the loader refuses stops the start, naming its file and
// line, before anything is written to --dir.
func TestABadRulesFileStopsTheStart(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 2\n"), 0o644))
	dir := filepath.Join(t.TempDir(), "data")
	err := Run(context.Background(), config.Config{Bind: "127.0.0.1", Dir: dir, FlushInterval: time.Second, RLSAddr: "127.0.0.1:0", RLSConfig: rules},
		slog.New(slog.DiscardHandler), Options{})
	require.EqualError(t, err, "--rls-config "+rules+": "+rules+":5: invalid rate limit unit 'fortnight'")
	_, serr := os.Stat(dir)
	require.ErrorIs(t, serr, fs.ErrNotExist)
}

// A master with --min-replicas-to-write 1 and no replica refuses a decision
// that would store on both fronts, through the one gate: RESP answers
// NOREPLICAS, the rate limit service UNAVAILABLE with the same text and
// stores nothing (it used to decide and store: issue 32's third finding).
func TestMinReplicasRefusesOnBothFronts(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(rlsRules), 0o644))
	respAddr, rlsAddr, stop := runRLS(t, config.Config{Bind: "127.0.0.1", InMemory: true, RLSAddr: "127.0.0.1:0", RLSConfig: rules,
		WindowLogMax: 10000, MinReplicasToWrite: 1, MinReplicasMaxLag: 10 * time.Second})
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: respAddr})
	defer rdb.Close()
	require.EqualError(t, rdb.Do(context.Background(), "CL.COUNT", "api_user_alice_hour", 3600).Err(), "NOREPLICAS Not enough good replicas to write.")
	conn, err := grpc.NewClient(rlsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api",
		Descriptors: []*pbc.RateLimitDescriptor{{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: "alice"}}}}})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Equal(t, "NOREPLICAS Not enough good replicas to write.", status.Convert(err).Message())
	require.Equal(t, int64(0), rdb.Exists(context.Background(), "api_user_alice_hour").Val(), "nothing stored")
}

// --rls-addr unix:path serves the rate limit service on a Unix socket, as
// the reference's GRPC_UDS: a socket a process that ended left behind is
// taken over, one another process serves is not, nor a file that is no
// socket.
func TestRLSOnAUnixSocket(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(rlsRules), 0o644))
	sock := filepath.Join(t.TempDir(), "rls.sock")
	stale, err := net.Listen("unix", sock)
	require.NoError(t, err)
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, stale.Close()) // the file stays, as after a crash

	cfg := config.Config{Bind: "127.0.0.1", InMemory: true, RLSAddr: "unix:" + sock, RLSConfig: rules, WindowLogMax: 10000}
	_, rlsAddr, stop := runRLS(t, cfg)
	defer stop()
	require.Equal(t, sock, rlsAddr)
	var got []pb.RateLimitResponse_Code
	for range 3 {
		got = append(got, rlsCall(t, "unix:"+sock, "alice").OverallCode)
	}
	require.Equal(t, []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT}, got)

	err = Run(context.Background(), cfg, slog.New(slog.DiscardHandler), Options{})
	require.EqualError(t, err, "--rls-addr unix:"+sock+": listen unix "+sock+": another process serves it")
	notSocket := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notSocket, []byte("x"), 0o644))
	cfg.RLSAddr = "unix:" + notSocket
	require.ErrorContains(t, Run(context.Background(), cfg, slog.New(slog.DiscardHandler), Options{}), "address already in use")
	data, err := os.ReadFile(notSocket)
	require.NoError(t, err)
	require.Equal(t, "x", string(data), "a file that is no socket is left alone")
}

// --rls-tls-client-name (the reference's GRPC_CLIENT_TLS_SAN) accepts on
// the rate limit service only a client certificate of the CA that names
// it: the test's client certificate names localhost, so it is served when
// localhost is asked for, refused when another name is, and a client
// without a certificate is refused either way.
func TestRLSClientCertificateName(t *testing.T) {
	pki := testkit.NewPKI(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(rlsRules), 0o644))
	call := func(addr string, cfg *tls.Config) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		require.NoError(t, err)
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api",
			Descriptors: []*pbc.RateLimitDescriptor{{Entries: []*pbc.RateLimitDescriptor_Entry{{Key: "user", Value: "a"}}}}})
		return err
	}
	for _, tc := range []struct {
		name   string
		served bool
	}{{"localhost", true}, {"envoy.internal", false}} {
		_, addr, stop := runRLS(t, config.Config{Bind: "127.0.0.1", InMemory: true, RLSAddr: "127.0.0.1:0", RLSConfig: rules,
			WindowLogMax: 10000, TLSCertFile: pki.ServerCert, TLSKeyFile: pki.ServerKey, TLSCACertFile: pki.CA,
			TLSAuthClients: "optional", RLSTLSClientName: tc.name})
		err := call(addr, pki.ClientTLS(pki.Client))
		if tc.served {
			require.NoError(t, err, tc.name)
		} else {
			require.Equal(t, codes.Unavailable, status.Code(err), "%s: %v", tc.name, err)
		}
		require.Equal(t, codes.Unavailable, status.Code(call(addr, pki.ClientTLS())), "%s: no certificate", tc.name)
		stop()
	}
}
