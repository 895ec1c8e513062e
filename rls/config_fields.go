package rls

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The loader's reading of one descriptor, its limits and its replaces,
// field by field as the reference's YAML has them.

// descriptors loads a list of descriptors under d, whose composite key so
// far is parent ("domain." at the top).
func (l *loader) descriptors(d *node, parent string, list *yaml.Node) error {
	if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return l.errorf(list, "descriptors must be a list")
	}
	for _, item := range list.Content {
		if err := l.descriptor(d, parent, item); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) descriptor(d *node, parent string, n *yaml.Node) error {
	var key, value string
	var rateLimit, rateLimits, children, metadata *yaml.Node
	var shadow, quota, detailed, share, valueToMetric bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "key":
			err = l.scalar(v, &key)
		case "value":
			err = l.scalar(v, &value)
		case "rate_limit":
			rateLimit = v
		case "rate_limits":
			rateLimits = v
		case "descriptors":
			children = v
		case "shadow_mode":
			err = l.boolean(v, &shadow)
		case "quota_mode":
			err = l.boolean(v, &quota)
		case "detailed_metric":
			err = l.boolean(v, &detailed)
		case "share_threshold":
			err = l.boolean(v, &share)
		case "value_to_metric":
			err = l.boolean(v, &valueToMetric)
		case "metadata":
			metadata = v
		}
		if err != nil {
			return err
		}
	}
	if key == "" {
		return l.errorf(n, "descriptor has empty key")
	}
	final := key
	if value != "" {
		final += "_" + value
	}
	composite := parent + final
	if _, dup := d.children[final]; dup {
		return l.errorf(n, "duplicate descriptor composite key '%s'", composite)
	}
	wild := strings.Contains(final, "*")
	if share && !wild {
		return l.errorf(n, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", final)
	}
	child := &node{children: map[string]*node{}, shareThreshold: share, valueToMetric: valueToMetric}
	if rateLimit != nil || rateLimits != nil {
		rule := &Rule{ShadowMode: shadow, QuotaMode: quota, DetailedMetric: detailed, StatsKey: composite,
			Where: l.file, Metadata: metadataStruct(metadata)}
		if n.Line > 0 { // an xDS resource's tree has no lines
			rule.Where = fmt.Sprintf("%s:%d", l.file, n.Line)
		}
		if err := l.limits(rule, rateLimit, rateLimits); err != nil {
			return err
		}
		child.rule = rule
	}
	if wild {
		d.wildcards = append(d.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
	}
	d.children[final] = child
	return l.descriptors(child, composite+".", children)
}

// limits reads a descriptor's rate_limit and rate_limits into rule.
func (l *loader) limits(rule *Rule, one, many *yaml.Node) error {
	var blocks []*yaml.Node
	if one != nil && !(one.Kind == yaml.ScalarNode && one.Tag == "!!null") {
		blocks = append(blocks, one)
	}
	if many != nil && !(many.Kind == yaml.ScalarNode && many.Tag == "!!null") {
		if many.Kind != yaml.SequenceNode {
			return l.errorf(many, "rate_limits must be a list of rate limits")
		}
		blocks = append(blocks, many.Content...)
	}
	type slot struct {
		a Algorithm
		u Unit
	}
	seen := map[slot]bool{}
	for _, b := range blocks {
		lim, unlimited, err := l.limit(b)
		if err != nil {
			return err
		}
		if unlimited {
			if len(blocks) > 1 {
				return l.errorf(b, "an unlimited rate limit must be the descriptor's only one")
			}
			rule.Unlimited = true
			rule.Limits = []Limit{lim} // its name and replaces still count
			return nil
		}
		if s := (slot{lim.Algorithm, lim.Unit}); seen[s] {
			return l.errorf(b, "two %s limits per %s on one descriptor would share one counter", lim.Algorithm, lim.Unit)
		} else {
			seen[s] = true
		}
		rule.Limits = append(rule.Limits, lim)
	}
	return nil
}

// limit reads one rate_limit block, and whether it is unlimited.
func (l *loader) limit(n *yaml.Node) (lim Limit, unlimited bool, err error) {
	if n.Kind != yaml.MappingNode {
		return lim, false, l.errorf(n, "a rate limit must be a mapping")
	}
	var unit, algorithm string
	var rpu int64
	burst, precision := int64(-1), int64(-1)
	var unitNode, burstNode, precisionNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "unit":
			err, unitNode = l.scalar(v, &unit), v
		case "requests_per_unit":
			err = l.integer(v, "requests_per_unit", 0, math.MaxUint32, &rpu)
		case "unlimited":
			err = l.boolean(v, &unlimited)
		case "name":
			err = l.scalar(v, &lim.Name)
		case "algorithm":
			err = l.scalar(v, &algorithm)
			if a, ok := algorithmNames[strings.ToLower(algorithm)]; ok {
				lim.Algorithm = a
			} else if err == nil {
				err = l.errorf(v, "invalid algorithm '%s': fixed_window, gcra or sliding_window", algorithm)
			}
		case "burst":
			err, burstNode = l.integer(v, "burst", 0, math.MaxInt32, &burst), v
		case "precision":
			err, precisionNode = l.integer(v, "precision", 0, 10000, &precision), v
		case "replaces":
			lim.Replaces, err = l.replaces(v)
		}
		if err != nil {
			return lim, false, err
		}
	}
	lim.RequestsPerUnit = uint32(rpu)
	u, valid := unitNames[strings.ToLower(unit)]
	switch {
	case unlimited && valid:
		return lim, true, l.errorf(unitNode, "should not specify rate limit unit when unlimited")
	case unlimited:
	case !valid:
		at := unitNode
		if at == nil {
			at = n
		}
		return lim, false, l.errorf(at, "invalid rate limit unit '%s'", unit)
	}
	lim.Unit = u
	for _, r := range lim.Replaces {
		if r == "" {
			return lim, unlimited, l.errorf(n, "should not have an empty replaces entry")
		}
		if r == lim.Name {
			return lim, unlimited, l.errorf(n, "replaces should not contain name of same descriptor")
		}
	}
	if burst >= 0 && lim.Algorithm != GCRA {
		return lim, unlimited, l.errorf(burstNode, "burst is for algorithm: gcra")
	}
	if precision >= 0 && lim.Algorithm != SlidingWindow {
		return lim, unlimited, l.errorf(precisionNode, "precision is for algorithm: sliding_window")
	}
	if unlimited {
		return lim, true, nil
	}
	switch lim.Algorithm {
	case GCRA:
		if lim.RequestsPerUnit == 0 {
			return lim, false, l.errorf(n, "algorithm gcra needs requests_per_unit of at least 1")
		}
		lim.Burst = burst
		if burst < 0 {
			lim.Burst = int64(lim.RequestsPerUnit) - 1
		}
	case SlidingWindow:
		if lim.RequestsPerUnit == 0 {
			return lim, false, l.errorf(n, "algorithm sliding_window needs requests_per_unit of at least 1")
		}
		lim.Precision = max(precision, 0)
		if lim.Precision == 0 && int64(lim.RequestsPerUnit) > l.opts.WindowLogMax {
			return lim, false, l.errorf(n, "requests_per_unit %d is above %d, the most an exact sliding window holds: set precision",
				lim.RequestsPerUnit, l.opts.WindowLogMax)
		}
	}
	return lim, false, nil
}

