package rls

import (
	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// responseMetadata is an answer's dynamic_metadata under
// Options.DynamicMetadata, built as the reference's
// RESPONSE_DYNAMIC_METADATA builds it, so that Envoy's access log and the
// filters after the rate limit read the same fields:
//
//	domain       the request's domain
//	descriptors  one struct a descriptor: entries ["key=value", ...], its
//	             limit override as protobuf text (limit), its hits_addend
//	             (hitsAddend) when set
//	hitsAddend   the request's hits_addend, when not 0
//	metadata     the metadata of the rules of the descriptors that passed
//	             (not over the limit, unlimited left out), merged: the first
//	             descriptor's wins a key both have, structs merged key by key
//
// A descriptor whose limit was replaced, or that matched no rule, brings no
// metadata.
func responseMetadata(req *pb.RateLimitRequest, ds []descriptor, statuses []*pb.RateLimitResponse_DescriptorStatus) *structpb.Struct {
	fields := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.GetDomain())}
	list := make([]*structpb.Value, 0, len(req.GetDescriptors()))
	for _, d := range req.GetDescriptors() {
		if d != nil {
			list = append(list, structpb.NewStructValue(descriptorMetadata(d)))
		}
	}
	fields["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: list})
	if h := req.GetHitsAddend(); h != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	passed := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := range ds {
		if ds[i].unlimited || statuses[i].GetCode() == pb.RateLimitResponse_OVER_LIMIT {
			continue
		}
		mergeMetadata(passed, ds[i].metadata)
	}
	if len(passed.Fields) > 0 {
		fields["metadata"] = structpb.NewStructValue(passed)
	}
	return &structpb.Struct{Fields: fields}
}

func descriptorMetadata(d *pbc.RateLimitDescriptor) *structpb.Struct {
	entries := make([]*structpb.Value, 0, len(d.GetEntries()))
	for _, e := range d.GetEntries() {
		entries = append(entries, structpb.NewStringValue(e.GetKey()+"="+e.GetValue()))
	}
	fields := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
	if d.GetLimit() != nil {
		// protobuf's text form, as the reference writes it: its spacing
		// is not stable across builds (protobuf varies it on purpose), so
		// a reader should not compare it byte for byte.
		fields["limit"] = structpb.NewStringValue(d.GetLimit().String())
	}
	if h := d.GetHitsAddend(); h != nil {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
	}
	return &structpb.Struct{Fields: fields}
}

// mergeMetadata adds src's fields to dst: a key dst lacks is added (the
// value shared, not copied: nothing changes them), a struct both have is
// merged into a copy of dst's (the rules' own structs stay as loaded),
// and anything else dst already has stays.
func mergeMetadata(dst, src *structpb.Struct) {
	for k, v := range src.GetFields() {
		have, ok := dst.Fields[k]
		if !ok {
			dst.Fields[k] = v
			continue
		}
		hs, vs := have.GetStructValue(), v.GetStructValue()
		if hs == nil || vs == nil {
			continue
		}
		merged := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(hs.Fields))}
		mergeMetadata(merged, hs)
		mergeMetadata(merged, vs)
		dst.Fields[k] = structpb.NewStructValue(merged)
	}
}
