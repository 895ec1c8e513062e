package main

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/testkit"
)

// --log-level debug adds client errors; info leaves them out.
func TestLogLevels(t *testing.T) {
	for _, c := range []struct {
		level slog.Level
		want  bool
	}{{slog.LevelDebug, true}, {slog.LevelInfo, false}} {
		var out strings.Builder
		logger := newLogger(config.Config{LogFormat: "text", LogLevel: c.level}, &out)
		require.Equal(t, c.want, logger.Enabled(context.Background(), slog.LevelDebug))
	}
}

// A misspelled REDCELL_ variable is named in a warning right after the
// start-up line, with the variable meant; the server starts anyway. The
// harness's own REDCELLTEST_ variables are not warned about.
func TestMisspelledVariableIsWarnedAbout(t *testing.T) {
	c := startChildEnv(t, []string{"REDCELL_PROT=6555"}, "--in-memory")
	lines := strings.Split(c.Log(), "\n")
	require.Contains(t, lines[0], `msg="starting redcell"`)
	require.Equal(t, `level=WARN msg="REDCELL_PROT is not a redcell setting and is ignored; did you mean REDCELL_PORT?" setting=REDCELL_PROT`,
		strings.TrimSpace(lines[1][strings.Index(lines[1], "level="):]))
	require.NotContains(t, c.Log(), "setting=REDCELLTEST_")
	require.Equal(t, "PONG", c.client(t).Ping(context.Background()).Val())

	// --healthcheck logs nothing: it says so on stderr, and still checks.
	_, port, err := net.SplitHostPort(c.Addr)
	require.NoError(t, err)
	out, status := testkit.Self().Run(t, []string{"REDCELL_PROT=" + port}, "--healthcheck", "--port", port)
	require.Zero(t, status, "%s", out)
	require.Equal(t, "redcell: warning: REDCELL_PROT is not a redcell setting and is ignored; did you mean REDCELL_PORT?\n", out)
}

// Durations read as the flags write them, in JSON logs as in text ones:
// "flush_interval":"1s", not 1000000000; every duration the start-up line
// and the daemon's lines carry, at any depth.
func TestLogsWriteDurationsAsTheFlagsDo(t *testing.T) {
	cfg, err := config.Parse([]string{"--timeout", "90", "--flush-interval", "250ms"}, func(string) (string, bool) { return "", false }, io.Discard)
	require.NoError(t, err)
	for format, want := range map[string][]string{
		"json": {`"flush_interval":"250ms"`, `"timeout":"1m30s"`, `"duration":"1.5s"`, `"g":{"after":"10s"}`, `"n":5`},
		"text": {`flush_interval=250ms`, `timeout=1m30s`, `duration=1.5s`, `g.after=10s`, ` n=5`},
	} {
		cfg.LogFormat = format
		var out strings.Builder
		logger := newLogger(cfg, &out)
		logger.Info("starting redcell", cfg.LogAttrs()...)
		logger.Info("saved state", "duration", 1500*time.Millisecond, slog.Group("g", "after", 10*time.Second), "n", 5)
		for _, w := range want {
			require.Contains(t, out.String(), w, format)
		}
	}
}

// A start on a port in use exits 1 with the bind error and leaves a fresh
// --dir uncreated: it listens before it opens the store, as Redis does.
func TestStartOnABusyPortLeavesNoDir(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	dir := filepath.Join(t.TempDir(), "data")
	out, status := testkit.Self().Run(t, nil, "--port", port, "--dir", dir)
	require.Equal(t, 1, status)
	require.Contains(t, out, `level=ERROR msg="redcell stopped" err="listen on 127.0.0.1:`+port+`: listen tcp 127.0.0.1:`+port+`: bind: address already in use"`)
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, fs.ErrNotExist, "--dir was not created:\n%s", out)
}
