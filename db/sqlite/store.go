package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// Store is db.Store over one SQLite database.
type Store struct {
	w, r *sql.DB
	// wc and rc cache the prepared statements of w and r; rq runs the
	// queries on r, batches runs every write on w.
	wc, rc  *stmtCache
	rq      *dbsqlc.Queries
	batches *batcher
	ckpt    *checkpointer
	target  *target

	instanceID string
	// owner is instanceID as the nullable owner column's parameter.
	owner    *string
	leaseTTL time.Duration

	closeOnce sync.Once
	closeErr  error
}

var _ db.Store = (*Store)(nil)

// InstanceID is the id this store stamps as owner.
func (s *Store) InstanceID() string { return s.instanceID }

// Dialect reports "sqlite".
func (s *Store) Dialect() string { return dialectName }

// Close closes both pools (and frees an in-memory database). Closing twice is
// harmless.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.batches.close()
		s.closeErr = errors.Join(s.ckpt.close(), s.rc.close(), s.wc.close(), s.r.Close(), s.w.Close())
		s.target.release()
	})
	return s.closeErr
}

// Ping checks that both pools reach the database.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return wrap(ctx, "ping", err)
	}
	return wrap(ctx, "ping", s.r.PingContext(ctx))
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// lease is the lease expiry a write at t stamps.
func (s *Store) lease(t time.Time) *int64 {
	v := micros(t.Add(s.leaseTTL))
	return &v
}

// write runs fn in a write transaction on the writer connection, possibly
// shared with concurrent writes (see batcher), and returns once it has
// committed. The driver begins transactions IMMEDIATE, so one holds SQLite's
// write lock from its first statement and every read inside it sees what its
// writes will build on.
func (s *Store) write(ctx context.Context, op string, fn writeFunc) error {
	return wrap(ctx, op, s.batches.do(ctx, false, fn))
}

// writeOne is write for a body of exactly one statement.
func (s *Store) writeOne(ctx context.Context, op string, fn writeFunc) error {
	return wrap(ctx, op, s.batches.do(ctx, true, fn))
}

// read runs fn in one read-only transaction on the read pool, so several
// reads see one snapshot.
func (s *Store) read(ctx context.Context, op string, fn func(q *dbsqlc.Queries) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wrap(ctx, op, err)
	}
	stmts := s.rc.inTx(tx)
	defer s.rc.warm(ctx, stmts)
	defer func() { _ = tx.Rollback() }()
	return wrap(ctx, op, fn(dbsqlc.New(stmts)))
}

// writeValue is writeOne for a statement that returns a value.
func writeValue[T any](ctx context.Context, s *Store, op string, fn func(ctx context.Context, q *dbsqlc.Queries) (T, error)) (T, error) {
	var v T
	err := s.writeOne(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		v, err = fn(ctx, q)
		return err
	})
	return v, err
}

func ptr[T any](v T) *T { return &v }
