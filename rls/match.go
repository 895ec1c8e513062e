package rls

import "strings"

// Entry is one key and value of a request's descriptor.
type Entry struct{ Key, Value string }

// Match is what the rules say of one descriptor.
type Match struct {
	Rule *Rule // nil: no rule matches, nothing is limited
	// Values are the values the descriptor's counter keys use: the
	// request's, or a share_threshold wildcard's pattern at the levels
	// matched by one.
	Values []string
	// StatsKey names the rule in metrics: the rule's, or the request's own
	// key_values under detailed_metric.
	StatsKey string
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
	for i, e := range entries {
		final := e.Key + "_" + e.Value
		next := n.children[final]
		matchedWildcard := ""
		if next == nil {
			for _, w := range n.wildcards {
				if wildcardMatch(w.parts, final) {
					next, matchedWildcard = n.children[w.key], w.key
					break
				}
			}
		}
		if next == nil {
			next = n.children[e.Key]
		}
		if matchedWildcard != "" && next != nil && next.shareThreshold {
			if shared == nil {
				shared = map[int]string{}
			}
			shared[i] = strings.TrimPrefix(matchedWildcard, e.Key+"_")
		}
		if next != nil && next.rule != nil && i == len(entries)-1 {
			m.Rule = next.rule
		}
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
	m.StatsKey = m.Rule.StatsKey
	if m.Rule.DetailedMetric {
		var b strings.Builder
		b.WriteString(domain)
		for i, e := range entries {
			b.WriteByte('.')
			b.WriteString(e.Key)
			// As the reference: every value, "key_" for an empty one,
			// unless a share_threshold pattern is in play, which names
			// the shared levels by their pattern and leaves empty
			// values out.
			if p, ok := shared[i]; ok {
				b.WriteString("_" + p)
			} else if e.Value != "" || shared == nil {
				b.WriteString("_" + e.Value)
			}
		}
		m.StatsKey = b.String()
	}
	return m
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
