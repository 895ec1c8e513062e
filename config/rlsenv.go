package config

import (
	"flag"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/redcell/redcell/internal/cliflag"
)

// envoyproxy/ratelimit's environment, read under --rls-env (or when the
// program runs as `ratelimit`, as Envoy Gateway starts it): each variable
// the reference reads is turned into the redcell flag of the same meaning,
// with the reference's default where redcell's differs, before the REDCELL_
// variables and the command line, which win. What concerns only the
// reference's own machinery (its Redis, statsd, tracing) is accepted and
// named in a warning; what redcell cannot do as the reference does stops
// the start. docs/envoy.md lists every variable and what becomes of it.

// ProgramEnviron is environ for the program run as argv0: as `ratelimit`
// (Envoy Gateway's command for the reference, /bin/ratelimit), it reads the
// reference's environment (REDCELL_RLS_ENV=true) unless REDCELL_RLS_ENV
// says otherwise.
func ProgramEnviron(argv0 string, environ []string) []string {
	if path.Base(filepath.ToSlash(argv0)) != "ratelimit" {
		return environ
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, envName("rls-env")+"=") {
			return environ
		}
	}
	return append(environ[:len(environ):len(environ)], envName("rls-env")+"=true")
}

// referenceEnv reads the reference's variables, through lookup, as flag
// settings.
type referenceEnv struct {
	lookup   func(string) (string, bool)
	settings []referenceSetting
	warnings []Warning
	err      error
}

// referenceSetting is a flag's value from the reference's variables: set
// by one of them (explicit), or the reference's default.
type referenceSetting struct {
	flag, value, from string
	explicit          bool
}

// readReferenceEnv reads the reference's variables into settings, and
// returns the warnings of those it accepts without effect.
func readReferenceEnv(lookup func(string) (string, bool)) (*referenceEnv, error) {
	r := &referenceEnv{lookup: lookup}
	r.service()
	r.rules()
	r.operations()
	r.ignored()
	return r, r.err
}

// apply sets fs's flags from the settings a variable set (explicit), or
// from the reference's defaults. The defaults go under the REDCELL_
// variables, and the variables set over them: an image's REDCELL_
// defaults (REDCELL_METRICS_ADDR) give way to the reference's variable set
// in the Deployment (PROMETHEUS_ADDR), not to the reference's default.
func (r *referenceEnv) apply(fs *flag.FlagSet, explicit bool) error {
	for _, s := range r.settings {
		if s.explicit != explicit {
			continue
		}
		if err := cliflag.Set(fs, s.flag, s.value); err != nil {
			return fmt.Errorf("--rls-env: invalid value %q for %s: %w", s.value, s.from, err)
		}
	}
	return nil
}

