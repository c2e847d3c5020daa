package templates

import (
	"errors"
	"fmt"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
)

// Kind says how a request the registry refuses was wrong, so every front
// end (HTTP, CLI, MCP) answers alike.
type Kind int

// The kinds of refusal.
const (
	// BadConfig: the template's document, or a param a trigger supplied,
	// cannot be used (HTTP 400).
	BadConfig Kind = iota + 1
	// NotFound: no such template or version (404).
	NotFound
	// Conflict: the template's state refuses the request: a deprecation, a
	// channel with no version, nothing to roll back to (409).
	Conflict
	// Unprocessable: a field of the request is out of bounds or not
	// allowed here (422).
	Unprocessable
)

// Error is a refusal of the registry. Nothing was written.
type Error struct {
	Kind Kind
	Msg  string
	// Problems locate what is wrong in a template's document.
	Problems []*pipeline.ConfigError
	err      error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.err }

func refusal(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error { return refusal(NotFound, format, args...) }

func conflict(format string, args ...any) *Error { return refusal(Conflict, format, args...) }

func unprocessable(format string, args ...any) *Error {
	return refusal(Unprocessable, format, args...)
}

// badConfig reports the problems of a template's document.
func badConfig(problems []*pipeline.ConfigError) *Error {
	msg := problems[0].Error()
	if len(problems) > 1 {
		msg = pipeline.ConfigErrors(problems).Error()
	}
	return &Error{Kind: BadConfig, Msg: msg, Problems: problems}
}

// storeError turns the store's verdicts on a template into refusals; any
// other error (the database's) passes through.
func storeError(err error) error {
	var dep *db.DeprecatedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &dep):
		return &Error{Kind: Conflict, Msg: dep.Error(), err: err}
	case errors.Is(err, db.ErrNoRollbackTarget):
		return &Error{Kind: Conflict, Msg: "nothing to roll back to: the template has no launch of another version than the live one", err: err}
	case errors.Is(err, db.ErrNotFound):
		var dbErr *db.Error
		msg := err.Error()
		if errors.As(err, &dbErr) {
			msg = dbErr.Err.Error()
		}
		return &Error{Kind: NotFound, Msg: msg, err: err}
	}
	return err
}
