package rls

import (
	"maps"
	"slices"
	"strings"
)

// The rules in force as a list, for the status page on --metrics-addr: each
// rule once, named as its metrics name it, with its limits in words.

// ListedRule is one rule of the rules in force, as the status page's JSON
// has it.
type ListedRule struct {
	// Name is the rule's Rule.StatsKey: the domain and each level's
	// key_value, dot-separated, as redcell_rls_* metrics' rule label.
	Name string `json:"name"`
	// Limit is its limits in words ("10/second gcra burst 4; 100/hour"),
	// "unlimited", and the modes that change what it answers.
	Limit string `json:"limit"`
	// Where is the file and line it came from.
	Where string `json:"where"`
}

// List returns every rule of every domain, by domain and then by name.
func (r *Rules) List() []ListedRule {
	if r == nil {
		return nil
	}
	var out []ListedRule
	var walk func(n *node)
	walk = func(n *node) {
		if n.rule != nil {
			out = append(out, ListedRule{Name: n.rule.StatsKey, Limit: n.rule.describe(), Where: n.rule.Where})
		}
		for _, k := range slices.Sorted(maps.Keys(n.children)) {
			walk(n.children[k])
		}
	}
	for _, d := range r.Domains() {
		walk(r.domains[d])
	}
	return out
}

// describe is the rule's Limit in ListedRule.
func (rule *Rule) describe() string {
	if rule.Unlimited {
		return "unlimited"
	}
	var parts []string
	for _, l := range rule.Limits {
		parts = append(parts, l.String())
	}
	s := strings.Join(parts, "; ")
	if rule.ShadowMode {
		s += " (shadow mode: never refuses)"
	}
	if rule.QuotaMode {
		s += " (quota mode)"
	}
	return s
}
