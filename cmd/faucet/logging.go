package main

import (
	"log/slog"
	"strings"
)

// logLevels are the values --log-level accepts.
const logLevels = "debug, info, warn or error"

// parseLogLevel reads a --log-level value.
func parseLogLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return 0, usageErrorf("--log-level %q: want %s", s, logLevels)
	}
	return level, nil
}
