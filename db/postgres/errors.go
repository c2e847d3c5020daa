package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faucet-dev/faucet/db"
)

// interpretError gives a pgx error the transience verdict of its type, for
// the Store to name the operation: a missing row becomes db.ErrNotFound,
// which no retry changes. Sentinels (ErrSchemaTooNew, ErrBadURL) pass
// through the wrapper untouched for errors.Is, and an error that carries a
// verdict already (one a transaction's body gave) keeps it.
func interpretError(err error) error {
	var e *db.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, pgx.ErrNoRows):
		return &db.Error{Transience: db.Permanent, Err: db.ErrNotFound}
	}
	return &db.Error{Transience: classify(err), Err: err}
}

// fail wraps an error of the dialect's own work (connecting, migrating) with
// its operation and verdict.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &db.Error{Op: op, Transience: classify(err), Err: err}
}

// classify decides from typed errors — SQLSTATEs, syscall errnos, pgconn's
// timeout and retry markers — never from message text.
func classify(err error) db.Transience {
	if errors.Is(err, db.ErrSchemaTooNew) || errors.Is(err, db.ErrBadURL) {
		return db.Permanent
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if transientSQLState(pgErr.Code) {
			return db.Transient
		}
		return db.Permanent
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return db.Transient
	}
	// The server went away mid-conversation; a new connection may not.
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return db.Transient
	}
	for _, errno := range []syscall.Errno{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT,
	} {
		if errors.Is(err, errno) {
			return db.Transient
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return db.Transient
	}
	if pgconn.SafeToRetry(err) {
		return db.Transient
	}
	return db.Unknown
}

// transientSQLState reports the SQLSTATEs a retry can clear: connection
// exceptions (class 08), serialization failures and deadlocks, too many
// connections, and a server that is shutting down or still starting.
func transientSQLState(code string) bool {
	if strings.HasPrefix(code, "08") {
		return true
	}
	switch code {
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"53300", // too_many_connections
		"57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03": // cannot_connect_now
		return true
	}
	return false
}
