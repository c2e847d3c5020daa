package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"

	"github.com/faucet-dev/faucet/db"
)

// interpretError gives an error of a driver call the verdict of SQLite's
// typed result code, for the Store to name the operation: sql.ErrNoRows
// becomes db.ErrNotFound.
func interpretError(err error) error {
	var e *db.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, sql.ErrNoRows):
		return &db.Error{Transience: db.Permanent, Err: db.ErrNotFound}
	}
	return &db.Error{Transience: transience(err), Err: err}
}

// wrap turns an error of the dialect's own operation op (opening,
// migrating) into a *db.Error carrying the transience verdict of SQLite's
// typed result code. sql.ErrNoRows becomes db.ErrNotFound. An error caused
// by ctx ending keeps ctx's error in its chain, so callers can tell their
// own cancellation from a database failure.
func wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var e *db.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &db.Error{Op: op, Transience: db.Permanent, Err: db.ErrNotFound}
	}
	if cause := ctx.Err(); cause != nil {
		if !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return &db.Error{Op: op, Transience: db.Unknown, Err: err}
	}
	return &db.Error{Op: op, Transience: transience(err), Err: err}
}

// permanent wraps an error that no retry can fix (a bad path, a schema from a
// newer faucet).
func permanent(op string, err error) error {
	return &db.Error{Op: op, Transience: db.Permanent, Err: err}
}

// transience classifies by SQLite's result code: BUSY and LOCKED (with their
// extended codes) clear once the other connection lets go of its lock, every
// other code is deterministic. Errors without a code (a closed pool, a
// context) get no verdict.
func transience(err error) db.Transience {
	var code sqlite3.ErrorCode
	if !errors.As(err, &code) {
		return db.Unknown
	}
	if code == sqlite3.BUSY || code == sqlite3.LOCKED {
		return db.Transient
	}
	return db.Permanent
}
