package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// ShardInsert inserts the shards of runID in one statement, keeping those
// already present.
func (s *Store) ShardInsert(ctx context.Context, runID string, shards []db.ShardInsert) (int, error) {
	const op = "shard insert"
	if len(shards) == 0 {
		return 0, nil
	}
	b, err := encodeShards(runID, shards)
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	params := dbsqlc.ShardInsertParams{RunID: runID, Shards: b}
	n, err := writeValue(ctx, s, op, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.ShardInsert(ctx, params)
	})
	return int(n), err
}

// encodeShards is the JSON array of shards ShardInsert takes.
func encodeShards(runID string, shards []db.ShardInsert) (string, error) {
	type shard struct {
		ShardID      string          `json:"shard_id"`
		Descriptor   json.RawMessage `json:"descriptor"`
		SizeEstimate *int64          `json:"size_estimate"`
	}
	rows := make([]shard, len(shards))
	for i, sh := range shards {
		rows[i] = shard{ShardID: sh.ShardID, Descriptor: sh.Descriptor, SizeEstimate: sh.SizeEstimate}
		if len(sh.Descriptor) == 0 {
			rows[i].Descriptor = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("encode shards of run %s: %w", runID, err)
	}
	return string(b), nil
}

// ShardClaim claims up to limit pending shards in one statement, then reads
// their parent runs in the same transaction.
func (s *Store) ShardClaim(ctx context.Context, limit int) ([]db.ClaimedShard, error) {
	if limit <= 0 {
		return nil, nil
	}
	var claimed []db.ClaimedShard
	err := s.write(ctx, "shard claim", func(ctx context.Context, q *dbsqlc.Queries) error {
		rows, err := q.ShardClaim(ctx, dbsqlc.ShardClaimParams{
			Owner: s.owner, LeaseExpiresAt: s.lease(now()), RowLimit: int64(limit),
		})
		if err != nil || len(rows) == 0 {
			return err
		}
		// RETURNING yields rows in no promised order.
		slices.SortFunc(rows, func(a, b dbsqlc.ShardClaimRow) int {
			return cmp.Or(compareSizeDesc(a.SizeEstimate, b.SizeEstimate), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ShardID, b.ShardID))
		})
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.RunID)
		}
		idsJSON, err := json.Marshal(slices.Compact(slices.Sorted(slices.Values(ids))))
		if err != nil {
			return err
		}
		parents, err := q.RunGetMany(ctx, string(idsJSON))
		if err != nil {
			return err
		}
		runs := make(map[string]db.RunRecord, len(parents))
		for _, p := range parents {
			rec, err := decodeRun(p)
			if err != nil {
				return err
			}
			runs[rec.RunID] = rec
		}
		claimed = make([]db.ClaimedShard, len(rows))
		for i, r := range rows {
			claimed[i] = db.ClaimedShard{
				RunID:      r.RunID,
				ShardID:    r.ShardID,
				Descriptor: json.RawMessage(r.Descriptor),
				Attempt:    int(r.Attempt),
				Run:        runs[r.RunID],
			}
		}
		return nil
	})
	return claimed, err
}

// compareSizeDesc orders size estimates largest first, unknown last.
func compareSizeDesc(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*b, *a)
}

// ShardRenewLeases extends the leases of this instance's running shards.
func (s *Store) ShardRenewLeases(ctx context.Context) (int, error) {
	params := dbsqlc.ShardRenewLeasesParams{LeaseExpiresAt: s.lease(now()), Owner: s.owner}
	n, err := writeValue(ctx, s, "shard renew leases", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.ShardRenewLeases(ctx, params)
	})
	return int(n), err
}

