package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/redact"
)

// Engine is what the runner needs from the pipeline layer and the connector
// plugin host: load a submitted config into a plan, execute a plan, probe a
// plan's connectors.
type Engine interface {
	// Load validates and interpolates a config ("yaml" or "json") into a plan.
	// Errors describe the bad input (with line and column, or the JSON path)
	// and become 400 responses.
	Load(config []byte, format string) (*pipeline.Plan, error)
	// Execute runs plan, of run runID, until it completes or ctx is
	// cancelled; on cancellation the sinks flush what they acknowledged and
	// the partial results are returned with an error wrapping
	// context.Canceled. log receives the run's log lines; progress, when not
	// nil, the records the sinks acknowledged so far, after every
	// acknowledged batch.
	Execute(ctx context.Context, runID string, plan *pipeline.Plan, log *slog.Logger, progress func(records int64)) ([]pipeline.InvocationResult, error)
	// Probe runs every connector's Check probe of plan.
	Probe(ctx context.Context, plan *pipeline.Plan) (DoctorReport, error)
	// Shardable reports whether the source connector can be split into
	// shards (cluster Mode B).
	Shardable(source pipeline.ConnectorConfig) bool
	// Shards splits a source into about count shards.
	Shards(ctx context.Context, source pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error)
	// WriteMode is the write mode a sink config resolves to (its write_mode,
	// else the default its connector's schema declares), "" when the sink
	// has none.
	WriteMode(sink pipeline.ConnectorConfig) string
}

// DoctorReport is the outcome of probing a plan's connectors, as returned by
// POST /v1/doctor and stored on runs submitted with doctor_first.
type DoctorReport struct {
	// OK is true when every probe passed.
	OK          bool               `json:"ok"`
	Invocations []DoctorInvocation `json:"invocations"`
}

// DoctorInvocation is the probes of one invocation (matrix row).
type DoctorInvocation struct {
	RowID  string        `json:"row_id"`
	Checks []DoctorCheck `json:"checks"`
}

// DoctorCheck is one connector probe.
type DoctorCheck struct {
	// Role is "source" or "sink".
	Role      string `json:"role"`
	Connector string `json:"connector"`
	// Name says what was probed ("connect", "write permission").
	Name string `json:"name,omitempty"`
	OK   bool   `json:"ok"`
	// Message explains a failure, or carries the probe's note on success.
	Message    string `json:"message,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Failures counts the failed probes.
func (r DoctorReport) Failures() int {
	n := 0
	for _, inv := range r.Invocations {
		for _, c := range inv.Checks {
			if !c.OK {
				n++
			}
		}
	}
	return n
}

// Redacted returns a copy of r with secrets masked in every message.
func (r DoctorReport) Redacted(red *redact.Redactor) DoctorReport {
	out := DoctorReport{OK: r.OK, Invocations: make([]DoctorInvocation, len(r.Invocations))}
	for i, inv := range r.Invocations {
		checks := make([]DoctorCheck, len(inv.Checks))
		for j, c := range inv.Checks {
			c.Message = red.String(c.Message)
			checks[j] = c
		}
		out.Invocations[i] = DoctorInvocation{RowID: inv.RowID, Checks: checks}
	}
	return out
}

// Errors the runner returns; the HTTP layer maps each to its status.
var (
	// ErrQueueFull: every queue slot is taken (429).
	ErrQueueFull = errors.New("run queue is full")
	// ErrShuttingDown: the server no longer accepts runs (503).
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrIdempotencyConflict: the key is held by a different payload (409).
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different payload")
	// ErrNotFound: no such run (404).
	ErrNotFound = errors.New("run not found")
	// ErrNotTerminal: the run has not finished and cannot be deleted (409).
	ErrNotTerminal = errors.New("run has not finished")
	// ErrNotOwned: the run is queued on another server, which must cancel it
	// (409).
	ErrNotOwned = errors.New("run is queued on another faucet serve instance")
	// ErrHistoryUnavailable: the history store cannot serve this request
	// safely right now (503).
	ErrHistoryUnavailable = errors.New("run history is unavailable")
)

// unavailableError is an ErrHistoryUnavailable that says why, in words an
// operator can act on (never a driver's error text).
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }

func (e *unavailableError) Is(target error) bool { return target == ErrHistoryUnavailable }

func unavailable(reason string) error { return &unavailableError{reason: reason} }

// ConfigError wraps a rejected submission: a config that does not load, or a
// request field that is invalid (400).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// DoctorError is a doctor_first submission whose probes failed (422). Report
// is already redacted.
type DoctorError struct{ Report DoctorReport }

func (e *DoctorError) Error() string {
	return fmt.Sprintf("doctor_first preflight failed: %d probe(s) failed", e.Report.Failures())
}
