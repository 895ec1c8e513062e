package server

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/internal/glob"
	"github.com/redcell/redcell/replication"
)

// CONFIG GET, SET and REWRITE: the settings Redis's tools and exporters ask
// for, and the few a running server may change.

// configSubcommands are CONFIG's, with Redis 7.2's arity and flags: every
// one but HELP is an admin command, so that ACL rules place them as Redis
// does (@admin @dangerous; +config|get allows GET alone).
func configSubcommands() []*command {
	sub := func(name string, arity int, since, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
		return &command{name: "config|" + name, arity: arity, flags: []string{"admin", "noscript", "loading", "stale"},
			acl: []string{"@slow"}, group: "server", since: since, summary: summary, complexity: complexity, run: run}
	}
	help := helpSubcommand("config", "5.0.0", configHelp)
	help.group = "server"
	// CONFIG SET goes to every node of a cluster, as Redis 7.0's tips say
	// (7.2 says so of RESETSTAT and REWRITE too).
	allNodes := func(cmd *command) *command {
		cmd.tips = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
		return cmd
	}
	return []*command{
		sub("get", -3, "2.0.0", "Returns the effective values of configuration parameters.",
			"O(N) when N is the number of configuration parameters provided", cmdConfigGet),
		allNodes(sub("set", -4, "2.0.0", "Sets configuration parameters in-flight.",
			"O(N) when N is the number of configuration parameters provided", cmdConfigSet)),
		sub("resetstat", 2, "2.0.0", "Resets the server's statistics.", "O(1)", func(c *client, _ [][]byte, _ time.Time) { c.writeOK() }),
		sub("rewrite", 2, "2.8.0", "Persists the effective configuration to file.", "O(1)", cmdConfigRewrite),
		help,
	}
}

// configHelp is Redis 7.2's CONFIG HELP.
var configHelp = []string{
	"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET <pattern>",
	"    Return parameters matching the glob-like <pattern> and their values.",
	"SET <directive> <value>",
	"    Set the configuration <directive> to <value>.",
	"RESETSTAT",
	"    Reset statistics reported by the INFO command.",
	"REWRITE",
	"    Rewrite the configuration file.",
	"HELP",
	"    Print this help.",
}

// CONFIG GET parameter [parameter ...]
//
// The settings monitoring tools and clients read, matched by glob.
func cmdConfigGet(c *client, args [][]byte, _ time.Time) {
	params := c.srv.configParams()
	names := make([]string, 0, len(params))
	for name := range params {
		for _, pat := range args[2:] {
			if glob.Match([]byte(strings.ToLower(string(pat))), name) {
				names = append(names, name)
				break
			}
		}
	}
	sort.Strings(names)
	c.writeMap(len(names))
	for _, name := range names {
		c.writeBulkString(name)
		c.writeBulkString(params[name])
	}
}

// CONFIG SET parameter value [parameter value ...]
//
// Changes the settings Sentinel and operators change at run time
// (replica-priority, masterauth, masteruser, min-replicas-*,
// protected-mode); the others are flags.
func cmdConfigSet(c *client, args [][]byte, _ time.Time) {
	if len(args)%2 != 0 {
		c.writeError(errWrongArgs("config|set"))
		return
	}
	c.configSet(args[2:])
}

// CONFIG REWRITE
//
// Persists the replication role (the daemon's RewriteConfig).
func cmdConfigRewrite(c *client, _ [][]byte, _ time.Time) {
	if c.srv.cfg.RewriteConfig == nil {
		c.writeError(errNoConfigFile)
		return
	}
	if err := c.srv.cfg.RewriteConfig(); err != nil {
		c.writeError(errRewrite(err))
		return
	}
	c.writeOK()
}

// configSet is CONFIG SET's pairs: all of them applied, or none if one is
// refused, as Redis 7 does.
func (c *client) configSet(pairs [][]byte) {
	n := c.srv.repl
	type change struct {
		name  string
		apply func()
	}
	var changes []change
	for i := 0; i < len(pairs); i += 2 {
		name, val := strings.ToLower(string(pairs[i])), string(pairs[i+1])
		switch {
		case n != nil && (name == "replica-priority" || name == "slave-priority"):
			p, err := strconv.ParseInt(val, 10, 64)
			if err != nil || p < 0 || p > math.MaxInt32 {
				c.writeError(errConfigValue(name, val))
				return
			}
			changes = append(changes, change{name, func() { n.SetPriority(p) }})
		case n != nil && (name == "min-replicas-to-write" || name == "min-slaves-to-write" ||
			name == "min-replicas-max-lag" || name == "min-slaves-max-lag"):
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				c.writeError(errConfigValue(name, val))
				return
			}
			if v < 0 || v > math.MaxInt32 {
				c.writeError(errConfigRange(name, 0, math.MaxInt32))
				return
			}
			lagSetting := strings.HasSuffix(name, "max-lag")
			changes = append(changes, change{name, func() {
				count, lag := n.MinReplicas()
				if lagSetting {
					lag = time.Duration(v) * time.Second
				} else {
					count = int(v)
				}
				n.SetMinReplicas(count, lag)
			}})
		case name == "protected-mode":
			// Redis's own advice to a client it refuses (errProtected);
			// CONFIG REWRITE does not keep it: the flag does.
			on, ok := parseYesNo(val)
			if !ok {
				c.writeError(errConfigYesNo(name))
				return
			}
			changes = append(changes, change{name, func() { c.srv.protected.Store(on) }})
		case n != nil && (name == "masterauth" || name == "masteruser"):
			changes = append(changes, change{name, func() {
				user, pass := n.MasterAuth()
				if name == "masterauth" {
					pass = val
				} else {
					user = val
				}
				n.SetMasterAuth(user, pass)
			}})
		default:
			c.writeError(errConfigSet)
			return
		}
	}
	for _, ch := range changes {
		ch.apply()
	}
	c.writeOK()
}

