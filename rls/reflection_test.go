package rls

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The service describes itself over gRPC reflection, as grpcurl asks it:
// this test knows no proto file, lists the services, fetches the rate
// limit service's descriptors and calls ShouldRateLimit with a request
// written as JSON, as `grpcurl -d '{...}' host:port
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` does
// (docs/envoy.md), and reads the answer the same way.
func TestReflectionServesACallWithoutProtoFiles(t *testing.T) {
	r := newRig(t, loadString(t, twoAnHour), Options{}, referenceNow)
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	ask := func(req *rpb.ServerReflectionRequest) *rpb.ServerReflectionResponse {
		require.NoError(t, stream.Send(req))
		resp, err := stream.Recv()
		require.NoError(t, err)
		require.Nil(t, resp.GetErrorResponse())
		return resp
	}

	var services []string
	for _, s := range ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}).
		GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	require.Contains(t, services, "envoy.service.ratelimit.v3.RateLimitService")
	require.Contains(t, services, "grpc.health.v1.Health")

	// The file defining the service and every file it imports, as grpcurl
	// builds its registry: in any order, so added until all resolve.
	const service = "envoy.service.ratelimit.v3.RateLimitService"
	protos := map[string]*descriptorpb.FileDescriptorProto{}
	pending := []*rpb.ServerReflectionRequest{{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}}}
	for len(pending) > 0 {
		req := pending[0]
		pending = pending[1:]
		for _, b := range ask(req).GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := &descriptorpb.FileDescriptorProto{}
			require.NoError(t, proto.Unmarshal(b, fd))
			if _, seen := protos[fd.GetName()]; seen {
				continue
			}
			protos[fd.GetName()] = fd
			for _, dep := range fd.GetDependency() {
				if _, seen := protos[dep]; !seen {
					pending = append(pending, &rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
				}
			}
		}
	}
	files := &protoregistry.Files{}
	for len(protos) > 0 {
		progress := false
		for name, fd := range protos {
			f, err := protodesc.NewFile(fd, files)
			if err != nil {
				continue // an import not registered yet
			}
			require.NoError(t, files.RegisterFile(f))
			delete(protos, name)
			progress = true
		}
		require.True(t, progress, "descriptors that never resolve: %v", protos)
	}
	d, err := files.FindDescriptorByName(service)
	require.NoError(t, err)
	method := d.(protoreflect.ServiceDescriptor).Methods().ByName("ShouldRateLimit")
	require.NotNil(t, method)

	call := func() map[string]any {
		in := dynamicpb.NewMessage(method.Input())
		require.NoError(t, protojson.UnmarshalOptions{Resolver: dynamicpb.NewTypes(files)}.Unmarshal(
			[]byte(`{"domain": "api", "descriptors": [{"entries": [{"key": "user", "value": "a"}]}]}`), in))
		out := dynamicpb.NewMessage(method.Output())
		require.NoError(t, conn.Invoke(ctx, "/"+service+"/ShouldRateLimit", in, out))
		js, err := protojson.Marshal(out)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(js, &got))
		return got
	}
	first := call()
	require.Equal(t, "OK", first["overallCode"])
	status := first["statuses"].([]any)[0].(map[string]any)
	require.Equal(t, "OK", status["code"])
	require.Equal(t, float64(1), status["limitRemaining"], "two an hour, one taken")
	call()
	require.Equal(t, "OVER_LIMIT", call()["overallCode"])
}
