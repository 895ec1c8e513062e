package config

import (
	"log/slog"
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
		{[]string{"--rls-addr", "127.0.0.1:8081"}, "--rls-addr needs --rls-config or --rls-xds-server, the rules to serve"},
		{[]string{"--rls-config", "x.yaml"}, "--rls-config needs --rls-addr"},
		{[]string{"--rls-addr", "8081", "--rls-config", "x.yaml"}, `--rls-addr "8081": address 8081: missing port in address`},
		{[]string{"--rls-addr", "unix:", "--rls-config", "x.yaml"}, `--rls-addr "unix:": unix: needs the socket's path`},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--rls-tls-client-name", "envoy"},
			"--rls-tls-client-name needs client certificates: --tls-cert-file, --tls-key-file and --tls-ca-cert-file"},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--rls-reload-interval", "-1s"}, "--rls-reload-interval -1s: must not be negative"},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--tls-cert-file", "c"}, "TLS for --rls-addr needs both --tls-cert-file and --tls-key-file"},
	} {
		require.EqualError(t, parseErr(t, nil, tc.args...), tc.want, "%v", tc.args)
	}
	c = parseWith(t, env{}, "--rls-addr", ":8081", "--rls-config", "x.yaml", "--tls-cert-file", "c", "--tls-key-file", "k")
	require.Equal(t, 0, c.TLSPort, "TLS for gRPC alone needs no --tls-port")
}

// The rules over xDS: --rls-xds-server with its node, headers and TLS,
// refused with --rls-config and without --rls-addr, each refusal naming
// its flag.
func TestRLSXDSFlags(t *testing.T) {
	c := parseWith(t, env{"REDCELL_RLS_XDS_HEADERS": "x-token:abc, x-zone:a"}, "--rls-addr", ":8081", "--rls-xds-server", "cp:18001",
		"--rls-xds-tls", "--rls-xds-tls-ca-cert-file", "ca.pem", "--rls-xds-tls-cert-file", "c.pem", "--rls-xds-tls-key-file", "k.pem")
	require.Equal(t, "cp:18001", c.RLSXDSServer)
	require.Equal(t, "default", c.RLSXDSNodeID, "the reference's default node id")
	require.True(t, c.RLSXDSTLS)
	headers, err := ParsePairs(c.RLSXDSHeaders, ":")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x-token": "abc", "x-zone": "a"}, headers)
	for _, a := range c.LogAttrs() {
		if a.(slog.Attr).Key == "rls_xds_headers" {
			require.Equal(t, true, a.(slog.Attr).Value.Any(), "the headers may hold a token: the start-up line says only that they are set")
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rls-xds-server", "cp:18001"}, "--rls-xds-server needs --rls-addr"},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:18001", "--rls-config", "x.yaml"},
			"--rls-config and --rls-xds-server: the rules come from one place, files or an xDS management server, not both"},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp"}, `--rls-xds-server "cp": address cp: missing port in address`},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:1", "--rls-xds-node-id", ""},
			"--rls-xds-node-id must not be empty: the management server keys snapshots by it"},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:1", "--rls-xds-headers", "x-token"}, `--rls-xds-headers: "x-token": not key:value`},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:1", "--rls-xds-node-metadata", "a=1,b"}, `--rls-xds-node-metadata: "b": not key=value`},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:1", "--rls-xds-tls-cert-file", "c.pem"}, "--rls-xds-tls-cert-file needs --rls-xds-tls"},
		{[]string{"--rls-addr", ":8081", "--rls-xds-server", "cp:1", "--rls-xds-tls", "--rls-xds-tls-cert-file", "c.pem"},
			"mutual TLS to the xDS management server needs both --rls-xds-tls-cert-file and --rls-xds-tls-key-file"},
		{[]string{"--rls-addr", ":8081", "--rls-config", "x.yaml", "--rls-healthcheck-addr", "8080"}, `--rls-healthcheck-addr "8080": address 8080: missing port in address`},
	} {
		require.EqualError(t, parseErr(t, nil, tc.args...), tc.want, "%v", tc.args)
	}
}

