package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// Store is the Postgres db.Store.
type Store struct {
	pool       *pgxpool.Pool
	q          *dbsqlc.Queries
	instanceID string
	leaseTTL   time.Duration
}

var _ db.Store = (*Store)(nil)

// InstanceID is the owner id this store stamps.
func (s *Store) InstanceID() string { return s.instanceID }

// Dialect is "postgres".
func (s *Store) Dialect() string { return Name }

// Close releases the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	return fail("ping", s.pool.Ping(ctx))
}

// now is the store's clock at the precision Postgres keeps.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func (s *Store) lease() time.Time { return now().Add(s.leaseTTL) }

// inTx runs fn in one transaction.
func (s *Store) inTx(ctx context.Context, fn func(q *dbsqlc.Queries) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(s.q.WithTx(tx)) })
}

// encoded is a run record in its stored form: the record normalised to UTC
// microseconds, its labels and its whole document as JSON.
type encoded struct {
	rec    db.RunRecord
	labels []byte
	record []byte
}

func encodeRun(rec *db.RunRecord) (encoded, error) {
	e := encoded{rec: *rec}
	r := &e.rec
	r.SubmittedAt = micro(r.SubmittedAt)
	r.StartedAt = microPtr(r.StartedAt)
	r.FinishedAt = microPtr(r.FinishedAt)
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	var err error
	if e.labels, err = json.Marshal(r.Labels); err != nil {
		return e, fmt.Errorf("encode labels of run %s: %w", r.RunID, err)
	}
	// MarshalJSON directly: json.Marshal would re-scan and compact its
	// already compact output.
	if e.record, err = r.MarshalJSON(); err != nil {
		return e, fmt.Errorf("encode run %s: %w", r.RunID, err)
	}
	return e, nil
}

// decodeRun rebuilds a run from its row. The columns win over the document
// for every field they carry.
func decodeRun(row dbsqlc.FaucetRun) (db.RunRecord, error) {
	var rec db.RunRecord
	if err := json.Unmarshal(row.Record, &rec); err != nil {
		return rec, fmt.Errorf("decode run %s: %w", row.RunID, err)
	}
	rec.Labels = nil
	if err := json.Unmarshal(row.Labels, &rec.Labels); err != nil {
		return rec, fmt.Errorf("decode labels of run %s: %w", row.RunID, err)
	}
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	if rec.Invocations == nil {
		rec.Invocations = []db.InvocationRecord{}
	}
	rec.RunID = row.RunID
	rec.Name = row.Name
	rec.Status = db.RunStatus(row.Status)
	rec.SubmittedAt = row.SubmittedAt.UTC()
	rec.StartedAt = utcPtr(row.StartedAt)
	rec.FinishedAt = utcPtr(row.FinishedAt)
	rec.IdempotencyKey = row.IdempotencyKey
	rec.Attempt = int(row.Attempt)
	rec.RecordsWritten = row.RecordsWritten
	rec.Error = row.Error
	return rec, nil
}

