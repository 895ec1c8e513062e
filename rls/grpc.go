package rls

import (
	"context"
	"log/slog"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/redcell/redcell/internal/contain"
)

// NewGRPCServer returns a gRPC server with opts for the service (Register):
// a panic in a call is contained to it (contained), which answers INTERNAL,
// and the server serves on.
func NewGRPCServer(logger *slog.Logger, opts ...grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(contained(logger)))...)
}

// contained recovers a panic in a unary call: logged and counted
// (contain.Record, with the method's name, never the request, whose
// descriptors may hold user data), answered INTERNAL. Locks the call held
// are released by their deferred unlocks.
func contained(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if v := recover(); v != nil {
				contain.Record(logger, "rls", info.FullMethod, v)
				resp, err = nil, status.Error(codes.Internal, "internal error in the rate limit service: the call failed, the service serves on (see its log)")
			}
		}()
		return handler(ctx, req)
	}
}

// Register serves svc on srv, with the standard health service answering
// SERVING for the whole server ("") and for the rate limit service's name.
func Register(srv *grpc.Server, svc *Service) *health.Server {
	pb.RegisterRateLimitServiceServer(srv, svc)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(pb.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, h)
	// Reflection, so that grpcurl and its kind call the service without
	// Envoy's proto files: it describes only the public APIs registered.
	reflection.Register(srv)
	return h
}
