package protocol_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// --aclfile across a restart of the built binary: users made with ACL
// SETUSER and saved with ACL SAVE are what the next start loads, their
// passwords kept as SHA-256 digests only; a file with an error stops the
// start with every line's error, as Redis's does.
func TestACLFileAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	p := harness.StartBinary(t, nil, harness.OnLoopback("--in-memory", "--aclfile", file, "--requirepass", "admin-secret")...)
	require.Contains(t, p.Log(), `msg="ACL users loaded"`)

	admin := p.GoRedis(t, func(o *redis.Options) { o.Password = "admin-secret" })
	c := harness.Ctx(t)
	require.NoError(t, admin.Do(c, "ACL", "SETUSER", "app", "on", ">app-secret", "~rl:app:*", "+cl.throttle").Err())
	require.NoError(t, admin.Do(c, "ACL", "SETUSER", "ops", "on", ">ops-secret", "~*", "&*", "+@all", "-@dangerous", "+info", "+client|list").Err())
	require.NoError(t, admin.Do(c, "ACL", "SAVE").Err())
	listed, err := admin.Do(c, "ACL", "LIST").StringSlice()
	require.NoError(t, err)
	saved, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, strings.Join(listed, "\n")+"\n", string(saved), "ACL SAVE writes ACL LIST's lines")
	require.NotContains(t, string(saved), "secret", "passwords are written as digests")

	require.NoError(t, p.Stop(syscall.SIGTERM))
	p.Restart()
	admin = p.GoRedis(t, func(o *redis.Options) { o.Password = "admin-secret" })
	again, err := admin.Do(c, "ACL", "LIST").StringSlice()
	require.NoError(t, err)
	require.Equal(t, listed, again, "the users are back as they were saved")
	app := p.GoRedis(t, func(o *redis.Options) { o.Username, o.Password = "app", "app-secret" })
	res, err := app.Do(c, "CL.THROTTLE", "rl:app:1", 15, 30, 60).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 16, 15, -1, 2}, res)
	require.EqualError(t, app.Do(c, "CL.THROTTLE", "other", 15, 30, 60).Err(), "NOPERM No permissions to access a key")
	ops := p.GoRedis(t, func(o *redis.Options) { o.Username, o.Password = "ops", "ops-secret" })
	require.NoError(t, ops.Info(c, "replication").Err())
	require.EqualError(t, ops.FlushAll(c).Err(), "NOPERM User ops has no permissions to run the 'flushall' command")

	// A file with an error: the start stops, naming it.
	require.NoError(t, p.Stop(syscall.SIGTERM))
	require.NoError(t, os.WriteFile(file, append(saved, []byte("user broken on +nosuch\n")...), 0o600))
	out, err := exec.Command(testkit.Binary(t).Path(), harness.OnLoopback("--in-memory", "--aclfile", file)...).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), `err="--aclfile: `+file+":4: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	out, err = exec.Command(testkit.Binary(t).Path(), harness.OnLoopback("--in-memory", "--aclfile", filepath.Join(dir, "none.acl"))...).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "Error loading ACLs, opening file '"+filepath.Join(dir, "none.acl")+"': No such file or directory")
}