// yesNo is a boolean setting as Redis writes one.
func yesNo(on bool) string {
	if on {
		return "yes"
	}
	return "no"
}

// parseYesNo reads a boolean setting as Redis does: yes or no, in any case.
func parseYesNo(s string) (on, ok bool) {
	switch {
	case strings.EqualFold(s, "yes"):
		return true, true
	case strings.EqualFold(s, "no"):
		return false, true
	}
	return false, false
}

// saveParam and appendfsyncParam describe redcell's flushing in the words
// of the Redis settings closest to it: a flush every interval if anything
// changed is "save <seconds> 1", rounded up to a whole second.
func (s *Server) saveParam() string {
	if s.cfg.Persistence == nil || s.cfg.DurableWrites {
		return ""
	}
	secs := (s.cfg.FlushInterval + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(max(secs, 1)), 10) + " 1"
}

func (s *Server) appendfsyncParam() string {
	switch {
	case s.cfg.Persistence == nil:
		return "no"
	case s.cfg.DurableWrites:
		return "always"
	default:
		return "everysec"
	}
}

// configParams are the values CONFIG GET reports, by Redis's names: the ones
// redis_exporter, dashboards and client libraries read. redcell keeps no slow
// log and no latency monitor: the settings say so in Redis's terms (a
// negative slowlog threshold and a zero latency threshold are "off"), and
// SLOWLOG and LATENCY answer empty.
func (s *Server) configParams() map[string]string {
	appendonly := "no"
	if s.cfg.DurableWrites {
		appendonly = "yes"
	}
	limit, policy := s.store.MemoryLimit()
	minReplicas, minLag := 0, replication.DefaultMinReplicasMaxLag
	if s.repl != nil {
		minReplicas, minLag = s.repl.MinReplicas()
	}
	return map[string]string{
		"bind":                              s.cfg.Bind,
		"port":                              strconv.Itoa(s.cfg.Port),
		"dir":                               s.cfg.Dir,
		"databases":                         "1",
		"maxmemory":                         strconv.FormatInt(limit, 10),
		"maxmemory-policy":                  policy.String(),
		"maxmemory-clients":                 strconv.FormatInt(max(s.limits.MaxOutputTotal, 0), 10),
		"maxmemory-samples":                 "5",
		"maxclients":                        strconv.Itoa(s.limits.MaxClients),
		"timeout":                           strconv.FormatInt(int64(s.limits.IdleTimeout/time.Second), 10),
		"tcp-keepalive":                     "0",
		"save":                              s.saveParam(),
		"appendonly":                        appendonly,
		"appendfsync":                       s.appendfsyncParam(),
		"requirepass":                       "",
		"protected-mode":                    yesNo(s.protected.Load()),
		"cluster-enabled":                   s.clusterEnabledParam(),
		"replica-read-only":                 "yes",
		"slave-read-only":                   "yes",
		"replica-priority":                  strconv.FormatInt(s.replicaStatus().Priority, 10),
		"slave-priority":                    strconv.FormatInt(s.replicaStatus().Priority, 10),
		"replicaof":                         s.replicaOfParam(),
		"slaveof":                           s.replicaOfParam(),
		"repl-backlog-size":                 strconv.Itoa(s.replicaStatus().BacklogSize),
		"min-replicas-to-write":             strconv.Itoa(minReplicas),
		"min-slaves-to-write":               strconv.Itoa(minReplicas),
		"min-replicas-max-lag":              strconv.FormatInt(int64(minLag/time.Second), 10),
		"min-slaves-max-lag":                strconv.FormatInt(int64(minLag/time.Second), 10),
		"aclfile":                           s.users.file,
		"acllog-max-len":                    strconv.Itoa(acl.DefaultLogMaxLen),
		"io-threads":                        "1",
		"hz":                                "10",
		"slowlog-log-slower-than":           "-1",
		"slowlog-max-len":                   "0",
		"latency-monitor-threshold":         "0",
		"latency-tracking":                  "yes",
		"latency-tracking-info-percentiles": "50 99 99.9",
	}
}