// ShardReclaimOrphans fails the expired running shards that reached the
// attempt cap, then requeues the rest, in one transaction.
func (s *Store) ShardReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := s.write(ctx, "shard reclaim orphans", func(ctx context.Context, q *dbsqlc.Queries) error {
		t := ptr(micros(now()))
		poisoned, err := q.ShardReclaimPoison(ctx, dbsqlc.ShardReclaimPoisonParams{
			Now: t, ErrorFormat: db.PoisonErrorFormat("shard", maxAttempts), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		requeued, err := q.ShardReclaimRequeue(ctx, dbsqlc.ShardReclaimRequeueParams{Now: t, MaxAttempts: int64(maxAttempts)})
		if err != nil {
			return err
		}
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return nil
	})
	return rep, err
}

// ShardFinalize writes a shard's terminal result while this instance owns it.
func (s *Store) ShardFinalize(ctx context.Context, runID, shardID string, res db.ShardResult) (bool, error) {
	const op = "shard finalize"
	if !res.Status.Terminal() {
		return false, permanent(op, fmt.Errorf("finalize shard %s/%s: status %q is not terminal", runID, shardID, res.Status))
	}
	params := dbsqlc.ShardFinalizeParams{
		RunID:          runID,
		ShardID:        shardID,
		Owner:          s.owner,
		Status:         string(res.Status),
		RecordsWritten: res.RecordsWritten,
		Error:          res.Error,
		Now:            ptr(micros(now())),
	}
	n, err := writeValue(ctx, s, op, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.ShardFinalize(ctx, params)
	})
	return n == 1, err
}

// ShardProgress counts the shards of runID by state.
func (s *Store) ShardProgress(ctx context.Context, runID string) (db.ShardProgress, error) {
	p, err := s.rq.ShardProgress(ctx, runID)
	if err != nil {
		return db.ShardProgress{}, wrap(ctx, "shard progress", err)
	}
	return shardProgress(p), nil
}

// shardProgress converts a shard count row; every count query returns this
// shape.
func shardProgress(r dbsqlc.ShardProgressRow) db.ShardProgress {
	return db.ShardProgress{
		Total:          int(r.Total),
		Pending:        int(r.Pending),
		Running:        int(r.Running),
		Completed:      int(r.Completed),
		Failed:         int(r.Failed),
		Cancelled:      int(r.Cancelled),
		RecordsWritten: r.RecordsWritten,
	}
}

// ShardProgressInFlight counts the shards of every run still sharded by
// state.
func (s *Store) ShardProgressInFlight(ctx context.Context) (db.ShardProgress, error) {
	p, err := s.rq.ShardProgressInFlight(ctx)
	if err != nil {
		return db.ShardProgress{}, wrap(ctx, "shard progress in flight", err)
	}
	return shardProgress(dbsqlc.ShardProgressRow(p)), nil
}

// ShardPendingCancellations lists the runs with a cancel request for which
// this instance runs a shard.
func (s *Store) ShardPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.rq.ShardPendingCancellations(ctx, s.owner)
	return ids, wrap(ctx, "shard pending cancellations", err)
}

// ShardFinalizeCompletedParents finalizes the sharded runs whose shards are
// all terminal. It runs in one write transaction, so no shard changes between
// the count and the status-fenced finalize of each parent.
func (s *Store) ShardFinalizeCompletedParents(ctx context.Context) ([]string, error) {
	var done []string
	err := s.write(ctx, "shard finalize completed parents", func(ctx context.Context, q *dbsqlc.Queries) error {
		if _, err := q.ShardCancelStranded(ctx, ptr(micros(now()))); err != nil {
			return err
		}
		parents, err := q.ShardCompletedParents(ctx)
		if err != nil {
			return err
		}
		t := now()
		for _, p := range parents {
			status, errMsg := db.StatusCompleted, (*string)(nil)
			switch {
			case p.Failed > 0:
				status = db.StatusFailed
				errMsg = ptr(fmt.Sprintf("%d/%d shard(s) failed", p.Failed, p.Total))
			case p.Cancelled > 0:
				status = db.StatusCancelled
			}
			n, err := q.RunFinalizeShardedParent(ctx, shardedParentParams(p.RunID, status, t, errMsg))
			if err != nil {
				return err
			}
			if n == 1 {
				done = append(done, p.RunID)
			}
		}
		return nil
	})
	return done, err
}
