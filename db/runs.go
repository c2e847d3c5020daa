package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors the store writes into the runs and shards it ends itself.
const (
	// lapsedError fails a run whose owner stopped renewing its lease.
	lapsedError = "the instance that owned this run stopped renewing its lease before the run finished"
	// shardNotStartedError cancels the shards a cancel request finds pending.
	shardNotStartedError = "run cancelled before the shard started"
	// shardStrandedError cancels the shards that went back to pending after
	// their run's cancel request.
	shardStrandedError = "run cancelled before the shard finished"
)

func (s *store) RunSubmit(ctx context.Context, rec *RunRecord, audit *AuditEntry) error {
	return s.submit(ctx, "run submit", rec, audit, nil)
}

// submit writes a new run with its audit entry and, when set, the trigger
// fire that started it.
func (s *store) submit(ctx context.Context, op string, rec *RunRecord, audit *AuditEntry, fire *TriggerFireRow) error {
	row, err := encodeRun(rec)
	if err != nil {
		return invalid(op, err)
	}
	p := &RunInsertParams{Run: row, Owner: s.instanceID, LeaseExpiresAt: s.lease(s.now()), Fire: fire}
	if audit != nil {
		a := *audit
		a.Timestamp = micro(a.Timestamp)
		p.Audit = &a
	}
	return fail(ctx, op, s.d.RunInsert(ctx, p))
}

func (s *store) RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error) {
	ok, err := s.d.RunStart(ctx, &RunStartParams{
		RunID: runID, Owner: s.instanceID, StartedAt: micro(startedAt), LeaseExpiresAt: s.lease(s.now()),
	})
	return failed(ctx, "run start", ok, err)
}

func (s *store) RunFinish(ctx context.Context, f RunFinal) (bool, error) {
	const op = "run finish"
	if !f.Record.Status.Terminal() {
		return false, invalid(op, fmt.Errorf("finish run %s: status %q is not terminal", f.Record.RunID, f.Record.Status))
	}
	now := s.now()
	rec := *f.Record
	if rec.FinishedAt == nil {
		rec.FinishedAt = &now
	}
	row, err := encodeRun(&rec)
	if err != nil {
		return false, invalid(op, err)
	}
	p := &RunFinishParams{Run: row, Owner: s.instanceID, Fenced: f.Owned, Lines: normalLines(f.Lines)}
	if len(f.Lines) > 0 {
		p.Trim = logTrim(f.Cap, now)
	}
	for _, w := range f.Outputs {
		out, err := s.localOutput(w, now)
		if err != nil {
			return false, invalid(op, err)
		}
		p.Outputs = append(p.Outputs, out)
	}
	ok, err := s.d.RunFinish(ctx, p)
	return failed(ctx, op, ok, err)
}

func (s *store) RunGet(ctx context.Context, runID string) (*RunRecord, error) {
	const op = "run get"
	row, err := s.d.RunGet(ctx, runID)
	if errors.Is(err, ErrNotFound) {
		return nil, invalid(op, fmt.Errorf("run %s: %w", runID, ErrNotFound))
	}
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	rec, err := decodeRun(row)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	return &rec, nil
}

// RunList reads one row past the page, to know whether another follows. An
// empty page below a cursor is where a cursor naming no run shows: only
// then is it looked up.
func (s *store) RunList(ctx context.Context, f ListFilter) (ListPage, error) {
	const op = "run list"
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	rows, err := s.d.RunList(ctx, &RunListParams{
		Statuses: f.Statuses, Name: f.Name, Template: f.Template, Since: microPtr(f.Since), Until: microPtr(f.Until),
		Cursor: f.Cursor, Limit: limit + 1,
	})
	if err != nil {
		return ListPage{}, fail(ctx, op, err)
	}
	if len(rows) == 0 && f.Cursor != "" {
		if _, err := s.d.RunStatus(ctx, f.Cursor); errors.Is(err, ErrNotFound) {
			return ListPage{}, invalid(op, fmt.Errorf("cursor %q: %w", f.Cursor, ErrUnknownCursor))
		} else if err != nil {
			return ListPage{}, fail(ctx, op, err)
		}
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return ListPage{}, fail(ctx, op, err)
	}
	page := ListPage{Runs: runs}
	if more {
		last := runs[len(runs)-1].RunID
		page.NextCursor = &last
	}
	return page, nil
}

// RunDelete deletes in one driver call fenced on a terminal status; only
// when that deletes nothing does the status tell not-found from
// still-running.
func (s *store) RunDelete(ctx context.Context, runID string) (DeleteOutcome, error) {
	const op = "run delete"
	deleted, err := s.d.RunDelete(ctx, runID)
	if err != nil {
		return 0, fail(ctx, op, err)
	}
	if deleted {
		return Deleted, nil
	}
	switch _, err := s.d.RunStatus(ctx, runID); {
	case errors.Is(err, ErrNotFound):
		return DeleteNotFound, nil
	case err != nil:
		return 0, fail(ctx, op, err)
	}
	return DeleteStillRunning, nil
}

func (s *store) RunRenewLeases(ctx context.Context) ([]string, error) {
	ids, err := s.d.RunRenewLeases(ctx, &LeaseParams{Owner: s.instanceID, LeaseExpiresAt: s.lease(s.now())})
	if err != nil {
		return nil, fail(ctx, "run renew leases", err)
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *store) RunFailLapsed(ctx context.Context) (int, error) {
	n, err := s.d.RunFailLapsed(ctx, &RunFailParams{Now: s.now(), Error: lapsedError})
	return failed(ctx, "run fail lapsed", n, err)
}

func (s *store) RunFailUnfinished(ctx context.Context, errMsg string) ([]string, error) {
	ids, err := s.d.RunFailUnfinished(ctx, &RunFailParams{Now: s.now(), Error: errMsg})
	if err != nil {
		return nil, fail(ctx, "run fail unfinished", err)
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *store) RunCancelPending(ctx context.Context, runID string) (bool, error) {
	ok, err := s.d.RunCancelPending(ctx, &RunCancelPendingParams{RunID: runID, Now: s.now()})
	return failed(ctx, "run cancel pending", ok, err)
}

func (s *store) RunRequestCancel(ctx context.Context, runID string) (bool, error) {
	ok, err := s.d.RunRequestCancel(ctx, &RunRequestCancelParams{RunID: runID, Now: s.now(), ShardError: shardNotStartedError})
	return failed(ctx, "run request cancel", ok, err)
}
