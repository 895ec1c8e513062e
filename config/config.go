// Package config is redcell's configuration: the Config the command line
// and the REDCELL_* environment set, its defaults and its checks, the
// --help manual, and the version line.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

// Config is everything the command line sets. Parse fills it, over the
// defaults below and the ones --help shows; its zero value is not a
// configuration that Validate accepts.
type Config struct {
	Bind        string
	Port        int
	Dir         string
	RequirePass string
	Shards      int
	// FlushInterval is how often changes are written to disk; 0 writes
	// (and syncs) before every reply.
	FlushInterval time.Duration
	// InMemory keeps state in memory only, lost on restart: no --dir.
	InMemory bool
	// MaxMemory (bytes, 0: none) and MaxMemoryPolicy are Redis's maxmemory
	// and maxmemory-policy (noeviction or volatile-ttl).
	MaxMemory       int64
	MaxMemoryPolicy string
	// MaxKeyLen bounds a created key's name; MaxMemoryClients the replies
	// waiting for all clients together (Redis's maxmemory-clients).
	MaxKeyLen        int64
	MaxMemoryClients int64
	// WindowLogMax bounds the entries of one CL.WINDOW exact log.
	WindowLogMax int64
	// EventLoops is how many event loops serve plain connections (the
	// default: server.DefaultEventLoops); 0 gives each connection a
	// goroutine.
	EventLoops int
	// DiskReserve is the disk space the store holds back for Pebble to
	// finish its writes when the disk fills (storage.DefaultReserve); 0
	// holds none.
	DiskReserve int64
	PprofAddr   string
	// MetricsAddr, when set, serves Prometheus metrics at /metrics there.
	MetricsAddr string
	// LogFormat is "text" (the default) or "json"; LogLevel is the least
	// severe level logged (the default is info).
	LogFormat string
	LogLevel  slog.Level

	// Security and limits (validateSecurity, ServerLimits): who may
	// connect, what one client may cost.
	RequirePassFile string
	// ACLFile is Redis's aclfile: the users loaded at the start, which
	// ACL LOAD reloads and ACL SAVE writes; "" for none.
	ACLFile           string
	ProtectedMode     bool
	MaxClients        int
	Timeout           time.Duration
	ProtoMaxBulkLen   int64
	MaxArgs           int64
	MaxInlineLen      int64
	QueryBufferLimit  int64
	OutputBufferLimit int64
	TLSPort           int
	TLSCertFile       string
	TLSKeyFile        string
	TLSCACertFile     string
	TLSAuthClients    string

	// Replication (validateReplication): ReplicaOf is "host port" (empty: a
	// master); MasterUser and MasterPass authenticate to that master.
	ReplicaOf       string
	MasterUser      string
	MasterPass      string
	ReplBacklogSize int64
	ReplBufferLimit int64
	ReplicaPriority int
	// MinReplicasToWrite and MinReplicasMaxLag are Redis's
	// min-replicas-to-write and min-replicas-max-lag: a master with fewer
	// replicas acknowledging within the lag refuses decisions that store.
	MinReplicasToWrite int
	MinReplicasMaxLag  time.Duration

	// Cluster mode (ClusterMode): ClusterEnabled is yes, no or emulated;
	// ClusterAnnounceIP is the address an emulated node reports;
	// ClusterAuthUser and ClusterAuthPass the internal user a node
	// authenticates to its peers as.
	ClusterEnabled    string
	ClusterAnnounceIP string
	ClusterAuthUser   string
	ClusterAuthPass   string

	// Envoy's rate limit service (rls.go): RLSAddr serves it (empty:
	// off), with the rules at RLSConfig, reloaded every
	// RLSReloadInterval (0: never), or those of the xDS management server
	// RLSXDSServer (addRLSXDSFlags). RLSEnv reads envoyproxy/ratelimit's
	// environment (readReferenceEnv).
	RLSAddr                    string
	RLSConfig                  string
	RLSResponseHeaders         bool
	RLSKeyPrefix               string
	RLSMergeDomains            bool
	RLSReloadInterval          time.Duration
	RLSShadowMode              bool
	RLSQuotaMode               bool
	RLSStopIncrementOverLimit  bool
	RLSNearLimitRatio          float64
	RLSLimitHeader             string
	RLSRemainingHeader         string
	RLSResetHeader             string
	RLSResponseDynamicMetadata bool
	RLSHealthcheckAddr         string
	RLSHealthcheckNeedsRules   bool
	RLSTLSClientName           string
	RLSEnv                     bool
	RLSXDSServer               string
	RLSXDSNodeID               string
	RLSXDSNodeMetadata         string
	RLSXDSHeaders              string
	RLSXDSTLS                  bool
	RLSXDSTLSCACertFile        string
	RLSXDSTLSCertFile          string
	RLSXDSTLSKeyFile           string
	RLSXDSTLSServerName        string

	// Actions instead of serving: print the version; ping the server this
	// configuration describes and exit 0 if it answers.
	Version     bool
	HealthCheck bool

	// warnings are what Warnings returns.
	warnings []Warning
}

// Defaults, as documented in docs/configuration.md and --help.
const (
	DefaultBind = "127.0.0.1"
	DefaultPort = 6379
	DefaultDir  = "./data"
)

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("--port %d: must be between 0 and 65535", c.Port)
	}
	if c.Dir == "" {
		return errors.New("--dir must not be empty")
	}
	if c.FlushInterval < 0 {
		return fmt.Errorf("--flush-interval %v: must not be negative", c.FlushInterval)
	}
	if err := (storage.Config{Shards: c.Shards}).Validate(); err != nil {
		return fmt.Errorf("--shards %d: %w", c.Shards, err)
	}
	if _, err := storage.ParseEvictionPolicy(c.MaxMemoryPolicy); err != nil {
		return fmt.Errorf("--maxmemory-policy: %w", err)
	}
	if c.MaxKeyLen < 1 || c.MaxKeyLen > 1<<30 {
		return fmt.Errorf("--max-key-len %d: must be between 1 and 1gb", c.MaxKeyLen)
	}
	if c.WindowLogMax < 1 || c.WindowLogMax > window.MaxLogMax {
		return fmt.Errorf("--window-log-max %d: must be between 1 and %d", c.WindowLogMax, window.MaxLogMax)
	}
	if c.EventLoops < 0 || c.EventLoops > 1024 {
		return fmt.Errorf("--event-loops %d: must be between 0 and 1024", c.EventLoops)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: must be text or json", c.LogFormat)
	}
	switch c.ClusterEnabled {
	case "yes", "no", "emulated", "":
	default:
		return fmt.Errorf("--cluster-enabled %q: must be yes, no or emulated", c.ClusterEnabled)
	}
	if c.ClusterMode() && c.ReplicaOf != "" {
		return errors.New("--replicaof: in cluster mode a node's master is the topology's (CLUSTERX SETNODES)")
	}
	if err := c.validateRLS(); err != nil {
		return err
	}
	if err := c.validateReplication(); err != nil {
		return err
	}
	return c.validateSecurity()
}

// ClusterMode reports whether the node serves as a Redis Cluster node
// (--cluster-enabled yes or emulated).
func (c Config) ClusterMode() bool {
	return c.ClusterEnabled == "yes" || c.ClusterEnabled == "emulated"
}
