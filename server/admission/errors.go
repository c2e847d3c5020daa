package admission

import (
	"errors"
	"fmt"
)

// Errors of Submit; the HTTP layer maps each to its status.
var (
	// ErrQueueFull: every queue slot is taken (429).
	ErrQueueFull = errors.New("run queue is full")
	// ErrShuttingDown: the server no longer accepts runs (503).
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrIdempotencyConflict: the key is held by a different payload (409).
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different payload")
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

// CallbackError is a submission whose completion callback the server's
// egress policy refuses (422): nothing is written.
type CallbackError struct{ Err error }

func (e *CallbackError) Error() string { return e.Err.Error() }

func (e *CallbackError) Unwrap() error { return e.Err }
