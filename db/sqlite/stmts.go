package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// stmtCache is the dbsqlc.DBTX of a pool that prepares each query once and
// reuses it: compiling a statement costs SQLite about as much as running a
// point read, so re-preparing per call would halve read throughput.
// database/sql prepares a cached statement again on each pool connection the
// first time that connection runs it.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

var _ dbsqlc.DBTX = (*stmtCache)(nil)

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

// stmt returns the prepared statement of query, preparing it on first use.
// It prepares without holding the lock: preparing waits for a free
// connection, and the writer's only connection may belong to a transaction
// that needs the lock to look up its statements.
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s := c.cached(query); s != nil {
		return s, nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[query]; ok {
		_ = s.Close()
		return prev, nil
	}
	c.stmts[query] = s
	return s, nil
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (c *stmtCache) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return c.stmt(ctx, query)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext falls back to an unprepared query when preparing fails, so
// the error reaches the caller through the returned Row.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// inTx returns the dbsqlc.DBTX of transaction tx: cached statements bound to
// the transaction's connection. A query not cached yet runs unprepared, since
// preparing it on the pool could wait for the very connection tx holds; warm
// then prepares such queries once tx has ended.
func (c *stmtCache) inTx(tx *sql.Tx) *txStmts { return &txStmts{c: c, tx: tx} }

// cached returns query's statement if it was prepared already.
func (c *stmtCache) cached(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// warm prepares the queries a transaction ran unprepared. A failure is left
// for the next use of the query to report, where it belongs to a call.
func (c *stmtCache) warm(ctx context.Context, t *txStmts) {
	for _, q := range t.missed {
		_, _ = c.stmt(ctx, q)
	}
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}

type txStmts struct {
	c  *stmtCache
	tx *sql.Tx
	// bound are the statements bound to tx so far: binding one costs
	// database/sql a lookup and an allocation, and a batch runs the same
	// few statements once per write (a log batch once per line).
	bound  map[string]*sql.Stmt
	missed []string
}

// stmt returns query's cached statement bound to the transaction, or nil
// after noting the query for warm.
func (t *txStmts) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.bound[query]; ok {
		return s
	}
	if s := t.c.cached(query); s != nil {
		b := t.tx.StmtContext(ctx, s)
		if t.bound == nil {
			t.bound = map[string]*sql.Stmt{}
		}
		t.bound[query] = b
		return b
	}
	t.missed = append(t.missed, query)
	return nil
}

func (t *txStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *txStmts) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s, nil
	}
	return t.tx.PrepareContext(ctx, query)
}

func (t *txStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *txStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