// service: where the service listens, its TLS, its health check, its
// answers.
func (r *referenceEnv) service() {
	if path, ok := r.lookup("GRPC_UDS"); ok && path != "" {
		r.set("rls-addr", "unix:"+path, "GRPC_UDS") // instead of GRPC_HOST and GRPC_PORT, as the reference
	} else {
		r.set("rls-addr", net.JoinHostPort(r.get("GRPC_HOST", "0.0.0.0"), r.get("GRPC_PORT", "8081")), "GRPC_HOST, GRPC_PORT")
	}
	r.set("rls-healthcheck-addr", net.JoinHostPort(r.get("HOST", "0.0.0.0"), r.get("PORT", "8080")), "HOST, PORT")
	r.setBool("rls-healthcheck-needs-rules", "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED")
	// The state lives in this process, as the reference's lived in a Redis
	// it did not own: on disk only where asked (REDCELL_DIR with
	// REDCELL_IN_MEMORY=false), since Envoy Gateway's pod has a read-only
	// root file system and no volume for it.
	r.set("in-memory", "true", "--rls-env")
	if r.isTrue("GRPC_SERVER_USE_TLS") {
		r.set("tls-cert-file", r.get("GRPC_SERVER_TLS_CERT", ""), "GRPC_SERVER_TLS_CERT")
		r.set("tls-key-file", r.get("GRPC_SERVER_TLS_KEY", ""), "GRPC_SERVER_TLS_KEY")
		if ca := r.get("GRPC_CLIENT_TLS_CACERT", ""); ca != "" {
			r.set("tls-ca-cert-file", ca, "GRPC_CLIENT_TLS_CACERT")
		}
		if san, ok := r.lookup("GRPC_CLIENT_TLS_SAN"); ok && san != "" {
			r.set("rls-tls-client-name", san, "GRPC_CLIENT_TLS_SAN")
		}
	}
	r.warn("GRPC_SERVER_TLS_CA_CERT", "is not envoyproxy/ratelimit's (it reads GRPC_CLIENT_TLS_CACERT): neither checks client certificates with it")
	r.setBool("rls-response-headers", "LIMIT_RESPONSE_HEADERS_ENABLED")
	for flag, name := range map[string]string{"rls-limit-header": "LIMIT_LIMIT_HEADER", "rls-remaining-header": "LIMIT_REMAINING_HEADER",
		"rls-reset-header": "LIMIT_RESET_HEADER"} {
		r.setIfSet(flag, name)
	}
	r.setIfSet("rls-key-prefix", "CACHE_KEY_PREFIX")
	r.setBool("rls-shadow-mode", "SHADOW_MODE")
	r.setBool("rls-quota-mode", "QUOTA_MODE")
	r.setBool("rls-response-dynamic-metadata", "RESPONSE_DYNAMIC_METADATA")
	r.setIfSet("rls-near-limit-ratio", "NEAR_LIMIT_RATIO")
	r.setBool("rls-stop-increment-over-limit", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")
}

// rules: files, or an xDS management server.
func (r *referenceEnv) rules() {
	r.setBool("rls-merge-domains", "MERGE_DOMAIN_CONFIG")
	switch t := strings.ToUpper(r.get("CONFIG_TYPE", "FILE")); t {
	case "FILE":
		r.set("rls-config", filepath.Join(r.get("RUNTIME_ROOT", "/srv/runtime_data/current"), r.get("RUNTIME_SUBDIRECTORY", ""),
			r.get("RUNTIME_APPDIRECTORY", "config")), "RUNTIME_ROOT, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY")
	case "GRPC_XDS_SOTW":
		r.set("rls-xds-server", r.get("CONFIG_GRPC_XDS_SERVER_URL", "localhost:18000"), "CONFIG_GRPC_XDS_SERVER_URL")
		r.set("rls-xds-node-id", r.get("CONFIG_GRPC_XDS_NODE_ID", "default"), "CONFIG_GRPC_XDS_NODE_ID")
		r.set("rls-xds-node-metadata", r.nodeMetadata(), "CONFIG_GRPC_XDS_NODE_METADATA")
		r.set("rls-xds-headers", r.get("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", ""), "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS")
		if r.isTrue("CONFIG_GRPC_XDS_SERVER_USE_TLS") {
			r.set("rls-xds-tls", "true", "CONFIG_GRPC_XDS_SERVER_USE_TLS")
			r.set("rls-xds-tls-ca-cert-file", r.get("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", ""), "CONFIG_GRPC_XDS_SERVER_TLS_CACERT")
			r.set("rls-xds-tls-cert-file", r.get("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", ""), "CONFIG_GRPC_XDS_CLIENT_TLS_CERT")
			r.set("rls-xds-tls-key-file", r.get("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", ""), "CONFIG_GRPC_XDS_CLIENT_TLS_KEY")
			r.set("rls-xds-tls-server-name", r.get("CONFIG_GRPC_XDS_SERVER_TLS_SAN", ""), "CONFIG_GRPC_XDS_SERVER_TLS_SAN")
		}
		for _, name := range []string{"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
			"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "XDS_CLIENT_BACKOFF_JITTER"} {
			r.warn(name, "is not offered: redcell reconnects to the management server after 100ms, doubling up to 5s")
		}
		r.warn("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "is not offered: an xDS response may be up to gRPC's default, 4 MiB")
		r.warn("FORCE_START_WITHOUT_INITIAL_CONFIG",
			"needs no setting: redcell always starts, and answers UNAVAILABLE until the management server's first snapshot")
	default:
		r.fail(fmt.Sprintf("CONFIG_TYPE %q: FILE or GRPC_XDS_SOTW", t))
	}
}

// nodeMetadata is CONFIG_GRPC_XDS_NODE_METADATA as the reference reads it:
// key=value pairs, any other entry left out.
func (r *referenceEnv) nodeMetadata() string {
	var kept []string
	for _, e := range strings.Split(r.get("CONFIG_GRPC_XDS_NODE_METADATA", ""), ",") {
		if k, _, ok := strings.Cut(e, "="); ok && k != "" {
			kept = append(kept, e)
		}
	}
	return strings.Join(kept, ",")
}

// operations: logs and metrics.
func (r *referenceEnv) operations() {
	if v, ok := r.lookup("LOG_LEVEL"); ok {
		level, known := map[string]string{"trace": "debug", "debug": "debug", "info": "info", "warn": "warn", "warning": "warn",
			"error": "error", "fatal": "error", "panic": "error"}[strings.ToLower(v)]
		if !known {
			r.fail(fmt.Sprintf("LOG_LEVEL %q: trace, debug, info, warn, error, fatal or panic", v))
		}
		r.set("log-level", level, "LOG_LEVEL")
	}
	if v, ok := r.lookup("LOG_FORMAT"); ok {
		format := "text"
		if v == "json" {
			format = "json"
		}
		r.set("log-format", format, "LOG_FORMAT")
	}
	if r.isTrue("USE_PROMETHEUS") {
		r.set("metrics-addr", r.get("PROMETHEUS_ADDR", ":9090"), "PROMETHEUS_ADDR")
		if p, ok := r.lookup("PROMETHEUS_PATH"); ok && p != "/metrics" {
			r.warn("PROMETHEUS_PATH", "is not offered: the metrics are at /metrics")
		}
	}
	r.warn("PROMETHEUS_MAPPER_YAML", "is not needed: redcell's metrics are Prometheus's own, named redcell_rls_* (docs/envoy.md)")
	r.warn("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "is not offered: redcell_rls_request_duration_seconds is in seconds")
}

// ignoredVariables are the reference's settings of its own machinery, and
// why redcell has no use for them.
var ignoredVariables = map[string][]string{
	"is envoyproxy/ratelimit's Redis: redcell keeps the state in its own keyspace": {
		"BACKEND_TYPE", "REDIS_SOCKET_TYPE", "REDIS_TYPE", "REDIS_URL", "REDIS_POOL_SIZE", "REDIS_AUTH", "REDIS_TLS", "REDIS_TLS_CLIENT_CERT",
		"REDIS_TLS_CLIENT_KEY", "REDIS_TLS_CACERT", "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT",
		"REDIS_CLUSTER_PIPELINE_PARALLELISM", "REDIS_PERSECOND", "REDIS_PERSECOND_SOCKET_TYPE", "REDIS_PERSECOND_TYPE", "REDIS_PERSECOND_URL",
		"REDIS_PERSECOND_POOL_SIZE", "REDIS_PERSECOND_AUTH", "REDIS_PERSECOND_TLS", "REDIS_SENTINEL_AUTH", "REDIS_PERSECOND_SENTINEL_AUTH",
		"REDIS_PERSECOND_PIPELINE_WINDOW", "REDIS_PERSECOND_PIPELINE_LIMIT", "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
		"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "REDIS_TIMEOUT", "REDIS_PERSECOND_TIMEOUT", "REDIS_POOL_ON_EMPTY_BEHAVIOR",
		"REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", "REDIS_STARTUP_INITIAL_INTERVAL", "REDIS_STARTUP_MAX_INTERVAL",
		"REDIS_STARTUP_MAX_ELAPSED_TIME", "MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH",
		"MEMCACHE_TLS", "MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY", "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
		"EXPIRATION_JITTER_MAX_SECONDS", "LOCAL_CACHE_SIZE_IN_BYTES",
	},
	"is envoyproxy/ratelimit's statsd: redcell's metrics are Prometheus's (USE_PROMETHEUS)": {
		"USE_STATSD", "STATSD_HOST", "STATSD_PORT", "USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS", "EXTRA_TAGS", "STATS_FLUSH_INTERVAL",
		"DISABLE_STATS",
	},
	"is not offered: redcell does not export traces": {
		"TRACING_ENABLED", "TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID", "TRACING_EXPORTER_PROTOCOL",
		"TRACING_SAMPLING_RATE", "OTEL_EXPORTER_OTLP_ENDPOINT",
	},
	"is not offered: gRPC connections are not aged out":                                                   {"GRPC_MAX_CONNECTION_AGE", "GRPC_MAX_CONNECTION_AGE_GRACE"},
	"is not offered: pprof is --pprof-addr, the domains in force are on the status page (--metrics-addr)": {"DEBUG_HOST", "DEBUG_PORT"},
}

// ignored warns of each of ignoredVariables set.
func (r *referenceEnv) ignored() {
	for why, names := range ignoredVariables {
		for _, name := range names {
			r.warn(name, why)
		}
	}
	sortWarnings(r.warnings)
}

func (r *referenceEnv) get(name, def string) string {
	if v, ok := r.lookup(name); ok {
		return v
	}
	return def
}

// isTrue reads a boolean as the reference does (strconv.ParseBool); a
// value it cannot read stops the start, as it stops the reference's.
func (r *referenceEnv) isTrue(name string) bool {
	v, ok := r.lookup(name)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(fmt.Sprintf("invalid value %q for %s: true or false", v, name))
	}
	return b
}

// setIfSet sets flag to variable name's value, when it is set.
func (r *referenceEnv) setIfSet(flag, name string) {
	if v, ok := r.lookup(name); ok {
		r.set(flag, v, name)
	}
}

func (r *referenceEnv) setBool(flag, name string) {
	if _, ok := r.lookup(name); ok {
		r.set(flag, strconv.FormatBool(r.isTrue(name)), name)
	}
}

// set records flag's value from the variables named in from (", "
// between them), explicit when one of them is set.
func (r *referenceEnv) set(flag, value, from string) {
	explicit := false
	for _, name := range strings.Split(from, ", ") {
		if _, ok := r.lookup(name); ok {
			explicit = true
		}
	}
	r.settings = append(r.settings, referenceSetting{flag: flag, value: value, from: from, explicit: explicit})
}

// warn names variable name, if set, as accepted and without effect.
func (r *referenceEnv) warn(name, why string) {
	// The value is left out: it may hold a password (REDIS_AUTH,
	// REDIS_URL's).
	if _, ok := r.lookup(name); ok {
		r.warnings = append(r.warnings, Warning{Setting: name, Text: name + " " + why + "; ignored"})
	}
}

func sortWarnings(ws []Warning) {
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Setting < ws[j].Setting })
}

func (r *referenceEnv) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("--rls-env: %s", msg)
	}
}
