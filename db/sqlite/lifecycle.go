package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// orphanError is the error of a run failed by RunRecoverOrphans.
const orphanError = "the instance that owned this run stopped renewing its lease before the run finished"

// RunRenewLeases extends the leases of this instance's non-terminal runs.
func (s *Store) RunRenewLeases(ctx context.Context) (int, error) {
	params := dbsqlc.RunRenewLeasesParams{LeaseExpiresAt: s.lease(now()), Owner: s.owner}
	n, err := writeValue(ctx, s, "run renew leases", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunRenewLeases(ctx, params)
	})
	return int(n), err
}

// RunRecoverOrphans fails queued and running runs whose lease expired.
func (s *Store) RunRecoverOrphans(ctx context.Context) (int, error) {
	t := now()
	msg := orphanError
	params := dbsqlc.RunRecoverOrphansParams{Now: ptr(micros(t)), NowText: jsonTime(t), Error: &msg}
	n, err := writeValue(ctx, s, "run recover orphans", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunRecoverOrphans(ctx, params)
	})
	return int(n), err
}

// RunClaimPending claims up to limit of the oldest pending runs.
func (s *Store) RunClaimPending(ctx context.Context, limit int) ([]db.RunRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	t := now()
	params := dbsqlc.RunClaimPendingParams{Now: ptr(micros(t)), NowText: jsonTime(t), Owner: s.owner, LeaseExpiresAt: s.lease(t), RowLimit: int64(limit)}
	rows, err := writeValue(ctx, s, "run claim pending", func(ctx context.Context, q *dbsqlc.Queries) ([]dbsqlc.FaucetRun, error) {
		return q.RunClaimPending(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return nil, wrap(ctx, "run claim pending", err)
	}
	// RETURNING yields rows in no promised order.
	slices.SortFunc(runs, func(a, b db.RunRecord) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.RunID, b.RunID))
	})
	return runs, nil
}

// RunReclaimOrphans fails the expired running runs that reached the attempt
// cap, then requeues the rest, in one transaction.
func (s *Store) RunReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := s.write(ctx, "run reclaim orphans", func(ctx context.Context, q *dbsqlc.Queries) error {
		t := now()
		poisoned, err := q.RunReclaimPoison(ctx, dbsqlc.RunReclaimPoisonParams{
			Now: ptr(micros(t)), NowText: jsonTime(t), ErrorFormat: db.PoisonErrorFormat("run", maxAttempts), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		requeued, err := q.RunReclaimRequeue(ctx, dbsqlc.RunReclaimRequeueParams{
			Now: ptr(micros(t)), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return nil
	})
	return rep, err
}

// RunFinalizeOwned writes rec while this instance owns the run and it is not
// yet terminal.
func (s *Store) RunFinalizeOwned(ctx context.Context, rec *db.RunRecord) (bool, error) {
	p, err := s.finalizeParams(rec)
	if err != nil {
		return false, wrap(ctx, "run finalize owned", err)
	}
	n, err := writeValue(ctx, s, "run finalize owned", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunFinalizeOwned(ctx, p)
	})
	return n == 1, err
}

// finalizeParams is rec as RunFinalizeOwned's parameters, FinishedAt stamped
// when a terminal record lacks it.
func (s *Store) finalizeParams(rec *db.RunRecord) (dbsqlc.RunFinalizeOwnedParams, error) {
	r := normalize(rec)
	if r.Status.Terminal() && r.FinishedAt == nil {
		t := now()
		r.FinishedAt = &t
	}
	cols, err := encodeRun(&r)
	if err != nil {
		return dbsqlc.RunFinalizeOwnedParams{}, err
	}
	return dbsqlc.RunFinalizeOwnedParams{
		RunID:          r.RunID,
		Owner:          s.owner,
		Name:           r.Name,
		Labels:         cols.labels,
		Status:         string(r.Status),
		SubmittedAt:    micros(r.SubmittedAt),
		StartedAt:      microsPtr(r.StartedAt),
		FinishedAt:     microsPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey,
		Attempt:        int64(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         cols.record,
	}, nil
}

// RunFinalizeShardedParent moves a sharded run to a terminal status.
func (s *Store) RunFinalizeShardedParent(ctx context.Context, runID string, status db.RunStatus, finishedAt time.Time, errMsg *string) (bool, error) {
	if !status.Terminal() {
		return false, permanent("run finalize sharded parent", fmt.Errorf("finalize sharded run %s: status %q is not terminal", runID, status))
	}
	params := shardedParentParams(runID, status, finishedAt, errMsg)
	n, err := writeValue(ctx, s, "run finalize sharded parent", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunFinalizeShardedParent(ctx, params)
	})
	return n == 1, err
}

func shardedParentParams(runID string, status db.RunStatus, finishedAt time.Time, errMsg *string) dbsqlc.RunFinalizeShardedParentParams {
	t := fromMicros(micros(finishedAt))
	return dbsqlc.RunFinalizeShardedParentParams{
		RunID:          runID,
		Status:         string(status),
		FinishedAt:     ptr(micros(t)),
		FinishedAtText: jsonTime(t),
		Error:          errMsg,
	}
}

// RunCancelPending cancels a run that is still pending.
func (s *Store) RunCancelPending(ctx context.Context, runID string) (bool, error) {
	t := now()
	params := dbsqlc.RunCancelPendingParams{RunID: runID, Now: ptr(micros(t)), NowText: jsonTime(t)}
	n, err := writeValue(ctx, s, "run cancel pending", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunCancelPending(ctx, params)
	})
	return n == 1, err
}

// RunRequestCancel flags a running or sharded run for cancellation and, for a
// sharded run, cancels its shards that have not started.
func (s *Store) RunRequestCancel(ctx context.Context, runID string) (bool, error) {
	var flagged bool
	err := s.write(ctx, "run request cancel", func(ctx context.Context, q *dbsqlc.Queries) error {
		t := ptr(micros(now()))
		status, err := q.RunRequestCancel(ctx, dbsqlc.RunRequestCancelParams{RunID: runID, Now: t})
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		flagged = true
		if db.RunStatus(status) == db.StatusSharded {
			_, err = q.ShardCancelPending(ctx, dbsqlc.ShardCancelPendingParams{RunID: runID, Now: t})
		}
		return err
	})
	return flagged, err
}

// RunPendingCancellations lists this instance's running runs with a cancel
// request.
func (s *Store) RunPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.rq.RunPendingCancellations(ctx, s.owner)
	return ids, wrap(ctx, "run pending cancellations", err)
}
