package db

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

func (s *store) RunShard(ctx context.Context, runID string, shards []ShardInsert) (bool, error) {
	rows := make([]ShardInsert, len(shards))
	for i, sh := range shards {
		if len(sh.Descriptor) == 0 {
			sh.Descriptor = json.RawMessage("null")
		}
		rows[i] = sh
	}
	ok, err := s.d.RunShard(ctx, &RunShardParams{
		RunID: runID, Owner: s.instanceID, Now: s.now(), Shards: rows, CancelledError: shardNotStartedError,
	})
	return failed(ctx, "run shard", ok, err)
}

func (s *store) RunFinalizeShardedParent(ctx context.Context, runID string, status RunStatus, finishedAt time.Time, errMsg *string) (bool, error) {
	const op = "run finalize sharded parent"
	if !status.Terminal() {
		return false, invalid(op, fmt.Errorf("finalize sharded run %s: status %q is not terminal", runID, status))
	}
	ok, err := s.d.RunFinalizeShardedParent(ctx, &RunFinalizeShardedParentParams{
		RunID: runID, Status: status, FinishedAt: micro(finishedAt), Error: errMsg,
	})
	return failed(ctx, op, ok, err)
}

func (s *store) ShardClaim(ctx context.Context, limit int) ([]ClaimedShard, error) {
	const op = "shard claim"
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.d.ShardClaim(ctx, &ShardClaimParams{Owner: s.instanceID, LeaseExpiresAt: s.lease(s.now()), Limit: limit})
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	slices.SortFunc(rows, func(a, b ShardClaimRow) int {
		return cmp.Or(largestFirst(a.SizeEstimate, b.SizeEstimate), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ShardID, b.ShardID))
	})
	out := make([]ClaimedShard, len(rows))
	for i, r := range rows {
		run, err := decodeRun(r.Run)
		if err != nil {
			return nil, fail(ctx, op, err)
		}
		out[i] = ClaimedShard{RunID: r.RunID, ShardID: r.ShardID, Descriptor: json.RawMessage(r.Descriptor), Attempt: r.Attempt, Run: run}
	}
	return out, nil
}

// largestFirst orders size estimates largest first, unknown last.
func largestFirst(a, b *int64) int {
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

func (s *store) ShardRenewLeases(ctx context.Context) ([]ShardKey, error) {
	keys, err := s.d.ShardRenewLeases(ctx, &LeaseParams{Owner: s.instanceID, LeaseExpiresAt: s.lease(s.now())})
	if err != nil {
		return nil, fail(ctx, "shard renew leases", err)
	}
	slices.SortFunc(keys, func(a, b ShardKey) int {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ShardID, b.ShardID))
	})
	return keys, nil
}

func (s *store) ShardRequeueLapsed(ctx context.Context, maxAttempts int) (ReclaimReport, error) {
	rep, err := s.d.ShardRequeueLapsed(ctx, s.requeue("shard", maxAttempts))
	return failed(ctx, "shard requeue lapsed", rep, err)
}

func (s *store) ShardRelease(ctx context.Context, runID, shardID string) (bool, error) {
	ok, err := s.d.ShardRelease(ctx, &ShardReleaseParams{RunID: runID, ShardID: shardID, Owner: s.instanceID})
	return failed(ctx, "shard release", ok, err)
}

func (s *store) ShardFinalize(ctx context.Context, runID, shardID string, res ShardResult) (bool, error) {
	const op = "shard finalize"
	if !res.Status.Terminal() {
		return false, invalid(op, fmt.Errorf("finalize shard %s/%s: status %q is not terminal", runID, shardID, res.Status))
	}
	ok, err := s.d.ShardFinalize(ctx, &ShardFinalizeParams{RunID: runID, ShardID: shardID, Owner: s.instanceID, Result: res, Now: s.now()})
	return failed(ctx, op, ok, err)
}

func (s *store) ShardProgress(ctx context.Context, runID string) (ShardProgress, error) {
	p, err := s.d.ShardProgress(ctx, runID)
	return failed(ctx, "shard progress", p, err)
}

func (s *store) ShardList(ctx context.Context, runID string) ([]ShardRecord, error) {
	shards, err := s.d.ShardList(ctx, runID)
	return failed(ctx, "shard list", shards, err)
}

func (s *store) ShardProgressInFlight(ctx context.Context) (ShardProgress, error) {
	p, err := s.d.ShardProgressInFlight(ctx)
	return failed(ctx, "shard progress in flight", p, err)
}

func (s *store) ShardPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.d.ShardPendingCancellations(ctx, s.instanceID)
	return failed(ctx, "shard pending cancellations", ids, err)
}

// ShardFinalizeCompletedParents needs no transaction around its steps: a
// terminal shard never changes again, and the finalize of each parent is
// fenced on the run still being sharded with no shard left pending or
// running, so a shard added or requeued meanwhile only defers that parent
// to the next sweep.
func (s *store) ShardFinalizeCompletedParents(ctx context.Context) ([]string, error) {
	const op = "shard finalize completed parents"
	now := s.now()
	if _, err := s.d.ShardCancelStranded(ctx, &ShardCancelStrandedParams{Now: now, Error: shardStrandedError}); err != nil {
		return nil, fail(ctx, op, err)
	}
	parents, err := s.d.ShardCompletedParents(ctx)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	var done []string
	for _, p := range parents {
		status, msg := ShardProgress{Total: p.Total, Failed: p.Failed, Cancelled: p.Cancelled}.Outcome()
		won, err := s.d.RunFinalizeShardedParent(ctx, &RunFinalizeShardedParentParams{RunID: p.RunID, Status: status, FinishedAt: now, Error: msg})
		if err != nil {
			return nil, fail(ctx, op, err)
		}
		if won {
			done = append(done, p.RunID)
		}
	}
	slices.Sort(done)
	return done, nil
}

func (s *store) ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error) {
	docs, err := s.d.ShardLineages(ctx, runID)
	return failed(ctx, "shard lineages", docs, err)
}
