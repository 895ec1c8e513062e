package rls

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every refusal names the file and line, with the reference's reason where
// the reference refuses the same file.
func TestLoadRefusals(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"descriptors: []\n", "f.yaml:1: config file cannot have empty domain"},
		{"", "f.yaml: config file cannot have empty domain"},
		{"domain: d\ndescriptors:\n  - value: v\n", "f.yaml:3: descriptor has empty key"},
		{"domain: d\ndescriptors:\n  - key: k\n  - key: k\n", "f.yaml:4: duplicate descriptor composite key 'd.k'"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n", "f.yaml:5: invalid rate limit unit 'fortnight'"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", "f.yaml:5: invalid rate limit unit ''"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n", "f.yaml:4: should not specify rate limit unit when unlimited"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n", `f.yaml:4: requests_per_unit must be an integer between 0 and 4294967295, not "-1"`},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, name: a, replaces: [{name: a}]}\n", "f.yaml:4: replaces should not contain name of same descriptor"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, replaces: [{name: ''}]}\n", "f.yaml:4: should not have an empty replaces entry"},
		{"domain: d\ndescriptors:\n  - key: k\n    unknown_thing: 1\n", "f.yaml:4: config error, unknown key 'unknown_thing'"},
		{"domain: d\ndescriptors:\n  - key\n", "f.yaml:3: config error, yaml file contains list of type other than map: key"},
		{"domain: d\ndescriptors:\n  - key: k\n    share_threshold: true\n", "f.yaml:3: share_threshold can only be used with wildcard values (containing '*'), but found key 'k'"},
		{"domain: d\ndescriptors:\n  - key: k\n    shadow_mode: perhaps\n", `f.yaml:4: expected true or false, not "perhaps"`},
		{"domain: d\n  bad indent: [\n", "f.yaml:2: error loading config file: mapping values are not allowed in this context"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: leaky}\n", "f.yaml:4: invalid algorithm 'leaky': fixed_window, gcra or sliding_window"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 3}\n", "f.yaml:4: burst is for algorithm: gcra"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 0, algorithm: gcra}\n", "f.yaml:4: algorithm gcra needs requests_per_unit of at least 1"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 20000, algorithm: sliding_window}\n",
			"f.yaml:4: requests_per_unit 20000 is above 10000, the most an exact sliding window holds: set precision"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n      - {unit: second, requests_per_unit: 1}\n      - {unit: second, requests_per_unit: 5}\n",
			"f.yaml:6: two fixed_window limits per second on one descriptor would share one counter"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n      - {unit: second, requests_per_unit: 1}\n      - {unlimited: true}\n",
			"f.yaml:6: an unlimited rate limit must be the descriptor's only one"},
	} {
		_, err := Load([]File{{Name: "f.yaml", Data: []byte(tc.yaml)}}, LoadOptions{})
		require.EqualError(t, err, tc.want, "%q", tc.yaml)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
	}
}

// Two files of one domain are refused, unless merged.
func TestLoadDomainsAcrossFiles(t *testing.T) {
	a := File{Name: "a.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n")}
	b := File{Name: "b.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 2}\n")}
	_, err := Load([]File{a, b}, LoadOptions{})
	require.EqualError(t, err, "b.yaml:1: duplicate domain 'd' in config file")
	r, err := Load([]File{a, b}, LoadOptions{MergeDomains: true})
	require.NoError(t, err)
	require.Equal(t, uint32(2), r.Lookup("d", []Entry{{"b", "x"}}).Rule.Limits[0].RequestsPerUnit)
	require.Equal(t, "d.a", r.Lookup("d", []Entry{{"a", "x"}}).StatsKey)
}

// This server's own keys: the algorithms with their defaults, and several
// limits on one descriptor.
func TestLoadAlgorithms(t *testing.T) {
	r := loadString(t, `domain: d
descriptors:
  - key: g
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: gcra}
  - key: gb
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: GCRA, burst: 0}
  - key: s
    rate_limit: {unit: hour, requests_per_unit: 100000, algorithm: sliding_window, precision: 60}
  - key: many
    rate_limits:
      - {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 20}
      - {unit: hour, requests_per_unit: 1000}
`)
	lim := func(k string) []Limit { return r.Lookup("d", []Entry{{k, "v"}}).Rule.Limits }
	require.Equal(t, []Limit{{RequestsPerUnit: 10, Unit: Minute, Algorithm: GCRA, Burst: 9}}, lim("g"), "a bucket of one unit's requests")
	require.Equal(t, int64(0), lim("gb")[0].Burst)
	require.Equal(t, []Limit{{RequestsPerUnit: 100000, Unit: Hour, Algorithm: SlidingWindow, Precision: 60}}, lim("s"))
	require.Len(t, lim("many"), 2)
	require.Equal(t, "10/second gcra burst 20", lim("many")[0].String())
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`domain: d
descriptors:
  - key: k
    value: "a*b*"
    share_threshold: true
    descriptors:
      - key: n
        rate_limit: {unit: minute, requests_per_unit: 3, name: x, replaces: [{name: y}]}
  - key: k
    rate_limits:
      - {unit: second, requests_per_unit: 5, algorithm: gcra, burst: 2}
      - {unit: hour, requests_per_unit: 9, algorithm: sliding_window, precision: 4}
`), "k", "aXbY", "n", "v")
	f.Add([]byte("domain: x\ndescriptors: [{key: a, rate_limit: {unlimited: true}}]\n"), "a", "", "", "")
	f.Add([]byte("domain: &a x\ndescriptors: *a\n"), "", "", "", "")
	f.Fuzz(func(t *testing.T, data []byte, k1, v1, k2, v2 string) {
		r, err := Load([]File{{Name: "f", Data: data}}, LoadOptions{})
		if err != nil {
			var ce *ConfigError
			if !strings.HasPrefix(err.Error(), "f") || !errorsAs(err, &ce) {
				t.Fatalf("not a ConfigError: %v", err)
			}
			return
		}
		for _, d := range r.Domains() {
			m := r.Lookup(d, []Entry{{k1, v1}, {k2, v2}})
			if m.Rule != nil && len(m.Values) != 2 {
				t.Fatalf("values %v", m.Values)
			}
			r.Lookup(d, []Entry{{k1, v1}})
		}
	})
}

func errorsAs(err error, target **ConfigError) bool {
	ce, ok := err.(*ConfigError)
	*target = ce
	return ok
}
