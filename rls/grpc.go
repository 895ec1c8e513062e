package rls

import (
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Register serves svc on srv, with the standard health service answering
// SERVING for the whole server ("") and for the rate limit service's name.
func Register(srv *grpc.Server, svc *Service) *health.Server {
	pb.RegisterRateLimitServiceServer(srv, svc)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(pb.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, h)
	return h
}
