package pipeline

import (
	"context"
	"log/slog"
)

// SessionLog says where the lines a connector logs during a session go.
// Execute attaches one to the context of every session it opens; the plugin
// host, which hands each plugin process to one session at a time, sends the
// process's output there, so a run's connectors log into the run's own log
// with the run's secrets masked.
type SessionLog struct {
	// Logger receives the lines, tagged with their connector; nil leaves
	// them in the Connectors' own log.
	Logger *slog.Logger
	// Secrets are masked in every line (Plan.Secrets).
	Secrets []string
}

type sessionLogKey struct{}

// WithSessionLog returns ctx carrying l to the sessions opened with it.
func WithSessionLog(ctx context.Context, l SessionLog) context.Context {
	return context.WithValue(ctx, sessionLogKey{}, l)
}

// SessionLogFrom returns the SessionLog ctx carries, if any.
func SessionLogFrom(ctx context.Context) (SessionLog, bool) {
	l, ok := ctx.Value(sessionLogKey{}).(SessionLog)
	return l, ok
}
