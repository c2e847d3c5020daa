package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// orphanError is the error recovery writes into a run whose owner vanished.
const orphanError = "the instance that owned this run stopped renewing its lease before the run finished"

// RunRenewLeases extends this instance's leases on its non-terminal runs.
func (s *Store) RunRenewLeases(ctx context.Context) (int, error) {
	n, err := s.q.RunRenewLeases(ctx, dbsqlc.RunRenewLeasesParams{LeaseExpiresAt: s.lease(), Owner: s.instanceID})
	return int(n), fail("run renew leases", err)
}

// RunRecoverOrphans fails queued and running runs whose lease lapsed.
func (s *Store) RunRecoverOrphans(ctx context.Context) (int, error) {
	n, err := s.q.RunRecoverOrphans(ctx, dbsqlc.RunRecoverOrphansParams{Now: now(), Error: orphanError})
	return int(n), fail("run recover orphans", err)
}

// RunClaimPending claims up to limit of the oldest pending runs.
func (s *Store) RunClaimPending(ctx context.Context, limit int) ([]db.RunRecord, error) {
	const op = "run claim pending"
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.q.RunClaimPending(ctx, dbsqlc.RunClaimPendingParams{
		Now:            now(),
		Owner:          s.instanceID,
		LeaseExpiresAt: s.lease(),
		ClaimLimit:     int32(limit),
	})
	if err != nil {
		return nil, fail(op, err)
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return nil, fail(op, err)
	}
	// UPDATE … RETURNING has no order of its own.
	slices.SortFunc(runs, func(a, b db.RunRecord) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.RunID, b.RunID))
	})
	return runs, nil
}

// RunReclaimOrphans requeues or poisons running runs whose lease lapsed.
func (s *Store) RunReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	format := db.PoisonErrorFormat("run", maxAttempts)
	return s.reclaim(ctx, "run reclaim orphans",
		func(q *dbsqlc.Queries, t time.Time) (int64, error) {
			return q.RunReclaimPoison(ctx, dbsqlc.RunReclaimPoisonParams{Now: t, ErrorFormat: format, MaxAttempts: int32(maxAttempts)})
		},
		func(q *dbsqlc.Queries, t time.Time) (int64, error) {
			return q.RunReclaimRequeue(ctx, dbsqlc.RunReclaimRequeueParams{Now: t, MaxAttempts: int32(maxAttempts)})
		})
}

// reclaim runs a poison and a requeue statement in one transaction at one
// instant. They select disjoint rows (attempt at or past the cap, below it),
// and each is fenced on the lapsed lease, so concurrent reclaimers count
// every row once.
func (s *Store) reclaim(ctx context.Context, op string, poison, requeue func(*dbsqlc.Queries, time.Time) (int64, error)) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	t := now()
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		poisoned, err := poison(q, t)
		if err != nil {
			return err
		}
		requeued, err := requeue(q, t)
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return err
	})
	if err != nil {
		return db.ReclaimReport{}, fail(op, err)
	}
	return rep, nil
}

// RunFinalizeOwned writes rec while this instance owns the run and it is not
// yet terminal.
func (s *Store) RunFinalizeOwned(ctx context.Context, rec *db.RunRecord) (bool, error) {
	const op = "run finalize owned"
	stamped := *rec
	if stamped.Status.Terminal() && stamped.FinishedAt == nil {
		t := now()
		stamped.FinishedAt = &t
	}
	e, err := encodeRun(&stamped)
	if err != nil {
		return false, fail(op, err)
	}
	r := &e.rec
	n, err := s.q.RunFinalizeOwned(ctx, dbsqlc.RunFinalizeOwnedParams{
		Name:           r.Name,
		Labels:         e.labels,
		Status:         string(r.Status),
		SubmittedAt:    r.SubmittedAt,
		StartedAt:      r.StartedAt,
		FinishedAt:     r.FinishedAt,
		IdempotencyKey: r.IdempotencyKey,
		Attempt:        int32(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         e.record,
		RunID:          r.RunID,
		Owner:          s.instanceID,
	})
	if err != nil {
		return false, fail(op, err)
	}
	return n == 1, nil
}

// RunFinalizeShardedParent moves a sharded run to a terminal status.
func (s *Store) RunFinalizeShardedParent(ctx context.Context, runID string, status db.RunStatus, finishedAt time.Time, errMsg *string) (bool, error) {
	const op = "run finalize sharded parent"
	if !status.Terminal() {
		return false, permanent(op, fmt.Errorf("finalize sharded run %s: status %q is not terminal", runID, status))
	}
	n, err := s.q.RunFinalizeShardedParent(ctx, dbsqlc.RunFinalizeShardedParentParams{
		Status:     string(status),
		FinishedAt: micro(finishedAt),
		Error:      errMsg,
		RunID:      runID,
	})
	if err != nil {
		return false, fail(op, err)
	}
	return n == 1, nil
}

// RunCancelPending cancels a run that no instance has claimed yet.
func (s *Store) RunCancelPending(ctx context.Context, runID string) (bool, error) {
	n, err := s.q.RunCancelPending(ctx, dbsqlc.RunCancelPendingParams{Now: now(), RunID: runID})
	return n == 1, fail("run cancel pending", err)
}

// RunRequestCancel flags a running or sharded run for cancellation.
func (s *Store) RunRequestCancel(ctx context.Context, runID string) (bool, error) {
	n, err := s.q.RunRequestCancel(ctx, dbsqlc.RunRequestCancelParams{Now: now(), RunID: runID})
	return n == 1, fail("run request cancel", err)
}

// RunPendingCancellations lists this instance's running runs with a cancel
// request.
func (s *Store) RunPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.q.RunPendingCancellations(ctx, s.instanceID)
	return ids, fail("run pending cancellations", err)
}
