package rls

import (
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Entry is one key and value of a request's descriptor.
type Entry struct{ Key, Value string }

// Match is what the rules say of one descriptor.
type Match struct {
	Rule *Rule // nil: no rule matches, nothing is limited
	// Values are the values the descriptor's counter keys use: the
	// request's, or a share_threshold wildcard's pattern at the levels
	// matched by one.
	Values []string
	// StatsKey names the rule in metrics: the rule's, the request's own
	// key_values under detailed_metric, or its values at the levels that
	// have value_to_metric.
	StatsKey string
	// Metadata is the rule's metadata for RESPONSE_DYNAMIC_METADATA, nil
	// where the reference's lookup drops it (below).
	Metadata *structpb.Struct
}

// level is how one entry of a descriptor matched its level of the rules.
type level struct {
	wildcard string // the wildcard key_value it matched, "" for none
	byKey    bool   // matched by its key alone, no value
	node     *node
}

// Lookup finds the rule for a descriptor of domain as envoyproxy/ratelimit
// does: at each level an exact key_value first, then the level's wildcards
// in file order, then the key alone; the rule applies only when the
// descriptor ends at its level (a request deeper or shallower than the
// rules matches nothing). An unknown domain matches nothing.
func (r *Rules) Lookup(domain string, entries []Entry) Match {
	var m Match
	if r == nil {
		return m
	}
	n := r.domains[domain]
	if n == nil {
		return m
	}
	var shared map[int]string // entry index -> share_threshold pattern value
	var buf [8]level
	levels := buf[:0]
	valueToMetric := false
	for i, e := range entries {
		final := e.Key + "_" + e.Value
		next := n.children[final]
		lv := level{}
		if next == nil {
			for _, w := range n.wildcards {
				if wildcardMatch(w.parts, final) {
					next, lv.wildcard = n.children[w.key], w.key
					break
				}
			}
		}
		if next == nil {
			next, lv.byKey = n.children[e.Key], true
		}
		if lv.wildcard != "" && next != nil && next.shareThreshold {
			if shared == nil {
				shared = map[int]string{}
			}
			shared[i] = strings.TrimPrefix(lv.wildcard, e.Key+"_")
		}
		if next != nil && next.rule != nil && i == len(entries)-1 {
			m.Rule = next.rule
		}
		lv.node = next
		levels = append(levels, lv)
		valueToMetric = valueToMetric || (next != nil && next.valueToMetric)
		if next == nil || len(next.children) == 0 {
			break
		}
		n = next
	}
	if m.Rule == nil {
		return m
	}
	m.Values = make([]string, len(entries))
	for i, e := range entries {
		m.Values[i] = e.Value
		if p, ok := shared[i]; ok {
			m.Values[i] = p
		}
	}
	m.StatsKey, m.Metadata = m.Rule.StatsKey, m.Rule.Metadata
	switch {
	case m.Rule.DetailedMetric:
		m.StatsKey = detailedStatsKey(domain, entries, shared)
		// The reference rebuilds a detailed rule that ends its branch
		// without its metadata.
		if len(levels[len(levels)-1].node.children) == 0 {
			m.Metadata = nil
		}
	case valueToMetric:
		if k := valueToMetricStatsKey(domain, entries, levels, shared); k != m.StatsKey {
			// Rebuilt under the new key, as the reference does, which
			// leaves the metadata behind.
			m.StatsKey, m.Metadata = k, nil
		}
	}
	return m
}

// detailedStatsKey names a detailed_metric rule's stats as the reference
// does: every value, "key_" for an empty one, unless a share_threshold
// pattern is in play, which names the shared levels by their pattern and
// leaves empty values out.
func detailedStatsKey(domain string, entries []Entry, shared map[int]string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		if p, ok := shared[i]; ok {
			b.WriteString("_" + p)
		} else if e.Value != "" || shared == nil {
			b.WriteString("_" + e.Value)
		}
	}
	return b.String()
}

// valueToMetricStatsKey names a rule's stats as the reference's
// value_to_metric does: each level by its key and the value it matched,
// which is the request's own value at a level with value_to_metric that
// matched by its key alone or by a wildcard (not share_threshold's, whose
// pattern stays).
func valueToMetricStatsKey(domain string, entries []Entry, levels []level, shared map[int]string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		lv := levels[i]
		v := ""
		switch {
		case lv.wildcard != "" && shared[i] != "":
			v = shared[i]
		case lv.wildcard != "" && lv.node.valueToMetric:
			v = e.Value
		case lv.wildcard != "":
			v = strings.TrimPrefix(lv.wildcard, e.Key+"_")
		case !lv.byKey || lv.node.valueToMetric:
			v = e.Value
		}
		if v != "" {
			b.WriteString("_" + v)
		}
	}
	return b.String()
}

// wildcardMatch reports whether value matches a pattern split at its *s,
// each * standing for any run of characters, none included.
func wildcardMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	fixed := 0
	for _, p := range parts {
		fixed += len(p)
	}
	if len(value) < fixed {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}
