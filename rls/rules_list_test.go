package rls

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The rules in force as the status page lists them: every rule of every
// domain, by domain and name, with its limits in words and where it came
// from; a nested rule under its parent, an unlimited one and the modes.
func TestRulesList(t *testing.T) {
	r := loadString(t, `domain: web
descriptors:
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}
`)
	require.Equal(t, []ListedRule{{Name: "web.path_/login", Limit: "5/minute sliding window", Where: "test.yaml:3"}}, r.List())

	r = loadString(t, `domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 4}
    descriptors:
      - key: plan
        value: free
        rate_limits:
          - {unit: hour, requests_per_unit: 100}
          - {unit: second, requests_per_unit: 1}
  - key: internal
    rate_limit: {unlimited: true}
  - key: trial
    shadow_mode: true
    rate_limit: {unit: day, requests_per_unit: 3}
`)
	var names, limits []string
	for _, l := range r.List() {
		names, limits = append(names, l.Name), append(limits, l.Limit)
	}
	require.Equal(t, []string{"api.internal", "api.trial", "api.user", "api.user.plan_free"}, names)
	require.Equal(t, []string{"unlimited", "3/day (shadow mode: never refuses)", "10/second gcra burst 4", "100/hour; 1/second"}, limits)
	require.Nil(t, (*Rules)(nil).List(), "no rules yet")
}
