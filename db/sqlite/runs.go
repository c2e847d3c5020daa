package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// RunUpsert inserts or replaces rec, owned by this instance with a fresh lease.
func (s *Store) RunUpsert(ctx context.Context, rec *db.RunRecord) error {
	p, err := s.upsertParams(rec)
	if err != nil {
		return wrap(ctx, "run upsert", err)
	}
	return s.writeOne(ctx, "run upsert", func(ctx context.Context, q *dbsqlc.Queries) error {
		return q.RunUpsert(ctx, p)
	})
}

// upsertParams is rec as RunUpsert's parameters.
func (s *Store) upsertParams(rec *db.RunRecord) (dbsqlc.RunUpsertParams, error) {
	r := normalize(rec)
	cols, err := encodeRun(&r)
	if err != nil {
		return dbsqlc.RunUpsertParams{}, err
	}
	return dbsqlc.RunUpsertParams{
		RunID:          r.RunID,
		Name:           r.Name,
		Labels:         cols.labels,
		Status:         string(r.Status),
		SubmittedAt:    micros(r.SubmittedAt),
		StartedAt:      microsPtr(r.StartedAt),
		FinishedAt:     microsPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey,
		Owner:          s.owner,
		LeaseExpiresAt: s.lease(now()),
		Attempt:        int64(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         cols.record,
	}, nil
}

// RunGet returns one run, or an error wrapping db.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, runID string) (*db.RunRecord, error) {
	row, err := s.rq.RunGet(ctx, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, permanent("run get", fmt.Errorf("run %s: %w", runID, db.ErrNotFound))
	}
	if err != nil {
		return nil, wrap(ctx, "run get", err)
	}
	rec, err := decodeRun(row)
	if err != nil {
		return nil, wrap(ctx, "run get", err)
	}
	return &rec, nil
}

// RunList returns one page of runs, newest first, in one statement: it reads
// one row past the page to know whether another page follows.
func (s *Store) RunList(ctx context.Context, f db.ListFilter) (db.ListPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultListLimit
	}
	var statuses *string
	if len(f.Statuses) > 0 {
		b, err := json.Marshal(f.Statuses)
		if err != nil {
			return db.ListPage{}, wrap(ctx, "run list", err)
		}
		v := string(b)
		statuses = &v
	}
	p := dbsqlc.RunListParams{
		Statuses: statuses,
		Name:     f.Name,
		Since:    microsPtr(f.Since),
		Until:    microsPtr(f.Until),
		Cursor:   f.Cursor,
		RowLimit: int64(limit) + 1,
	}
	var rows []dbsqlc.FaucetRun
	var err error
	if statuses != nil && !slices.ContainsFunc(f.Statuses, db.RunStatus.Terminal) {
		rows, err = s.rq.RunListActive(ctx, dbsqlc.RunListActiveParams{
			Statuses: *statuses, Name: p.Name, Since: p.Since, Until: p.Until, Cursor: p.Cursor, RowLimit: p.RowLimit,
		})
	} else {
		rows, err = s.rq.RunList(ctx, p)
	}
	if err != nil {
		return db.ListPage{}, wrap(ctx, "run list", err)
	}
	if len(rows) == 0 && f.Cursor != "" {
		// The page query selects nothing for a cursor that names no run;
		// whether the cursor is the last run or no run at all only matters
		// here.
		if _, err := s.rq.RunStatus(ctx, f.Cursor); errors.Is(err, sql.ErrNoRows) {
			return db.ListPage{}, permanent("run list", fmt.Errorf("cursor %q: %w", f.Cursor, db.ErrUnknownCursor))
		} else if err != nil {
			return db.ListPage{}, wrap(ctx, "run list", err)
		}
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return db.ListPage{}, wrap(ctx, "run list", err)
	}
	page := db.ListPage{Runs: runs}
	if more {
		last := runs[len(runs)-1].RunID
		page.NextCursor = &last
	}
	return page, nil
}

// RunDelete deletes a terminal run with its claims, shards and logs in one
// transaction. The delete itself is fenced on a terminal status; only when it
// deletes nothing does the status tell not-found from still-running.
func (s *Store) RunDelete(ctx context.Context, runID string) (db.DeleteOutcome, error) {
	var outcome db.DeleteOutcome
	err := s.write(ctx, "run delete", func(ctx context.Context, q *dbsqlc.Queries) error {
		n, err := q.RunDelete(ctx, runID)
		if err != nil {
			return err
		}
		if n == 0 {
			_, err := q.RunStatus(ctx, runID)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				outcome = db.DeleteNotFound
				return nil
			case err != nil:
				return err
			}
			outcome = db.DeleteStillRunning
			return nil
		}
		for _, del := range []func(context.Context, string) (int64, error){
			q.IdempotencyRelease, q.ShardDeleteByRun, q.RunLogDeleteByRun, q.RunLogDeleteTruncationByRun,
		} {
			if _, err := del(ctx, runID); err != nil {
				return err
			}
		}
		outcome = db.Deleted
		return nil
	})
	return outcome, err
}
