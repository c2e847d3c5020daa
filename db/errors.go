package db

import (
	"errors"
	"fmt"
)

// Sentinel errors. Dialect packages map their drivers' errors onto these, so
// callers never see a driver type.
var (
	// ErrNotFound: the run (or other row) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnknownCursor: a RunList cursor names no run, because it is
	// malformed or its run was deleted since it was handed out.
	ErrUnknownCursor = errors.New("the cursor names no run")
	// ErrSchemaTooNew: the database was migrated by a newer faucet than this
	// binary; refusing to touch it avoids corrupting a schema we do not know.
	ErrSchemaTooNew = errors.New("database schema is newer than this faucet binary")
	// ErrBadURL: the history URL is malformed or names an unknown scheme.
	ErrBadURL = errors.New("invalid history URL")
	// ErrNoWakeups: the dialect carries no wake-ups between members (see
	// WakeStore.Listen); members find work by polling alone.
	ErrNoWakeups = errors.New("the history database carries no wake-ups")
)

// Transience says whether retrying a failed database call can succeed.
type Transience int

// The verdicts. Unknown is treated as retriable by callers: retrying a
// permanent failure costs a bounded few seconds, while giving up on an
// unclassified blip can strand a cluster member.
const (
	Unknown Transience = iota
	Transient
	Permanent
)

func (t Transience) String() string {
	switch t {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	}
	return "unknown"
}

// Error is a database failure carrying the transience verdict the dialect
// computed from its driver's typed error (SQLSTATE, SQLite result code) at the
// point of failure — never from message text.
type Error struct {
	// Op is the store operation that failed, e.g. "run submit". A driver
	// leaves it empty: the Store names the operation it was doing.
	Op         string
	Transience Transience
	Err        error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// TransienceOf returns the verdict carried by err, or Unknown when err carries
// none.
func TransienceOf(err error) Transience {
	var e *Error
	if errors.As(err, &e) {
		return e.Transience
	}
	return Unknown
}

// Retriable reports whether retrying the call that returned err could succeed:
// everything except a typed-permanent failure.
func Retriable(err error) bool {
	return err != nil && TransienceOf(err) != Permanent
}
