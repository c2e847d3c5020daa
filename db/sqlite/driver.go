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

// driver is the db.Driver of one SQLite database.
type driver struct {
	w, r *sql.DB
	// wc and rc cache the prepared statements of w and r; rq runs the
	// queries on r, batches runs every write on w.
	wc, rc  *stmtCache
	rq      *dbsqlc.Queries
	batches *batcher
	ckpt    *checkpointer
	target  *target

	closeOnce sync.Once
	closeErr  error
}

var _ db.Driver = (*driver)(nil)

func (d *driver) Dialect() string { return dialectName }

// Close closes both pools (and frees an in-memory database). Closing twice is
// harmless.
func (d *driver) Close() error {
	d.closeOnce.Do(func() {
		d.batches.close()
		d.closeErr = errors.Join(d.ckpt.close(), d.rc.close(), d.wc.close(), d.r.Close(), d.w.Close())
		d.target.release()
	})
	return d.closeErr
}

// Ping checks that both pools reach the database.
func (d *driver) Ping(ctx context.Context) error {
	if err := d.w.PingContext(ctx); err != nil {
		return interpretError(err)
	}
	return interpretError(d.r.PingContext(ctx))
}

// write runs fn in a write transaction on the writer connection, possibly
// shared with concurrent writes (see batcher), and returns once it has
// committed. The driver begins transactions IMMEDIATE, so one holds SQLite's
// write lock from its first statement and every read inside it sees what its
// writes will build on.
func (d *driver) write(ctx context.Context, fn writeFunc) error {
	return interpretError(d.batches.do(ctx, 0, fn))
}

// writePatient is write for a write no one outside the server waits on (a
// run's terminal write, log lines, the catalog): it may wait a moment to
// share its commit (see patience). Its body must be replayable, as
// writeReplayable's.
func (d *driver) writePatient(ctx context.Context, fn writeFunc) error {
	return interpretError(d.batches.do(ctx, patient|replayable, fn))
}

// writeReplayable is write for a body that may run again after a rollback
// (it only sets what it reports), which lets it share a transaction without
// a savepoint of its own (see together).
func (d *driver) writeReplayable(ctx context.Context, fn writeFunc) error {
	return interpretError(d.batches.do(ctx, replayable, fn))
}

// writeValue runs a body of exactly one statement that returns a value as a
// write.
func writeValue[T any](ctx context.Context, d *driver, fn func(ctx context.Context, q *dbsqlc.Queries) (T, error)) (T, error) {
	var v T
	err := d.batches.do(ctx, single|replayable, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		v, err = fn(ctx, q)
		return err
	})
	return v, interpretError(err)
}

// writeOne is writeValue for a statement that returns nothing.
func (d *driver) writeOne(ctx context.Context, fn writeFunc) error {
	return interpretError(d.batches.do(ctx, single|replayable, fn))
}

// read runs fn in one read-only transaction on the read pool, so several
// reads see one snapshot.
func (d *driver) read(ctx context.Context, fn func(q *dbsqlc.Queries) error) error {
	tx, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return interpretError(err)
	}
	stmts := d.rc.inTx(tx)
	defer d.rc.warm(ctx, stmts)
	defer func() { _ = tx.Rollback() }()
	return interpretError(fn(dbsqlc.New(stmts)))
}

// one is a count of rows a fenced write changed, as its success.
func one(n int64, err error) (bool, error) { return n == 1, err }

// count is a count of rows changed.
func count(n int64, err error) (int, error) { return int(n), err }

func ptr[T any](v T) *T { return &v }

// Timestamps are stored as microseconds since the Unix epoch, the precision
// of Postgres' timestamptz, so both dialects read back the same instant.

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromMicrosPtr(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := fromMicros(*v)
	return &t
}

// textPtr and bytesPtr convert a nullable JSON document between the Store and
// its TEXT column.
func textPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	return ptr(string(b))
}

func bytesPtr(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func runRow(r dbsqlc.FaucetRun) db.RunRow {
	return db.RunRow{
		RunID: r.RunID, Name: r.Name, Labels: []byte(r.Labels), Status: db.RunStatus(r.Status),
		SubmittedAt: fromMicros(r.SubmittedAt), StartedAt: fromMicrosPtr(r.StartedAt), FinishedAt: fromMicrosPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey, Attempt: int(r.Attempt), RecordsWritten: r.RecordsWritten,
		Error: r.Error, Submission: []byte(r.Submission), Invocations: bytesPtr(r.Invocations),
		TemplateID: r.TemplateID, TemplateVersion: intPtr(r.TemplateVersion),
	}
}

// intPtr and int64Ptr convert a nullable INTEGER column.
func intPtr(v *int64) *int {
	if v == nil {
		return nil
	}
	return ptr(int(*v))
}

func int64Ptr(v *int) *int64 {
	if v == nil {
		return nil
	}
	return ptr(int64(*v))
}

func runRows(rows []dbsqlc.FaucetRun) []db.RunRow {
	out := make([]db.RunRow, len(rows))
	for i, r := range rows {
		out[i] = runRow(r)
	}
	return out
}