// envoyGatewayEnv is the environment Envoy Gateway gives its rate limit
// Deployment's container (internal/infrastructure/kubernetes/ratelimit's
// expectedRateLimitContainerEnv, with a Redis backend and Prometheus on).
func envoyGatewayEnv() env {
	return env{
		"RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_IGNOREDOTFILES": "true", "RUNTIME_WATCH_ROOT": "false",
		"LOG_LEVEL": "info", "USE_STATSD": "false", "CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": "envoy-gateway:18001",
		"CONFIG_GRPC_XDS_NODE_ID": "envoy-ratelimit", "GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": "/certs/tls.crt",
		"GRPC_SERVER_TLS_KEY": "/certs/tls.key", "GRPC_SERVER_TLS_CA_CERT": "/certs/ca.crt", "CONFIG_GRPC_XDS_SERVER_USE_TLS": "true",
		"CONFIG_GRPC_XDS_CLIENT_TLS_CERT": "/certs/tls.crt", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": "/certs/tls.key",
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": "/certs/ca.crt", "FORCE_START_WITHOUT_INITIAL_CONFIG": "true",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis.redis.svc:6379", "USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": ":19001",
		"PROMETHEUS_MAPPER_YAML": "/etc/statsd-exporter/conf.yaml",
	}
}

