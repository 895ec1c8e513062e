package config

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/redcell/redcell/server"
)

// Commit is the VCS revision the binary was built from, when the build says
// so: main sets it from -ldflags "-X main.commit=<sha>" (the Dockerfile
// does). Empty, BuildCommit reads the build information Go records when
// building inside a git checkout. Set it before anything reads it.
var Commit string

// BuildCommit returns the commit the binary was built from, or "unknown"
// (go build -buildvcs=false, or a source tree without .git).
func BuildCommit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// VersionLine is what --version prints.
func VersionLine() string {
	return fmt.Sprintf("redcell %s (commit %s, %s, %s/%s; Redis protocol of Redis %s)",
		server.Version, BuildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, server.RedisVersion)
}
