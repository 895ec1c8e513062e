package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The rate limit service's flags: off by default, each refusal naming the
// flag, the environment setting them as any other, and TLS from the
// certificate flags without --tls-port.
func TestRLSFlags(t *testing.T) {
	c := parseWith(t, env{})
	require.Equal(t, "", c.RLSAddr, "off by default")
	require.Equal(t, time.Second, c.RLSReloadInterval)

	c = parseWith(t, env{"REDCELL_RLS_CONFIG": "/etc/ratelimit"}, "--rls-addr", "127.0.0.1:8081", "--rls-response-headers", "--rls-key-prefix", "rl:")
	require.Equal(t, "127.0.0.1:8081", c.RLSAddr)
	require.Equal(t, "/etc/ratelimit", c.RLSConfig)
	require.True(t, c.RLSResponseHeaders)
	require.Equal(t, "rl:", c.RLSKeyPrefix)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rls-addr", "127.0.0.1:8081"}, "--rls-addr needs --rls-config, the rules to serve"},
		{[]string{"--rls-config", "x.yaml"}, "--rls-config needs --rls-addr"},
		{[]string{"--rls-addr", "8081", "--rls-config", "x.yaml"}, `--rls-addr "8081": address 8081: missing port in address`},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--rls-reload-interval", "-1s"}, "--rls-reload-interval -1s: must not be negative"},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--tls-cert-file", "c"}, "TLS for --rls-addr needs both --tls-cert-file and --tls-key-file"},
	} {
		require.EqualError(t, parseErr(t, nil, tc.args...), tc.want, "%v", tc.args)
	}
	c = parseWith(t, env{}, "--rls-addr", ":8081", "--rls-config", "x.yaml", "--tls-cert-file", "c", "--tls-key-file", "k")
	require.Equal(t, 0, c.TLSPort, "TLS for gRPC alone needs no --tls-port")
}