func (l *loader) replaces(n *yaml.Node) ([]string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, l.errorf(n, "replaces must be a list of {name: ...}")
	}
	var names []string
	for _, e := range n.Content {
		var name string
		for i := 0; i+1 < len(e.Content); i += 2 {
			if e.Content[i].Value == "name" {
				if err := l.scalar(e.Content[i+1], &name); err != nil {
					return nil, err
				}
			}
		}
		names = append(names, name)
	}
	return names, nil
}

// metadataStruct is a descriptor's free-form metadata as the reference
// turns it into a protobuf Struct for RESPONSE_DYNAMIC_METADATA (its YAML
// read as generic values: numbers as numbers, true and false as booleans,
// the rest as strings); nil when there is none.
func metadataStruct(n *yaml.Node) *structpb.Struct {
	if n == nil || n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return nil
	}
	return metadataValue(n).GetStructValue()
}

func metadataValue(n *yaml.Node) *structpb.Value {
	switch n.Kind {
	case yaml.AliasNode:
		return metadataValue(n.Alias)
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return metadataValue(n.Content[0])
		}
		return structpb.NewNullValue()
	case yaml.MappingNode:
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(n.Content)/2)}
		for i := 0; i+1 < len(n.Content); i += 2 {
			s.Fields[n.Content[i].Value] = metadataValue(n.Content[i+1])
		}
		return structpb.NewStructValue(s)
	case yaml.SequenceNode:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(n.Content))}
		for i, e := range n.Content {
			l.Values[i] = metadataValue(e)
		}
		return structpb.NewListValue(l)
	}
	var v any
	if n.Decode(&v) != nil {
		return structpb.NewStringValue(n.Value)
	}
	switch v := v.(type) {
	case nil:
		return structpb.NewNullValue()
	case bool:
		return structpb.NewBoolValue(v)
	case int:
		return structpb.NewNumberValue(float64(v))
	case int64:
		return structpb.NewNumberValue(float64(v))
	case uint64:
		return structpb.NewNumberValue(float64(v))
	case float64:
		return structpb.NewNumberValue(v)
	}
	return structpb.NewStringValue(n.Value) // a timestamp, say, stays as written
}
