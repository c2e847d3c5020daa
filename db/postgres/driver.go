package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// driver is the Postgres db.Driver over a pgx pool. The writes of a run's
// own path (submit, start, finish, shard) are each one statement: a
// data-modifying CTE keeps them atomic without the round trips of BEGIN and
// COMMIT.
type driver struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

var _ db.Driver = (*driver)(nil)

func (d *driver) Dialect() string { return Name }

func (d *driver) Close() error {
	d.pool.Close()
	return nil
}

func (d *driver) Ping(ctx context.Context) error { return interpretError(d.pool.Ping(ctx)) }

// inTx runs fn in one transaction.
func (d *driver) inTx(ctx context.Context, fn func(q *dbsqlc.Queries) error) error {
	return interpretError(pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(d.q.WithTx(tx)) }))
}

// result returns v with err interpreted.
func result[T any](v T, err error) (T, error) { return v, interpretError(err) }

// one is a count of rows a fenced write changed, as its success.
func one(n int64, err error) (bool, error) { return n == 1, interpretError(err) }

// count is a count of rows changed.
func count(n int64, err error) (int, error) { return int(n), interpretError(err) }

func runRow(r dbsqlc.FaucetRun) db.RunRow {
	return db.RunRow{
		RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: db.RunStatus(r.Status),
		SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		IdempotencyKey: r.IdempotencyKey, Attempt: int(r.Attempt), RecordsWritten: r.RecordsWritten,
		Error: r.Error, Submission: r.Submission, Invocations: r.Invocations,
		TemplateID: r.TemplateID, TemplateVersion: intPtr(r.TemplateVersion),
	}
}

// intPtr and int32Ptr convert a nullable integer column.
func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

func runRows(rows []dbsqlc.FaucetRun) []db.RunRow {
	out := make([]db.RunRow, len(rows))
	for i, r := range rows {
		out[i] = runRow(r)
	}
	return out
}

// lineColumns splits log lines into the parallel arrays the statements
// unnest.
// outputs are ledger writes as the columns of a terminal write's one
// statement: one row per path, since a statement's upsert may not touch a
// row twice. Two writes of one path are the first's entry and existence
// moved on to the last's size, file and time, as the two upserts in turn
// would leave it.
type outputs struct {
	ids, paths, runIDs, fileIDs []string
	sizes                       []int64
	firstAt, lastAt             []time.Time
	existed                     []bool
}

func outputColumns(ws []db.LocalOutputUpsertParams) outputs {
	var o outputs
	at := map[string]int{}
	for _, w := range ws {
		if i, ok := at[w.Path]; ok {
			o.sizes[i], o.runIDs[i], o.fileIDs[i], o.lastAt[i] = w.SizeBytes, w.RunID, w.FileID, w.At
			continue
		}
		at[w.Path] = len(o.ids)
		o.ids, o.paths, o.runIDs, o.fileIDs = append(o.ids, w.ID), append(o.paths, w.Path), append(o.runIDs, w.RunID), append(o.fileIDs, w.FileID)
		o.sizes, o.existed = append(o.sizes, w.SizeBytes), append(o.existed, w.Existed)
		o.firstAt, o.lastAt = append(o.firstAt, w.At), append(o.lastAt, w.At)
	}
	return o
}

func lineColumns(lines []db.RunLogLine) (seqs []int64, tss []time.Time, levels, texts []string) {
	n := len(lines)
	seqs, tss, levels, texts = make([]int64, n), make([]time.Time, n), make([]string, n), make([]string, n)
	for i, l := range lines {
		seqs[i], tss[i], levels[i], texts[i] = l.Seq, l.TS, l.Level, l.Line
	}
	return seqs, tss, levels, texts
}
