package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// addRLSFlags registers the flags of Envoy's rate limit service (package
// rls), each with the setting of envoyproxy/ratelimit it stands for.
func addRLSFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RLSAddr, "rls-addr", "",
		"serve Envoy's rate limit service (gRPC envoy.service.ratelimit.v3 and grpc.health.v1) at this `host:port`, "+
			"e.g. 0.0.0.0:8081, or unix:path for a Unix socket, with TLS when --tls-cert-file and --tls-key-file are set (empty: off)")
	fs.StringVar(&cfg.RLSConfig, "rls-config", "",
		"the rate limit rules: a YAML `path` in envoyproxy/ratelimit's format, a file or a directory of them "+
			"(dot files left out; a Kubernetes ConfigMap mount works), reloaded when it changes")
	fs.BoolVar(&cfg.RLSResponseHeaders, "rls-response-headers", false,
		"add RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset to the answers, as envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED")
	fs.StringVar(&cfg.RLSKeyPrefix, "rls-key-prefix", "",
		"begin every key the rate limit service keeps with this `prefix`, as envoyproxy/ratelimit's CACHE_KEY_PREFIX")
	fs.BoolVar(&cfg.RLSMergeDomains, "rls-merge-domains", false,
		"merge files (or xDS resources) that describe the same domain, as envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG "+
			"(without it a domain seen twice is refused)")
	fs.DurationVar(&cfg.RLSReloadInterval, "rls-reload-interval", time.Second,
		"how often --rls-config is looked at for changes; 0: loaded once, at the start")
	fs.BoolVar(&cfg.RLSShadowMode, "rls-shadow-mode", false,
		"answer OK whatever the rules decide, each descriptor's status left as decided and every such answer counted "+
			"(redcell_rls_global_shadow_mode_total), as envoyproxy/ratelimit's SHADOW_MODE")
	fs.BoolVar(&cfg.RLSQuotaMode, "rls-quota-mode", false,
		"treat every descriptor as a quota_mode rule: the answer is OVER_LIMIT only when all of them are over, as envoyproxy/ratelimit's QUOTA_MODE")
	fs.BoolVar(&cfg.RLSStopIncrementOverLimit, "rls-stop-increment-over-limit", false,
		"when one of a request's limits would go over, count the request against none of its other limits, "+
			"as envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")
	fs.Float64Var(&cfg.RLSNearLimitRatio, "rls-near-limit-ratio", 0.8,
		"the share of a limit past which hits count as near it in redcell_rls_near_limit_total, as envoyproxy/ratelimit's NEAR_LIMIT_RATIO")
	fs.StringVar(&cfg.RLSLimitHeader, "rls-limit-header", "",
		"the `name` of --rls-response-headers' limit header (empty: RateLimit-Limit), as envoyproxy/ratelimit's LIMIT_LIMIT_HEADER")
	fs.StringVar(&cfg.RLSRemainingHeader, "rls-remaining-header", "",
		"the `name` of --rls-response-headers' remaining header (empty: RateLimit-Remaining), as envoyproxy/ratelimit's LIMIT_REMAINING_HEADER")
	fs.StringVar(&cfg.RLSResetHeader, "rls-reset-header", "",
		"the `name` of --rls-response-headers' reset header (empty: RateLimit-Reset), as envoyproxy/ratelimit's LIMIT_RESET_HEADER")
	fs.BoolVar(&cfg.RLSResponseDynamicMetadata, "rls-response-dynamic-metadata", false,
		"put the domain, the descriptors and the metadata of the rules that passed in every answer's dynamic_metadata, "+
			"for Envoy's access log, as envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA")
	fs.StringVar(&cfg.RLSHealthcheckAddr, "rls-healthcheck-addr", "",
		"serve envoyproxy/ratelimit's HTTP health check, GET /healthcheck answering 200 OK, at this `host:port` "+
			"(its HOST and PORT; empty: off)")
	fs.BoolVar(&cfg.RLSHealthcheckNeedsRules, "rls-healthcheck-needs-rules", false,
		"answer /healthcheck 500 until the rules in force have a domain, as envoyproxy/ratelimit's HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED")
	fs.StringVar(&cfg.RLSTLSClientName, "rls-tls-client-name", "",
		"accept on --rls-addr only client certificates that name this `name` (a DNS name of theirs), as envoyproxy/ratelimit's "+
			"GRPC_CLIENT_TLS_SAN; needs --tls-ca-cert-file")
	fs.BoolVar(&cfg.RLSEnv, "rls-env", false,
		"read envoyproxy/ratelimit's environment variables (GRPC_PORT, CONFIG_TYPE, CONFIG_GRPC_XDS_*, USE_PROMETHEUS, ...) "+
			"with its meaning and defaults, under the REDCELL_ variables and the flags, and keep the state in memory; "+
			"on when the program runs as `ratelimit` (Envoy Gateway's /bin/ratelimit)")
	addRLSXDSFlags(fs, cfg)
}

