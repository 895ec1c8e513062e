package config

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/redcell/redcell/replication"
)

// addReplicationFlags registers the replication flags, by Redis's names.
func addReplicationFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.ReplicaOf, "replicaof", "",
		"start as a replica of the master at `\"host port\"`, as Redis's replicaof (empty: a master). "+
			"A role set later by REPLICAOF and saved by CONFIG REWRITE (Sentinel does both) wins over it at the next start")
	fs.StringVar(&cfg.MasterUser, "masteruser", "", "the user a replica authenticates to its master as (empty: AUTH with --masterauth alone)")
	fs.StringVar(&cfg.MasterPass, "masterauth", "", "the password a replica authenticates to its master with (empty: none)")
	cfg.ReplBacklogSize = replication.DefaultBacklogSize
	fs.Var((*size)(&cfg.ReplBacklogSize), "repl-backlog-size",
		"`bytes` of the replication stream kept, so that a replica back within them continues instead of resynchronizing in full")
	cfg.ReplBufferLimit = replication.DefaultBufferLimit
	fs.Var((*size)(&cfg.ReplBufferLimit), "repl-buffer-limit",
		"the most `bytes` of the stream a replica may lack, the writes made during its full resynchronization included, "+
			"before the master drops its link (Redis's client-output-buffer-limit replica hard limit)")
	fs.IntVar(&cfg.ReplicaPriority, "replica-priority", replication.DefaultReplicaPriority,
		"Sentinel promotes the replica with the lowest `priority` first; 0: never promote this one")
	fs.IntVar(&cfg.MinReplicasToWrite, "min-replicas-to-write", 0,
		"a master refuses decisions that store (NOREPLICAS) while fewer than this many `replicas` acknowledged the stream within "+
			"--min-replicas-max-lag, so that one cut off from its replicas stops deciding what its failover would throw away; "+
			"peeks are still answered. 0: off (CONFIG SET changes it)")
	cfg.MinReplicasMaxLag = replication.DefaultMinReplicasMaxLag
	fs.Var((*seconds)(&cfg.MinReplicasMaxLag), "min-replicas-max-lag",
		"how many `seconds` (or a duration: 1500ms) old a replica's last acknowledgement may be for it to count for "+
			"--min-replicas-to-write; 0: the check is off")
}

// ReplicaOfAddr splits --replicaof into host and port; ok is false for a
// master.
func (c Config) ReplicaOfAddr() (host string, port int, ok bool) {
	f := strings.Fields(c.ReplicaOf)
	if len(f) != 2 {
		return "", 0, false
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return "", 0, false
	}
	return f[0], p, true
}

func (c Config) validateReplication() error {
	if c.ReplicaOf != "" {
		if f := strings.Fields(c.ReplicaOf); len(f) == 2 && strings.EqualFold(f[0], "no") && strings.EqualFold(f[1], "one") {
			return fmt.Errorf("--replicaof %q: leave it empty for a master", c.ReplicaOf)
		}
		if _, port, ok := c.ReplicaOfAddr(); !ok || port < 1 || port > 65535 {
			return fmt.Errorf("--replicaof %q: must be \"host port\", the port between 1 and 65535", c.ReplicaOf)
		}
	}
	if c.ReplBacklogSize < 16<<10 || c.ReplBacklogSize > 1<<34 {
		return fmt.Errorf("--repl-backlog-size %d: must be between 16kb and 16gb", c.ReplBacklogSize)
	}
	if c.ReplBufferLimit < c.ReplBacklogSize || c.ReplBufferLimit > 1<<36 {
		return fmt.Errorf("--repl-buffer-limit %d: must be at least --repl-backlog-size (%d) and at most 64gb", c.ReplBufferLimit, c.ReplBacklogSize)
	}
	if c.ReplicaPriority < 0 {
		return fmt.Errorf("--replica-priority %d: must not be negative", c.ReplicaPriority)
	}
	if c.MinReplicasToWrite < 0 {
		return fmt.Errorf("--min-replicas-to-write %d: must not be negative", c.MinReplicasToWrite)
	}
	if c.MinReplicasMaxLag < 0 {
		return fmt.Errorf("--min-replicas-max-lag %v: must not be negative", c.MinReplicasMaxLag)
	}
	return nil
}
