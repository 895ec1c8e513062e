package rls

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The rules: envoyproxy/ratelimit's YAML configuration, read into a tree
// per domain that Lookup walks as the reference's GetLimit does. Loading is
// pure: files in, rules or the first error out, with the file's name, the
// line and the reason.

// File is one configuration file's name (as errors show it) and contents.
type File struct {
	Name string
	Data []byte

	// root, when set, is the configuration already as a YAML tree, which
	// Data is not: an xDS resource converted (xdsFile), whose nodes have
	// no lines, so that its errors name the resource alone.
	root *yaml.Node
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
		if err := l.load(r, f); err != nil {
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

func (l *loader) load(r *Rules, f File) error {
	root := f.root
	if root == nil {
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return l.yamlError(err)
		}
		root = &doc
	}
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
