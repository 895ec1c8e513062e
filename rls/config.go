package rls

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The rules: envoyproxy/ratelimit's YAML configuration, read into a tree
// per domain that Lookup walks as the reference's GetLimit does. Loading is
// pure: files in, rules or the first error out, with the file's name, the
// line and the reason.

// Unit is a limit's unit of time, numbered as Envoy's
// RateLimitResponse.RateLimit.Unit.
type Unit int32

// Units.
const (
	UnitUnknown Unit = 0
	Second      Unit = 1
	Minute      Unit = 2
	Hour        Unit = 3
	Day         Unit = 4
	Month       Unit = 5 // 30 days, as the reference's
	Year        Unit = 6 // 365 days
	Week        Unit = 7
)

var unitSeconds = map[Unit]int64{Second: 1, Minute: 60, Hour: 3600, Day: 86400, Week: 7 * 86400, Month: 30 * 86400, Year: 365 * 86400}

var unitNames = map[string]Unit{"second": Second, "minute": Minute, "hour": Hour, "day": Day, "week": Week, "month": Month, "year": Year}

// Seconds is the unit's length, 0 for UnitUnknown or a number no unit has.
func (u Unit) Seconds() int64 { return unitSeconds[u] }

// String is the unit's name in lower case, as the configuration spells it.
func (u Unit) String() string {
	for name, v := range unitNames {
		if v == u {
			return name
		}
	}
	return "unknown"
}

// Algorithm is how a limit decides.
type Algorithm uint8

// Algorithms.
const (
	// FixedWindow is the reference's: windows of one unit aligned to the
	// epoch, every hit counted (CL.COUNT).
	FixedWindow Algorithm = iota
	// GCRA is CL.THROTTLE's: burst+1 at once, refilled at
	// requests_per_unit a unit.
	GCRA
	// SlidingWindow is CL.WINDOW's: at most requests_per_unit in any unit,
	// an exact log (precision 0) or precision sub-window counters.
	SlidingWindow
)

var algorithmNames = map[string]Algorithm{"fixed_window": FixedWindow, "gcra": GCRA, "sliding_window": SlidingWindow}

func (a Algorithm) String() string {
	switch a {
	case GCRA:
		return "gcra"
	case SlidingWindow:
		return "sliding_window"
	}
	return "fixed_window"
}

// Limit is one limit of a rule: a rate_limit block.
type Limit struct {
	// Name is the limit's name (the reference's rate_limit.name), which
	// another matched limit's Replaces removes.
	Name            string
	Replaces        []string
	RequestsPerUnit uint32
	Unit            Unit
	Algorithm       Algorithm
	// Burst is GCRA's max_burst: burst+1 requests at once. The default is
	// RequestsPerUnit-1, a bucket of one unit's requests.
	Burst int64
	// Precision is the sliding window's sub-windows; 0, the default, is
	// the exact log.
	Precision int64
}

// Rule is what a descriptor of the configuration says: unlimited, or one
// or more limits (the strictest answers), with its modes.
type Rule struct {
	Unlimited      bool
	Limits         []Limit
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	// StatsKey names the rule in metrics, as the reference names its stats:
	// the domain and each level's key_value, dot-separated
	// ("rl.database_users").
	StatsKey string
	// Where is the file and line the rule came from.
	Where string
}

// node is one level of a domain's tree.
type node struct {
	children  map[string]*node // by "key_value", or "key" for a rule without a value
	wildcards []wildcard       // the children whose value has a *, in file order
	rule      *Rule
	// shareThreshold: requests matched by this wildcard share one counter,
	// keyed by the pattern instead of the value.
	shareThreshold bool
}

// wildcard is a "key_value" with a * in it, split at its *s.
type wildcard struct {
	key   string
	parts []string
}

// Rules are the loaded configuration. They never change once loaded and are
// safe for concurrent use.
type Rules struct {
	domains map[string]*node
	// Files are the files loaded, in load order.
	Files []string
}

// Domains lists the domains the rules know, sorted.
func (r *Rules) Domains() []string {
	var ds []string
	for d := range r.domains {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	return ds
}

// File is one configuration file's name (as errors show it) and contents.
type File struct {
	Name string
	Data []byte
}

// LoadOptions are the loader's settings. The zero value is the reference's
// defaults.
type LoadOptions struct {
	// MergeDomains lets several files describe one domain, merged (the
	// reference's MERGE_DOMAIN_CONFIG); without it a domain seen twice is
	// an error.
	MergeDomains bool
	// WindowLogMax is the largest requests_per_unit a sliding window of
	// precision 0 (an exact log) may have: --window-log-max. 0 is
	// window.DefaultLogMax.
	WindowLogMax int64
}

// ConfigError is a file the loader refused: its name, the line (0 when the
// file as a whole is wrong) and why.
type ConfigError struct {
	File   string
	Line   int
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Reason)
}

