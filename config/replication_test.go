package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The replication flags' defaults are Redis's (or the replication
// package's, said in --help), they take Redis's units, and each bound is
// refused with the flag's name.
func TestReplicationFlags(t *testing.T) {
	cfg := parseWith(t, env{})
	require.Equal(t, int64(64<<20), cfg.ReplBacklogSize)
	require.Equal(t, int64(256<<20), cfg.ReplBufferLimit, "Redis's client-output-buffer-limit replica hard limit")
	require.Equal(t, 100, cfg.ReplicaPriority)
	_, _, replica := cfg.ReplicaOfAddr()
	require.False(t, replica)

	cfg = parseWith(t, env{"REDCELL_REPL_BUFFER_LIMIT": "1gb"}, "--replicaof", "10.0.0.7 6380", "--repl-backlog-size", "1mb")
	require.Equal(t, int64(1<<20), cfg.ReplBacklogSize)
	require.Equal(t, int64(1<<30), cfg.ReplBufferLimit)
	host, port, replica := cfg.ReplicaOfAddr()
	require.Equal(t, []any{"10.0.0.7", 6380, true}, []any{host, port, replica})

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicaof", "no one"}, `--replicaof "no one": leave it empty for a master`},
		{[]string{"--replicaof", "host"}, `--replicaof "host": must be "host port", the port between 1 and 65535`},
		{[]string{"--repl-backlog-size", "1kb"}, "--repl-backlog-size 1024: must be between 16kb and 16gb"},
		{[]string{"--repl-buffer-limit", "32mb"}, "--repl-buffer-limit 33554432: must be at least --repl-backlog-size (67108864) and at most 64gb"},
		{[]string{"--replica-priority", "-1"}, "--replica-priority -1: must not be negative"},
	} {
		require.EqualError(t, parseErr(t, env{}, c.args...), c.want, "%v", c.args)
	}
}
