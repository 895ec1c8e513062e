package rls

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// The xDS resources as configuration: each RateLimitConfig becomes the YAML
// tree the reference's ConfigXdsProtoToYaml makes of it (every field under
// the YAML key of the same name, the unit by its name), which the one
// loader reads as it reads a file. So a rule means the same, and is refused
// for the same reason, whichever way it came.

// RateLimitConfigType is the type URL of the resources: envoyproxy/ratelimit's
// configuration, as its CONFIG_TYPE=GRPC_XDS_SOTW subscribes to it.
const RateLimitConfigType = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// xdsFiles converts the resources of one xDS response into Files for Load,
// each named after its resource, in the order of their names (a snapshot
// cache sends them in any order, and the loader's answer must not depend on
// it); the error names the resource that is not a RateLimitConfig.
func xdsFiles(resources []*anypb.Any) ([]File, error) {
	files := make([]File, 0, len(resources))
	for i, res := range resources {
		conf := &rlsconf.RateLimitConfig{}
		if res.GetTypeUrl() != RateLimitConfigType {
			return nil, fmt.Errorf("resource %d: type %s, not %s", i, res.GetTypeUrl(), RateLimitConfigType)
		}
		if err := anypb.UnmarshalTo(res, conf, proto.UnmarshalOptions{}); err != nil {
			return nil, fmt.Errorf("resource %d: %w", i, err)
		}
		name := conf.GetName()
		if name == "" {
			name = fmt.Sprintf("resource %d", i)
		}
		files = append(files, File{Name: name, root: configNode(conf)})
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// configNode is a RateLimitConfig as the YAML tree of a configuration file.
func configNode(c *rlsconf.RateLimitConfig) *yaml.Node {
	return mapping("domain", str(c.GetDomain()), "descriptors", descriptorsNode(c.GetDescriptors()))
}

func descriptorsNode(ds []*rlsconf.RateLimitDescriptor) *yaml.Node {
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, d := range ds {
		kv := []any{"key", str(d.GetKey()), "value", str(d.GetValue())}
		if p := d.GetRateLimit(); p != nil {
			replaces := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, r := range p.GetReplaces() {
				replaces.Content = append(replaces.Content, mapping("name", str(r.GetName())))
			}
			kv = append(kv, "rate_limit", mapping(
				"requests_per_unit", scalar("!!int", strconv.FormatUint(uint64(p.GetRequestsPerUnit()), 10)),
				"unit", str(p.GetUnit().String()),
				"unlimited", boolNode(p.GetUnlimited()),
				"name", str(p.GetName()),
				"replaces", replaces))
		}
		kv = append(kv, "descriptors", descriptorsNode(d.GetDescriptors()),
			"shadow_mode", boolNode(d.GetShadowMode()),
			"detailed_metric", boolNode(d.GetDetailedMetric()),
			"quota_mode", boolNode(d.GetQuotaMode()))
		if md := d.GetMetadata(); md != nil {
			kv = append(kv, "metadata", structNode(md))
		}
		list.Content = append(list.Content, mapping(kv...))
	}
	return list
}

// structNode is a protobuf Struct as YAML, each value tagged with its type
// so that the loader reads back the same value (metadataValue).
func structNode(s *structpb.Struct) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for k, v := range s.GetFields() {
		m.Content = append(m.Content, str(k), valueNode(v))
	}
	return m
}

func valueNode(v *structpb.Value) *yaml.Node {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structNode(k.StructValue)
	case *structpb.Value_ListValue:
		l := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range k.ListValue.GetValues() {
			l.Content = append(l.Content, valueNode(e))
		}
		return l
	case *structpb.Value_StringValue:
		return str(k.StringValue)
	case *structpb.Value_BoolValue:
		return boolNode(k.BoolValue)
	case *structpb.Value_NumberValue:
		switch f := k.NumberValue; {
		case math.IsNaN(f):
			return scalar("!!float", ".nan")
		case math.IsInf(f, 1):
			return scalar("!!float", ".inf")
		case math.IsInf(f, -1):
			return scalar("!!float", "-.inf")
		default:
			return scalar("!!float", strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return scalar("!!null", "null")
}

// mapping is a YAML mapping of kv: a key (a string) then its node, in turn.
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func str(s string) *yaml.Node { return scalar("!!str", s) }

func boolNode(b bool) *yaml.Node { return scalar("!!bool", strconv.FormatBool(b)) }
