package testkit

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// XDSServer is a real xDS management server on the loopback, as Envoy
// Gateway runs one for its rate limit service: go-control-plane's snapshot
// cache (keyed by node id) behind its ADS server, serving RateLimitConfig
// resources. It records what the client sends: every DiscoveryRequest (its
// ACKs and NACKs) and the metadata each stream opened with.
type XDSServer struct {
	Addr  string
	Cache cachev3.SnapshotCache

	tls     *tls.Config
	grpc    *grpc.Server
	mu      sync.Mutex
	reqs    []*discovery.DiscoveryRequest
	headers []metadata.MD
	version int
}

// StartXDSServer serves on addr ("127.0.0.1:0" for a free port) until the
// test ends or Stop, with TLS when tlsCfg is not nil.
func StartXDSServer(t testing.TB, addr string, tlsCfg *tls.Config) *XDSServer {
	t.Helper()
	s := &XDSServer{tls: tlsCfg, Cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil)}
	s.start(t, addr)
	return s
}

func (s *XDSServer) start(t testing.TB, addr string) {
	var ln net.Listener
	var err error
	// A restart's address may linger a moment in the kernel.
	require.Eventually(t, func() bool { ln, err = net.Listen("tcp", addr); return err == nil }, 10*time.Second, 20*time.Millisecond, "listen %s: %v", addr, err)
	s.Addr = ln.Addr().String()
	var opts []grpc.ServerOption
	if s.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.tls)))
	}
	s.grpc = grpc.NewServer(opts...)
	callbacks := serverv3.CallbackFuncs{
		StreamOpenFunc: func(ctx context.Context, _ int64, _ string) error {
			md, _ := metadata.FromIncomingContext(ctx)
			s.mu.Lock()
			s.headers = append(s.headers, md)
			s.mu.Unlock()
			return nil
		},
		StreamRequestFunc: func(_ int64, req *discovery.DiscoveryRequest) error {
			s.mu.Lock()
			s.reqs = append(s.reqs, proto.Clone(req).(*discovery.DiscoveryRequest))
			s.mu.Unlock()
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	discovery.RegisterAggregatedDiscoveryServiceServer(s.grpc, serverv3.NewServer(ctx, s.Cache, callbacks))
	g := s.grpc
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(func() { cancel(); g.Stop() })
}

// Stop stops serving, cutting every stream, as a management server that
// dies.
func (s *XDSServer) Stop() { s.grpc.Stop() }

// Restart serves again on the same address, with an empty cache whose
// versions start again from 1: a management server restarted.
func (s *XDSServer) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.mu.Lock()
	s.Cache, s.version, s.reqs = cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil), 0, nil
	s.mu.Unlock()
	s.start(t, s.Addr)
}

// Set gives node a snapshot of the next version ("1", "2", ...) holding
// configs, and returns its version. No configs is a snapshot whose
// RateLimitConfig type is empty.
func (s *XDSServer) Set(t testing.TB, node string, configs ...*rlsconf.RateLimitConfig) string {
	t.Helper()
	res := make([]cachetypes.Resource, len(configs))
	for i, c := range configs {
		res[i] = c
	}
	return s.SetResources(t, node, map[resourcev3.Type][]cachetypes.Resource{resourcev3.RateLimitConfigType: res})
}

// SetResources gives node a snapshot of the next version holding resources,
// by type (none: a snapshot without the RateLimitConfig type), and returns
// its version.
func (s *XDSServer) SetResources(t testing.TB, node string, resources map[resourcev3.Type][]cachetypes.Resource) string {
	t.Helper()
	s.mu.Lock()
	s.version++
	v := strconv.Itoa(s.version)
	s.mu.Unlock()
	snap, err := cachev3.NewSnapshot(v, resources)
	require.NoError(t, err)
	require.NoError(t, s.Cache.SetSnapshot(context.Background(), node, snap))
	return v
}

// Requests are the DiscoveryRequests received so far (since the last
// Restart).
func (s *XDSServer) Requests() []*discovery.DiscoveryRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*discovery.DiscoveryRequest(nil), s.reqs...)
}

// Headers are the metadata of each stream opened, in order.
func (s *XDSServer) Headers() []metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metadata.MD(nil), s.headers...)
}

// WaitRequest waits up to 10 seconds for a request that ok accepts, and
// returns the first such.
func (s *XDSServer) WaitRequest(t testing.TB, what string, ok func(*discovery.DiscoveryRequest) bool) *discovery.DiscoveryRequest {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		reqs := s.Requests()
		for _, r := range reqs {
			if ok(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the management server never received %s; it received %v", what, reqs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
