package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// shardDoc is one shard in the JSON array ShardInsert sends in one parameter.
type shardDoc struct {
	ShardID      string          `json:"shard_id"`
	Descriptor   json.RawMessage `json:"descriptor"`
	SizeEstimate *int64          `json:"size_estimate"`
}

// ShardInsert inserts a run's shard set in one statement, keeping shards that
// already exist.
func (s *Store) ShardInsert(ctx context.Context, runID string, shards []db.ShardInsert) (int, error) {
	const op = "shard insert"
	if len(shards) == 0 {
		return 0, nil
	}
	payload, err := encodeShards(runID, shards)
	if err != nil {
		return 0, fail(op, err)
	}
	n, err := s.q.ShardInsert(ctx, dbsqlc.ShardInsertParams{RunID: runID, Shards: payload})
	return int(n), fail(op, err)
}

// encodeShards is the JSON array of shards the insert statements take.
func encodeShards(runID string, shards []db.ShardInsert) ([]byte, error) {
	docs := make([]shardDoc, len(shards))
	for i, sh := range shards {
		desc := sh.Descriptor
		if desc == nil {
			desc = json.RawMessage("null")
		}
		docs[i] = shardDoc{ShardID: sh.ShardID, Descriptor: desc, SizeEstimate: sh.SizeEstimate}
	}
	payload, err := json.Marshal(docs)
	if err != nil {
		return nil, fmt.Errorf("encode shards of run %s: %w", runID, err)
	}
	return payload, nil
}

// ShardClaim claims up to limit pending shards, largest first.
func (s *Store) ShardClaim(ctx context.Context, limit int) ([]db.ClaimedShard, error) {
	const op = "shard claim"
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.q.ShardClaim(ctx, dbsqlc.ShardClaimParams{
		Owner:          s.instanceID,
		LeaseExpiresAt: s.lease(),
		ClaimLimit:     int32(limit),
	})
	if err != nil {
		return nil, fail(op, err)
	}
	// UPDATE … RETURNING has no order of its own.
	slices.SortFunc(rows, func(a, b dbsqlc.ShardClaimRow) int {
		return cmp.Or(compareSize(a.SizeEstimate, b.SizeEstimate), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ShardID, b.ShardID))
	})
	out := make([]db.ClaimedShard, len(rows))
	for i, r := range rows {
		run, err := decodeRun(dbsqlc.FaucetRun{
			RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: r.Status,
			SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
			IdempotencyKey: r.IdempotencyKey, Attempt: r.RunAttempt, RecordsWritten: r.RecordsWritten,
			Error: r.Error, Record: r.Record,
		})
		if err != nil {
			return nil, fail(op, err)
		}
		out[i] = db.ClaimedShard{RunID: r.RunID, ShardID: r.ShardID, Descriptor: r.Descriptor, Attempt: int(r.Attempt), Run: run}
	}
	return out, nil
}

// compareSize orders size estimates largest first, unknown last.
func compareSize(a, b *int64) int {
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

// ShardRenewLeases extends this instance's leases on its running shards.
func (s *Store) ShardRenewLeases(ctx context.Context) (int, error) {
	n, err := s.q.ShardRenewLeases(ctx, dbsqlc.ShardRenewLeasesParams{LeaseExpiresAt: s.lease(), Owner: s.instanceID})
	return int(n), fail("shard renew leases", err)
}

// ShardReclaimOrphans requeues or poisons running shards whose lease lapsed.
func (s *Store) ShardReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	format := db.PoisonErrorFormat("shard", maxAttempts)
	return s.reclaim(ctx, "shard reclaim orphans",
		func(q *dbsqlc.Queries, t time.Time) (int64, error) {
			return q.ShardReclaimPoison(ctx, dbsqlc.ShardReclaimPoisonParams{Now: t, ErrorFormat: format, MaxAttempts: int32(maxAttempts)})
		},
		func(q *dbsqlc.Queries, t time.Time) (int64, error) {
			return q.ShardReclaimRequeue(ctx, dbsqlc.ShardReclaimRequeueParams{Now: t, MaxAttempts: int32(maxAttempts)})
		})
}

// ShardFinalize writes a shard's result while this instance owns it.
func (s *Store) ShardFinalize(ctx context.Context, runID, shardID string, res db.ShardResult) (bool, error) {
	const op = "shard finalize"
	if !res.Status.Terminal() {
		return false, permanent(op, fmt.Errorf("finalize shard %s/%s: status %q is not terminal", runID, shardID, res.Status))
	}
	n, err := s.q.ShardFinalize(ctx, dbsqlc.ShardFinalizeParams{
		Status:         string(res.Status),
		RecordsWritten: res.RecordsWritten,
		Error:          res.Error,
		Now:            now(),
		RunID:          runID,
		ShardID:        shardID,
		Owner:          s.instanceID,
	})
	if err != nil {
		return false, fail(op, err)
	}
	return n == 1, nil
}

// ShardProgress counts a run's shards by state.
func (s *Store) ShardProgress(ctx context.Context, runID string) (db.ShardProgress, error) {
	r, err := s.q.ShardProgress(ctx, runID)
	if err != nil {
		return db.ShardProgress{}, fail("shard progress", err)
	}
	return shardProgress(r), nil
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
	r, err := s.q.ShardProgressInFlight(ctx)
	if err != nil {
		return db.ShardProgress{}, fail("shard progress in flight", err)
	}
	return shardProgress(dbsqlc.ShardProgressRow(r)), nil
}

// ShardPendingCancellations lists runs whose cancel request reaches a shard
// this instance runs.
func (s *Store) ShardPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.q.ShardPendingCancellations(ctx, s.instanceID)
	return ids, fail("shard pending cancellations", err)
}

// ShardFinalizeCompletedParents finalizes sharded runs whose shards are all
// terminal.
func (s *Store) ShardFinalizeCompletedParents(ctx context.Context) ([]string, error) {
	if _, err := s.q.ShardCancelStranded(ctx, now()); err != nil {
		return nil, fail("shard cancel stranded", err)
	}
	ids, err := s.q.ShardFinalizeCompletedParents(ctx, now())
	if err != nil {
		return nil, fail("shard finalize completed parents", err)
	}
	slices.Sort(ids)
	return ids, nil
}
