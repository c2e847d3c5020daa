package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faucet-dev/faucet/db"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want db.Transience
	}{
		{"connection exception", &pgconn.PgError{Code: "08006"}, db.Transient},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, db.Transient},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, db.Transient},
		{"too many connections", &pgconn.PgError{Code: "53300"}, db.Transient},
		{"server starting up", &pgconn.PgError{Code: "57P03"}, db.Transient},
		{"admin shutdown", fmt.Errorf("query: %w", &pgconn.PgError{Code: "57P01"}), db.Transient},
		{"unique violation", &pgconn.PgError{Code: "23505"}, db.Permanent},
		{"bad password", &pgconn.PgError{Code: "28P01"}, db.Permanent},
		{"unknown role", &pgconn.PgError{Code: "28000"}, db.Permanent},
		{"missing relation", &pgconn.PgError{Code: "42P01"}, db.Permanent},
		{"refused connection", fmt.Errorf("connect: %w", refused), db.Transient},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), db.Transient},
		{"deadline", fmt.Errorf("ping: %w", context.DeadlineExceeded), db.Transient},
		{"connection lost", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), db.Transient},
		{"schema too new", fmt.Errorf("migrate: %w", db.ErrSchemaTooNew), db.Permanent},
		{"bad url", db.ErrBadURL, db.Permanent},
		{"untyped", errors.New("something odd"), db.Unknown},
		{"cancelled", context.Canceled, db.Unknown},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("%s: classify(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestFailWrapsWithVerdict(t *testing.T) {
	if fail("op", nil) != nil {
		t.Fatal("fail(nil) is not nil")
	}
	cause := &pgconn.PgError{Code: "40001"}
	err := fail("run upsert", cause)
	var e *db.Error
	if !errors.As(err, &e) || e.Op != "run upsert" || e.Transience != db.Transient {
		t.Fatalf("fail wrapped as %#v", err)
	}
	if !errors.Is(err, cause) || !db.Retriable(err) {
		t.Fatalf("wrapped error lost its cause or verdict: %v", err)
	}
}