// addRLSXDSFlags registers the flags of the rules over xDS (rls.XDS).
func addRLSXDSFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RLSXDSServer, "rls-xds-server", "",
		"take the rate limit rules from this xDS management server, `host:port`, over ADS (RateLimitConfig resources), as "+
			"envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW; instead of --rls-config. Until its first snapshot the service answers UNAVAILABLE")
	fs.StringVar(&cfg.RLSXDSNodeID, "rls-xds-node-id", "default",
		"the node `id` the management server keys this server's snapshots by (CONFIG_GRPC_XDS_NODE_ID)")
	fs.StringVar(&cfg.RLSXDSNodeMetadata, "rls-xds-node-metadata", "",
		"the node's metadata, `k=v[,k=v]` (CONFIG_GRPC_XDS_NODE_METADATA)")
	fs.StringVar(&cfg.RLSXDSHeaders, "rls-xds-headers", "",
		"metadata sent on the stream to the management server, `k:v[,k:v]` (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS)")
	fs.BoolVar(&cfg.RLSXDSTLS, "rls-xds-tls", false,
		"connect to the management server over TLS (CONFIG_GRPC_XDS_SERVER_USE_TLS)")
	fs.StringVar(&cfg.RLSXDSTLSCACertFile, "rls-xds-tls-ca-cert-file", "",
		"CA certificates, a PEM `file`, trusted besides the system's for the management server's certificate (CONFIG_GRPC_XDS_SERVER_TLS_CACERT)")
	fs.StringVar(&cfg.RLSXDSTLSCertFile, "rls-xds-tls-cert-file", "",
		"the client certificate presented to the management server, a PEM `file`, for mutual TLS (CONFIG_GRPC_XDS_CLIENT_TLS_CERT)")
	fs.StringVar(&cfg.RLSXDSTLSKeyFile, "rls-xds-tls-key-file", "",
		"the client certificate's private key, a PEM `file` (CONFIG_GRPC_XDS_CLIENT_TLS_KEY)")
	fs.StringVar(&cfg.RLSXDSTLSServerName, "rls-xds-tls-server-name", "",
		"the `name` the management server's certificate must hold (default: the host of --rls-xds-server; CONFIG_GRPC_XDS_SERVER_TLS_SAN)")
}

// RLSUnixPath returns the socket's path when addr, an --rls-addr, names a
// Unix socket (unix:path).
func RLSUnixPath(addr string) (path string, ok bool) {
	return strings.CutPrefix(addr, "unix:")
}