// Under --rls-env (REDCELL_RLS_ENV, or the program run as ratelimit),
// Envoy Gateway's environment is read with the reference's meaning: the
// service on 0.0.0.0:8081 with TLS, the rules from envoy-gateway:18001 over
// mutual TLS as node envoy-ratelimit, metrics on :19001, the health check
// on :8080, the state in memory; what is the reference's own (its Redis,
// statsd, the exporter's mapping) is named in a warning, the Redis URL's
// value left out.
func TestRLSEnvReadsEnvoyGatewaysEnvironment(t *testing.T) {
	e := envoyGatewayEnv()
	e["REDCELL_RLS_ENV"] = "true"
	c := parseWith(t, e)
	require.Equal(t, "0.0.0.0:8081", c.RLSAddr)
	require.Equal(t, "0.0.0.0:8080", c.RLSHealthcheckAddr)
	require.Equal(t, "", c.RLSConfig)
	require.Equal(t, "envoy-gateway:18001", c.RLSXDSServer)
	require.Equal(t, "envoy-ratelimit", c.RLSXDSNodeID)
	require.True(t, c.RLSXDSTLS)
	require.Equal(t, []string{"/certs/ca.crt", "/certs/tls.crt", "/certs/tls.key", ""},
		[]string{c.RLSXDSTLSCACertFile, c.RLSXDSTLSCertFile, c.RLSXDSTLSKeyFile, c.RLSXDSTLSServerName})
	require.Equal(t, []string{"/certs/tls.crt", "/certs/tls.key", ""}, []string{c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile},
		"GRPC_SERVER_TLS_CA_CERT is not a variable the reference reads: no client certificate is asked for")
	require.Equal(t, ":19001", c.MetricsAddr)
	require.Equal(t, "INFO", c.LogLevel.String())
	require.True(t, c.InMemory)
	var settings []string
	for _, w := range c.Warnings() {
		settings = append(settings, w.Setting)
		require.NotContains(t, w.Text, "redis.redis.svc", "a value may hold a password")
	}
	require.Equal(t, []string{"FORCE_START_WITHOUT_INITIAL_CONFIG", "GRPC_SERVER_TLS_CA_CERT", "PROMETHEUS_MAPPER_YAML",
		"REDIS_SOCKET_TYPE", "REDIS_URL", "USE_STATSD"}, settings)
	require.Contains(t, c.Warnings()[4].Text, "REDIS_URL is envoyproxy/ratelimit's Redis: redcell keeps the state in its own keyspace; ignored")

	// The image's REDCELL_ defaults give way to the reference's variables
	// the Deployment sets, and win over the reference's defaults; flags
	// win over all.
	e["REDCELL_METRICS_ADDR"], e["REDCELL_RLS_ADDR"] = ":9379", "127.0.0.1:7000"
	c = parseWith(t, e, "--rls-xds-node-id", "mine")
	require.Equal(t, ":19001", c.MetricsAddr, "PROMETHEUS_ADDR, set, wins over the image's REDCELL_METRICS_ADDR")
	require.Equal(t, "127.0.0.1:7000", c.RLSAddr, "REDCELL_RLS_ADDR wins over GRPC_HOST and GRPC_PORT's defaults")
	require.Equal(t, "mine", c.RLSXDSNodeID, "flags win")
	e["GRPC_PORT"] = "9001"
	require.Equal(t, "0.0.0.0:9001", parseWith(t, e).RLSAddr, "GRPC_PORT, set, wins over REDCELL_RLS_ADDR")

	c = parseWith(t, env{"REDCELL_RLS_ENV": "1", "RUNTIME_ROOT": "/srv", "RUNTIME_SUBDIRECTORY": "ratelimit", "GRPC_PORT": "9000",
		"SHADOW_MODE": "true", "RESPONSE_DYNAMIC_METADATA": "true", "QUOTA_MODE": "false", "LOG_LEVEL": "trace", "MERGE_DOMAIN_CONFIG": "true",
		"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true", "NEAR_LIMIT_RATIO": "0.5", "LIMIT_REMAINING_HEADER": "X-Left"})
	require.Equal(t, "/srv/ratelimit/config", c.RLSConfig, "CONFIG_TYPE FILE: the reference's runtime directory")
	require.Equal(t, "0.0.0.0:9000", c.RLSAddr)
	require.True(t, c.RLSShadowMode)
	require.True(t, c.RLSResponseDynamicMetadata)
	require.False(t, c.RLSQuotaMode)
	require.True(t, c.RLSMergeDomains)
	require.True(t, c.RLSStopIncrementOverLimit)
	require.Equal(t, 0.5, c.RLSNearLimitRatio)
	require.Equal(t, "X-Left", c.RLSRemainingHeader)
	require.Empty(t, c.RLSLimitHeader, "not set: the default name")
	require.Equal(t, "unix:/run/rl.sock", parseWith(t, env{"REDCELL_RLS_ENV": "1", "GRPC_UDS": "/run/rl.sock", "GRPC_PORT": "9000"}).RLSAddr,
		"GRPC_UDS instead of GRPC_HOST and GRPC_PORT, as the reference")
	require.Equal(t, "envoy.internal", parseWith(t, env{"REDCELL_RLS_ENV": "1", "GRPC_SERVER_USE_TLS": "true",
		"GRPC_SERVER_TLS_CERT": "/certs/tls.crt", "GRPC_SERVER_TLS_KEY": "/certs/tls.key", "GRPC_CLIENT_TLS_CACERT": "/certs/ca.crt",
		"GRPC_CLIENT_TLS_SAN": "envoy.internal"}).RLSTLSClientName)
	require.Equal(t, "DEBUG", c.LogLevel.String())

	c = parseWith(t, env{"SHADOW_MODE": "true", "GRPC_PORT": "9000"}, "--rls-addr", ":1", "--rls-config", "x.yaml")
	require.False(t, c.RLSShadowMode, "without --rls-env the reference's variables are nobody's")

	for _, tc := range []struct {
		env  env
		want string
	}{
		{env{"CONFIG_TYPE": "CONSUL"}, `--rls-env: CONFIG_TYPE "CONSUL": FILE or GRPC_XDS_SOTW`},
		{env{"SHADOW_MODE": "yes please"}, `--rls-env: invalid value "yes please" for SHADOW_MODE: true or false`},
		{env{"LOG_LEVEL": "loud"}, `--rls-env: LOG_LEVEL "loud": trace, debug, info, warn, error, fatal or panic`},
		{env{"NEAR_LIMIT_RATIO": "1.5"}, `--rls-near-limit-ratio 1.5: a share of the limit, above 0 and at most 1`},
		{env{"LIMIT_RESET_HEADER": "X Reset"}, `--rls-reset-header "X Reset": not an HTTP header name`},
	} {
		tc.env["REDCELL_RLS_ENV"] = "true"
		require.EqualError(t, parseErr(t, tc.env), tc.want)
	}
}

// Run as ratelimit (Envoy Gateway's /bin/ratelimit), the program reads the
// reference's environment, unless REDCELL_RLS_ENV says otherwise.
func TestProgramEnvironRunAsRatelimit(t *testing.T) {
	base := []string{"GRPC_PORT=8081"}
	require.Equal(t, base, ProgramEnviron("/usr/local/bin/redcell", base))
	require.Equal(t, []string{"GRPC_PORT=8081", "REDCELL_RLS_ENV=true"}, ProgramEnviron("/bin/ratelimit", base))
	require.Equal(t, []string{"GRPC_PORT=8081"}, base, "the caller's slice is left alone")
	off := []string{"REDCELL_RLS_ENV=false"}
	require.Equal(t, off, ProgramEnviron("ratelimit", off))
}
