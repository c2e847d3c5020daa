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

// OutputFile is a file a sink session created or replaced on disk, as the
// sink reported it when it committed.
type OutputFile struct {
	// Path is the file's absolute path.
	Path string
	Size int64
	// Existed: a file was at Path before the session.
	Existed bool
}

// SessionReport receives what a sink session reports besides its records.
// Execute attaches one to the context of every sink session it opens; the
// plugin host calls it when the sink's final answer arrives.
type SessionReport struct {
	// Output is called with each file a committed session created or
	// replaced; nil ignores them.
	Output func(OutputFile)
	// Policy, when set, asks a sink that can for the records it will not
	// take (Rejected) instead of a failed session.
	Policy *RecordPolicy
	// Rejected is called with each record the sink refused under Policy,
	// before its final answer.
	Rejected func(Rejection)
	// Unrefused, when set, is told why a session asked for Policy gets
	// none (its sink cannot refuse single records): a bad record then fails
	// it.
	Unrefused func(reason string)
}

// RecordPolicy is how a sink treats a single bad record: tried on its own
// MaxAttempts times, then refused.
type RecordPolicy struct {
	MaxAttempts int
}

// Rejection is a record a sink refused.
type Rejection struct {
	// Seq is the batch of the session the record was in, and Index its
	// position there, from 0.
	Seq   uint64
	Index int
	// Record is the record, a JSON object.
	Record []byte
	// Error is why the sink refused it, the last time; Attempts counts its
	// tries on its own.
	Error    string
	Attempts int
}

type sessionReportKey struct{}

// WithSessionReport returns ctx carrying r to the sink sessions opened with
// it.
func WithSessionReport(ctx context.Context, r SessionReport) context.Context {
	return context.WithValue(ctx, sessionReportKey{}, r)
}

// SessionReportFrom returns the SessionReport ctx carries; the zero one
// ignores everything.
func SessionReportFrom(ctx context.Context) SessionReport {
	r, _ := ctx.Value(sessionReportKey{}).(SessionReport)
	return r
}
