package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"redcell/config"
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
