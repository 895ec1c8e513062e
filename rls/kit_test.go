package rls

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/redcell/redcell/storage"
)

// manualClock is a clock tests set by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *manualClock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// rig is a service on a real gRPC server on the loopback, over a store of
// its own, with a manual clock, and a client of it.
type rig struct {
	svc    *Service
	store  *storage.Store
	clock  *manualClock
	client pb.RateLimitServiceClient
	addr   string
}

func loadString(t testing.TB, yaml string) *Rules {
	t.Helper()
	r, err := Load([]File{{Name: "test.yaml", Data: []byte(yaml)}}, LoadOptions{})
	require.NoError(t, err)
	return r
}

func loadFile(t testing.TB, path string) *Rules {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	r, err := Load([]File{{Name: path, Data: data}}, LoadOptions{})
	require.NoError(t, err)
	return r
}

func newRig(t testing.TB, rules *Rules, opts Options, at time.Time) *rig {
	t.Helper()
	store := storage.New(storage.Config{Shards: 4})
	clock := &manualClock{t: at}
	svc := NewService(rules, &Local{Store: store}, clock.Now, opts, NewMetrics())
	return startRig(t, svc, store, clock)
}

func startRig(t testing.TB, svc *Service, store *storage.Store, clock *manualClock) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewGRPCServer(nil)
	Register(srv, svc)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rig{svc: svc, store: store, clock: clock, client: pb.NewRateLimitServiceClient(conn), addr: ln.Addr().String()}
}

func (r *rig) call(t testing.TB, req *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.client.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	return resp
}

// E is a descriptor entry, key and value.
type E = [2]string

func desc(entries ...E) *pbc.RateLimitDescriptor {
	x := &pbc.RateLimitDescriptor{}
	for _, e := range entries {
		x.Entries = append(x.Entries, &pbc.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
	}
	return x
}

func withHits(x *pbc.RateLimitDescriptor, n uint64) *pbc.RateLimitDescriptor {
	x.HitsAddend = wrapperspb.UInt64(n)
	return x
}

func withOverride(x *pbc.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit) *pbc.RateLimitDescriptor {
	x.Limit = &pbc.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	return x
}

func request(domain string, ds ...*pbc.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: ds}
}
