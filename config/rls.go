package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"time"
)

// addRLSFlags registers the flags of Envoy's rate limit service (package
// rls), each with the setting of envoyproxy/ratelimit it stands for.
func addRLSFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.RLSAddr, "rls-addr", "",
		"serve Envoy's rate limit service (gRPC envoy.service.ratelimit.v3 and grpc.health.v1) at this `host:port`, "+
			"e.g. 0.0.0.0:8081, with TLS when --tls-cert-file and --tls-key-file are set (empty: off)")
	fs.StringVar(&cfg.RLSConfig, "rls-config", "",
		"the rate limit rules: a YAML `path` in envoyproxy/ratelimit's format, a file or a directory of them "+
			"(dot files left out; a Kubernetes ConfigMap mount works), reloaded when it changes")
	fs.BoolVar(&cfg.RLSResponseHeaders, "rls-response-headers", false,
		"add RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset to the answers, as envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED")
	fs.StringVar(&cfg.RLSKeyPrefix, "rls-key-prefix", "",
		"begin every key the rate limit service keeps with this `prefix`, as envoyproxy/ratelimit's CACHE_KEY_PREFIX")
	fs.BoolVar(&cfg.RLSMergeDomains, "rls-merge-domains", false,
		"merge files that describe the same domain, as envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG (without it a domain seen twice is refused)")
	fs.DurationVar(&cfg.RLSReloadInterval, "rls-reload-interval", time.Second,
		"how often --rls-config is looked at for changes; 0: loaded once, at the start")
}

// validateRLS checks the rate limit service's flags.
func (c Config) validateRLS() error {
	switch {
	case c.RLSAddr == "" && c.RLSConfig != "":
		return errors.New("--rls-config needs --rls-addr")
	case c.RLSAddr == "":
		return nil
	case c.RLSConfig == "":
		return errors.New("--rls-addr needs --rls-config, the rules to serve")
	case c.RLSReloadInterval < 0:
		return fmt.Errorf("--rls-reload-interval %v: must not be negative", c.RLSReloadInterval)
	}
	if _, _, err := net.SplitHostPort(c.RLSAddr); err != nil {
		return fmt.Errorf("--rls-addr %q: %w", c.RLSAddr, err)
	}
	return nil
}