// validKeys are the keys a configuration may use, at any level, as the
// reference checks them (one set, not per level), with this server's own:
// algorithm, burst, precision and rate_limits.
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true, "unit": true,
	"requests_per_unit": true, "unlimited": true, "shadow_mode": true, "quota_mode": true, "name": true,
	"replaces": true, "detailed_metric": true, "value_to_metric": true, "share_threshold": true, "metadata": true,
	"algorithm": true, "burst": true, "precision": true, "rate_limits": true,
}

// Load reads files into rules, in order, or returns the first error, a
// *ConfigError.
func Load(files []File, opts LoadOptions) (*Rules, error) {
	if opts.WindowLogMax == 0 {
		opts.WindowLogMax = 10000
	}
	r := &Rules{domains: map[string]*node{}}
	for _, f := range files {
		l := loader{file: f.Name, opts: opts}
		if err := l.load(r, f.Data); err != nil {
			return nil, err
		}
		r.Files = append(r.Files, f.Name)
	}
	return r, nil
}

type loader struct {
	file string
	opts LoadOptions
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) error {
	e := &ConfigError{File: l.file, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

func (l *loader) load(r *Rules, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return l.yamlError(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if err := l.checkKeys(root); err != nil {
		return err
	}
	var domain string
	var descriptors *yaml.Node
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			switch k.Value {
			case "domain":
				if err := l.scalar(v, &domain); err != nil {
					return err
				}
			case "descriptors":
				descriptors = v
			}
		}
	} else if root.Kind != 0 && !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		return l.errorf(root, "the file must be a mapping with a domain and its descriptors")
	}
	if domain == "" {
		return l.errorf(root, "config file cannot have empty domain")
	}
	d, seen := r.domains[domain]
	if seen && !l.opts.MergeDomains {
		return l.errorf(root, "duplicate domain '%s' in config file", domain)
	}
	if !seen {
		d = &node{children: map[string]*node{}}
	}
	if err := l.descriptors(d, domain+".", descriptors); err != nil {
		return err
	}
	r.domains[domain] = d
	return nil
}

// yamlError is a YAML syntax error with its line, which yaml.v3 writes as
// "yaml: line N: reason".
func (l *loader) yamlError(err error) error {
	msg := err.Error()
	var line int
	if _, scanErr := fmt.Sscanf(msg, "yaml: line %d:", &line); scanErr == nil {
		if i := strings.Index(msg, ": "); i >= 0 {
			if j := strings.Index(msg[i+2:], ": "); j >= 0 {
				msg = msg[i+2+j+2:]
			}
		}
		return &ConfigError{File: l.file, Line: line, Reason: "error loading config file: " + msg}
	}
	return &ConfigError{File: l.file, Reason: "error loading config file: " + strings.TrimPrefix(msg, "yaml: ")}
}

// checkKeys refuses a key the configuration does not know, anywhere but
// under metadata, which is free-form, as the reference's validateYamlKeys.
func (l *loader) checkKeys(n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "") {
				return l.errorf(k, "config error, key is not of type string: %s", k.Value)
			}
			if !validKeys[k.Value] {
				return l.errorf(k, "config error, unknown key '%s'", k.Value)
			}
			if k.Value == "metadata" {
				continue
			}
			if err := l.checkKeys(v); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Kind != yaml.MappingNode {
				return l.errorf(e, "config error, yaml file contains list of type other than map: %s", e.Value)
			}
			if err := l.checkKeys(e); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return l.errorf(n, "config error, aliases are not supported")
	}
	return nil
}

func (l *loader) scalar(n *yaml.Node, out *string) error {
	if n.Kind != yaml.ScalarNode {
		return l.errorf(n, "expected a string")
	}
	if n.Tag != "!!null" {
		*out = n.Value
	}
	return nil
}

func (l *loader) boolean(n *yaml.Node, out *bool) error {
	if n.Kind != yaml.ScalarNode || n.Decode(out) != nil {
		return l.errorf(n, "expected true or false, not %q", n.Value)
	}
	return nil
}

func (l *loader) integer(n *yaml.Node, name string, lo, hi int64, out *int64) error {
	var v int64
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || v < lo || v > hi {
		return l.errorf(n, "%s must be an integer between %d and %d, not %q", name, lo, hi, n.Value)
	}
	*out = v
	return nil
}

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
	var rateLimit, rateLimits, children *yaml.Node
	var shadow, quota, detailed, share bool
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
			var b bool
			err = l.boolean(v, &b)
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
	child := &node{children: map[string]*node{}, shareThreshold: share}
	if rateLimit != nil || rateLimits != nil {
		rule := &Rule{ShadowMode: shadow, QuotaMode: quota, DetailedMetric: detailed, StatsKey: composite,
			Where: fmt.Sprintf("%s:%d", l.file, n.Line)}
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