func decodeRuns(rows []dbsqlc.FaucetRun) ([]db.RunRecord, error) {
	out := make([]db.RunRecord, len(rows))
	for i, row := range rows {
		var err error
		if out[i], err = decodeRun(row); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func microPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := micro(*t)
	return &v
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// RunUpsert inserts or replaces rec, owned by this instance with a fresh lease.
func (s *Store) RunUpsert(ctx context.Context, rec *db.RunRecord) error {
	lease := s.lease()
	_, err := s.writeRun(ctx, "run upsert", rec, runWrite{lease: &lease})
	return err
}

// runWrite is what RunWrite writes besides the record.
type runWrite struct {
	lease  *time.Time
	fenced bool
	audit  *db.AuditEntry
	lines  []db.RunLogLine
}

// writeRun is the one statement behind RunUpsert, RunSubmit and RunFinish.
func (s *Store) writeRun(ctx context.Context, op string, rec *db.RunRecord, w runWrite) (bool, error) {
	e, err := encodeRun(rec)
	if err != nil {
		return false, fail(op, err)
	}
	r := &e.rec
	p := dbsqlc.RunWriteParams{
		RunID:          r.RunID,
		Name:           r.Name,
		Labels:         e.labels,
		Status:         string(r.Status),
		SubmittedAt:    r.SubmittedAt,
		StartedAt:      r.StartedAt,
		FinishedAt:     r.FinishedAt,
		IdempotencyKey: r.IdempotencyKey,
		Owner:          s.instanceID,
		LeaseExpiresAt: w.lease,
		Attempt:        int32(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         e.record,
		Fenced:         w.fenced,
	}
	if a := w.audit; a != nil {
		p.AuditID, p.AuditTs, p.AuditPrincipal, p.AuditRole, p.AuditAction = &a.ID, micro(a.Timestamp), a.Principal, a.Role, a.Action
		p.AuditConfigFingerprint, p.AuditSourceIp, p.AuditResult = a.ConfigFingerprint, a.SourceIP, a.Result
	}
	if n := len(w.lines); n > 0 {
		p.Seqs, p.Tss, p.Levels, p.Lines = make([]int64, n), make([]time.Time, n), make([]string, n), make([]string, n)
		for i, l := range w.lines {
			p.Seqs[i], p.Tss[i], p.Levels[i], p.Lines[i] = l.Seq, micro(l.TS), l.Level, l.Line
		}
	}
	n, err := s.q.RunWrite(ctx, p)
	if err != nil {
		return false, fail(op, err)
	}
	return n == 1, nil
}

// RunGet returns one run or db.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, runID string) (*db.RunRecord, error) {
	const op = "run get"
	row, err := s.q.RunGet(ctx, runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, permanent(op, fmt.Errorf("run %s: %w", runID, db.ErrNotFound))
	}
	if err != nil {
		return nil, fail(op, err)
	}
	rec, err := decodeRun(row)
	if err != nil {
		return nil, fail(op, err)
	}
	return &rec, nil
}

// RunList returns one page of runs, newest first.
func (s *Store) RunList(ctx context.Context, f db.ListFilter) (db.ListPage, error) {
	const op = "run list"
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultListLimit
	}
	statuses := make([]string, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = string(st)
	}
	rows, err := s.q.RunList(ctx, dbsqlc.RunListParams{
		Statuses:  statuses,
		Name:      f.Name,
		Since:     microPtr(f.Since),
		Until:     microPtr(f.Until),
		Cursor:    f.Cursor,
		PageLimit: int32(limit + 1),
	})
	if err != nil {
		return db.ListPage{}, fail(op, err)
	}
	if len(rows) == 0 && f.Cursor != "" {
		// The page query selects nothing for a cursor that names no run;
		// whether the cursor is the last run or no run at all only matters
		// here.
		if _, err := s.q.RunStatus(ctx, f.Cursor); errors.Is(err, pgx.ErrNoRows) {
			return db.ListPage{}, permanent(op, fmt.Errorf("cursor %q: %w", f.Cursor, db.ErrUnknownCursor))
		} else if err != nil {
			return db.ListPage{}, fail(op, err)
		}
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return db.ListPage{}, fail(op, err)
	}
	page := db.ListPage{Runs: runs}
	if len(runs) > limit {
		page.Runs = runs[:limit]
		page.NextCursor = &runs[limit-1].RunID
	}
	return page, nil
}

// RunDelete deletes a terminal run with its claims, shards and logs.
func (s *Store) RunDelete(ctx context.Context, runID string) (db.DeleteOutcome, error) {
	const op = "run delete"
	n, err := s.q.RunDelete(ctx, runID)
	if err != nil {
		return 0, fail(op, err)
	}
	if n > 0 {
		return db.Deleted, nil
	}
	// Nothing deleted: the run is missing or not terminal. This read only
	// names the reason; the fence was the DELETE's WHERE clause.
	if _, err := s.q.RunStatus(ctx, runID); errors.Is(err, pgx.ErrNoRows) {
		return db.DeleteNotFound, nil
	} else if err != nil {
		return 0, fail(op, err)
	}
	return db.DeleteStillRunning, nil
}