// validateRLS checks the rate limit service's flags.
func (c Config) validateRLS() error {
	switch {
	case c.RLSAddr == "" && c.RLSConfig != "":
		return errors.New("--rls-config needs --rls-addr")
	case c.RLSAddr == "" && c.RLSXDSServer != "":
		return errors.New("--rls-xds-server needs --rls-addr")
	case c.RLSAddr == "" && c.RLSHealthcheckAddr != "":
		return errors.New("--rls-healthcheck-addr needs --rls-addr")
	case c.RLSAddr == "":
		return nil
	case c.RLSConfig != "" && c.RLSXDSServer != "":
		return errors.New("--rls-config and --rls-xds-server: the rules come from one place, files or an xDS management server, not both")
	case c.RLSConfig == "" && c.RLSXDSServer == "":
		return errors.New("--rls-addr needs --rls-config or --rls-xds-server, the rules to serve")
	case c.RLSReloadInterval < 0:
		return fmt.Errorf("--rls-reload-interval %v: must not be negative", c.RLSReloadInterval)
	case !(c.RLSNearLimitRatio > 0 && c.RLSNearLimitRatio <= 1):
		return fmt.Errorf("--rls-near-limit-ratio %v: a share of the limit, above 0 and at most 1", c.RLSNearLimitRatio)
	}
	for flag, name := range map[string]string{"--rls-limit-header": c.RLSLimitHeader, "--rls-remaining-header": c.RLSRemainingHeader,
		"--rls-reset-header": c.RLSResetHeader} {
		if name != "" && !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("%s %q: not an HTTP header name", flag, name)
		}
	}
	if path, unix := RLSUnixPath(c.RLSAddr); unix {
		if path == "" {
			return fmt.Errorf("--rls-addr %q: unix: needs the socket's path", c.RLSAddr)
		}
	} else if _, _, err := net.SplitHostPort(c.RLSAddr); err != nil {
		return fmt.Errorf("--rls-addr %q: %w", c.RLSAddr, err)
	}
	if c.RLSTLSClientName != "" && (c.TLSCertFile == "" || c.TLSCACertFile == "" || c.TLSAuthClients == "no") {
		return errors.New("--rls-tls-client-name needs client certificates: --tls-cert-file, --tls-key-file and --tls-ca-cert-file")
	}
	if c.RLSHealthcheckAddr != "" {
		if _, _, err := net.SplitHostPort(c.RLSHealthcheckAddr); err != nil {
			return fmt.Errorf("--rls-healthcheck-addr %q: %w", c.RLSHealthcheckAddr, err)
		}
	}
	if c.RLSXDSServer == "" {
		return nil
	}
	return c.validateRLSXDS()
}

// validateRLSXDS checks the flags of the rules over xDS.
func (c Config) validateRLSXDS() error {
	if _, _, err := net.SplitHostPort(c.RLSXDSServer); err != nil {
		return fmt.Errorf("--rls-xds-server %q: %w", c.RLSXDSServer, err)
	}
	if c.RLSXDSNodeID == "" {
		return errors.New("--rls-xds-node-id must not be empty: the management server keys snapshots by it")
	}
	if _, err := ParsePairs(c.RLSXDSNodeMetadata, "="); err != nil {
		return fmt.Errorf("--rls-xds-node-metadata: %w", err)
	}
	if _, err := ParsePairs(c.RLSXDSHeaders, ":"); err != nil {
		return fmt.Errorf("--rls-xds-headers: %w", err)
	}
	if !c.RLSXDSTLS {
		for flag, v := range map[string]string{"--rls-xds-tls-ca-cert-file": c.RLSXDSTLSCACertFile, "--rls-xds-tls-cert-file": c.RLSXDSTLSCertFile,
			"--rls-xds-tls-key-file": c.RLSXDSTLSKeyFile, "--rls-xds-tls-server-name": c.RLSXDSTLSServerName} {
			if v != "" {
				return fmt.Errorf("%s needs --rls-xds-tls", flag)
			}
		}
	}
	if (c.RLSXDSTLSCertFile == "") != (c.RLSXDSTLSKeyFile == "") {
		return errors.New("mutual TLS to the xDS management server needs both --rls-xds-tls-cert-file and --rls-xds-tls-key-file")
	}
	return nil
}

// ParsePairs reads "key<sep>value[,key<sep>value]" (spaces around each
// trimmed; empty: none) into a map, as envoyproxy/ratelimit reads its maps
// (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS with ":", the node's metadata
// with "=").
func ParsePairs(s, sep string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: not key%svalue", pair, sep)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}
